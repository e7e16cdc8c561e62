#include "store/event.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "util/err.h"
#include "util/timeutil.h"

int store_event_add_raw(store *st, const char *goal_id, const char *item_id,
                        const char *run_id, const char *type, const char *payload_json,
                        int64_t *seq_out)
{
    static const char sql[] = "INSERT INTO events(ts, goal_id, item_id, run_id, type, payload)"
                              " VALUES (?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, time_now_ms());
    store_bind_text(s, 2, goal_id);
    store_bind_text(s, 3, item_id);
    store_bind_text(s, 4, run_id);
    store_bind_text(s, 5, type);
    store_bind_text(s, 6, payload_json ? payload_json : "{}");
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(st, "event");
    else if (seq_out)
        *seq_out = sqlite3_last_insert_rowid(store_db(st));
    store_done(s);
    return rc;
}

int store_event_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                    const char *type, const cJSON *payload, int64_t *seq_out)
{
    char *text = NULL;
    int rc;

    if (payload) {
        text = cJSON_PrintUnformatted(payload);
        if (!text)
            abort();
    }
    rc = store_event_add_raw(st, goal_id, item_id, run_id, type, text, seq_out);
    cJSON_free(text);
    return rc;
}

int store_event_each(store *st, const char *goal_id, int64_t after_id, int limit,
                     int (*fn)(const struct store_event *ev, void *ctx), void *ctx)
{
    static const char sql_all[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, payload FROM events"
        " WHERE id > ? ORDER BY id LIMIT ?";
    static const char sql_goal[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, payload FROM events"
        " WHERE goal_id = ? AND id > ? ORDER BY id LIMIT ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, goal_id ? sql_goal : sql_all);
    int i = 1;

    if (rc)
        return rc;
    if (goal_id)
        store_bind_text(s, i++, goal_id);
    sqlite3_bind_int64(s, i++, after_id);
    sqlite3_bind_int64(s, i++, limit > 0 ? limit : -1);
    for (;;) {
        struct store_event ev;
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "events");
            break;
        }
        ev.id = sqlite3_column_int64(s, 0);
        ev.ts = sqlite3_column_int64(s, 1);
        ev.goal_id = (const char *)sqlite3_column_text(s, 2);
        ev.item_id = (const char *)sqlite3_column_text(s, 3);
        ev.run_id = (const char *)sqlite3_column_text(s, 4);
        ev.type = (const char *)sqlite3_column_text(s, 5);
        ev.payload = (const char *)sqlite3_column_text(s, 6);
        rc = fn(&ev, ctx);
        if (rc)
            break;
    }
    store_done(s);
    return rc;
}

int store_event_delete_before(store *st, int64_t cutoff_ms, int *deleted)
{
    static const char del_events[] = "DELETE FROM events WHERE ts < ?";
    sqlite3_stmt *s;
    int rc;

    *deleted = 0;
    if ((rc = store_prepare(st, &s, del_events)) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, cutoff_ms);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "retention");
    *deleted = sqlite3_changes(store_db(st));
    store_done(s);
    return rc;
}
