/*
 * escalation.c - the escalations and decisions tables (see escalation.h).
 */
#include "store/escalation.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

int store_decision_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *kind, const char *aspect, const char *severity, const char *note,
                       const struct cJSON *data)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *text = data ? cJSON_PrintUnformatted(data) : NULL;
    int rc = store_prepare(st, &s, sql);

    if (rc == 0) {
        store_bind_text(s, 1, goal_id);
        store_bind_text(s, 2, item_id);
        store_bind_text(s, 3, run_id);
        store_bind_text(s, 4, kind);
        store_bind_text(s, 5, aspect);
        store_bind_text(s, 6, severity);
        store_bind_text(s, 7, note);
        store_bind_text(s, 8, text ? text : "{}");
        sqlite3_bind_int64(s, 9, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "decision");
        store_done(s);
    }
    cJSON_free(text);
    return rc;
}

int store_decision_first_verification_baseline(store *st, const char *goal_id, char *out, size_t n)
{
    static const char q[] = "SELECT json_extract(data, '$.baseline') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'verification'"
                            " AND json_extract(data, '$.baseline') IS NOT NULL ORDER BY id LIMIT 1";
    sqlite3_stmt *s;
    int rc;

    out[0] = '\0';
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, n, "%s", sqlite3_column_text(s, 0));
    store_done(s);
    return 0;
}
