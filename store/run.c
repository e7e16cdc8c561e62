/*
 * run.c - the runs table (store/run.h).
 */
#include "store/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

static void col_id(char out[ID_SIZE], sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    snprintf(out, ID_SIZE, "%s", t ? (const char *)t : "");
}

int store_run_get_goal_item(store *st, const char *run_id, char goal_id[ID_SIZE],
                            char item_id[ID_SIZE])
{
    sqlite3_stmt *s;
    int rc;

    goal_id[0] = item_id[0] = '\0';
    if ((rc = store_prepare(st, &s, "SELECT goal_id, item_id FROM runs WHERE id = ?")) != 0)
        return rc;
    store_bind_text(s, 1, run_id);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW:
        col_id(goal_id, s, 0);
        col_id(item_id, s, 1);
        break;
    case SQLITE_DONE:
        rc = err_set(ERR_NOTFOUND, "no run %s", run_id);
        break;
    default:
        rc = store_err(st, "run");
    }
    store_done(s);
    return rc;
}

int store_run_set_model(store *st, const char *run_id, const char *model, const char *provider)
{
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, "UPDATE runs SET model = ?, provider = ? WHERE id = ?")) != 0)
        return rc;
    store_bind_text(s, 1, model);
    store_bind_text(s, 2, provider);
    store_bind_text(s, 3, run_id);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(st, "recording the run's model");
    store_done(s);
    return rc;
}

int store_run_add_usage(store *st, const char *run_id, int64_t tokens_in, int64_t tokens_cached,
                        int64_t tokens_out, double cost_usd, char goal_id_out[ID_SIZE])
{
    sqlite3_stmt *s;
    int rc, step;

    if (goal_id_out)
        goal_id_out[0] = '\0';
    if ((rc = store_prepare(st, &s,
                            "UPDATE runs SET tokens_in = tokens_in + ?, tokens_cached = "
                            "tokens_cached + ?, tokens_out = tokens_out + ?, cost_usd = "
                            "cost_usd + ? WHERE id = ? RETURNING goal_id")) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, tokens_in);
    sqlite3_bind_int64(s, 2, tokens_cached);
    sqlite3_bind_int64(s, 3, tokens_out);
    sqlite3_bind_double(s, 4, cost_usd);
    store_bind_text(s, 5, run_id);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW && goal_id_out)
        col_id(goal_id_out, s, 0);
    else if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = store_err(st, "recording run usage");
    while (step == SQLITE_ROW)
        step = sqlite3_step(s);
    store_done(s);
    return rc;
}

/* Copy column i of the current row into out (n bytes; "" when NULL). */
static void col_copy(char *out, size_t n, sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    snprintf(out, n, "%s", t ? (const char *)t : "");
}

int store_run_latest_running(store *st, const char *goal_id, struct store_run_running *out,
                             int *found)
{
    static const char q_run[] =
        "SELECT r.id, r.kind, ifnull(w.key, ''), ifnull(w.title, ''), r.started_at,"
        " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'turn.started')"
        " FROM runs r LEFT JOIN work_items w ON w.id = r.item_id"
        " WHERE r.goal_id = ? AND r.status = 'running' ORDER BY r.started_at DESC LIMIT 1";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_run);

    memset(out, 0, sizeof(*out));
    out->started_at = -1;
    *found = 0;
    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW:
        col_copy(out->id, sizeof(out->id), s, 0);
        col_copy(out->kind, sizeof(out->kind), s, 1);
        col_copy(out->item_key, sizeof(out->item_key), s, 2);
        col_copy(out->item_title, sizeof(out->item_title), s, 3);
        out->started_at =
            sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 4);
        out->turns_started = sqlite3_column_int(s, 5);
        *found = 1;
        break;
    case SQLITE_DONE:
        break;
    default:
        rc = store_err(st, "runs");
    }
    store_done(s);
    return rc;
}

int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason)
{
    static const char q_run[] =
        "SELECT error_class, failure_reason FROM runs WHERE item_id = ? AND id <> ?"
        " AND status <> 'success' AND status <> 'running' ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1";
    sqlite3_stmt *s;
    int rc;

    *error_class = *reason = NULL;
    if ((rc = store_prepare(st, &s, q_run)) != 0)
        return rc;
    store_bind_text(s, 1, item_id);
    store_bind_text(s, 2, except_run_id);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 1)) {
        *error_class = store_col_strdup(s, 0);
        *reason = store_col_strdup(s, 1);
    }
    store_done(s);
    return 0;
}
