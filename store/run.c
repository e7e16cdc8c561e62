/*
 * run.c - the runs table (see run.h).
 */
#include "store/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/xalloc.h"

int store_run_facts_get(store *st, const char *id, struct store_run_facts *out)
{
    static const char q[] = "SELECT goal_id, ifnull(item_id, ''), kind, lane, attempt,"
                            " ifnull(timeout_s, 0), status, model_index FROM runs WHERE id = ?";
    sqlite3_stmt *s;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        store_done(s);
        return err_set(ERR_NOTFOUND, "run %s: not found", id);
    }
    snprintf(out->goal_id, sizeof(out->goal_id), "%s", sqlite3_column_text(s, 0));
    snprintf(out->item_id, sizeof(out->item_id), "%s", sqlite3_column_text(s, 1));
    snprintf(out->kind, sizeof(out->kind), "%s", sqlite3_column_text(s, 2));
    snprintf(out->lane, sizeof(out->lane), "%s", sqlite3_column_text(s, 3));
    out->attempt = sqlite3_column_int(s, 4);
    out->timeout_s = sqlite3_column_int(s, 5);
    snprintf(out->status, sizeof(out->status), "%s", sqlite3_column_text(s, 6));
    out->model_index = sqlite3_column_int(s, 7);
    store_done(s);
    return 0;
}

int store_run_set_failure_if_running(store *st, const char *id, const char *cls,
                                     const char *signature, const char *reason)
{
    static const char upd[] = "UPDATE runs SET error_class = ?, error_signature = ?,"
                              " failure_reason = ? WHERE id = ? AND status = 'running'";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, upd)) != 0)
        return rc;
    store_bind_text(s, 1, cls);
    store_bind_text(s, 2, signature);
    store_bind_text(s, 3, reason);
    store_bind_text(s, 4, id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "abort");
    store_done(s);
    return rc;
}

int store_run_running_of_goal(store *st, const char *goal_id, struct store_run_live **out,
                              size_t *n)
{
    static const char q[] = "SELECT id, ifnull(pid, 0) FROM runs WHERE goal_id = ?"
                            " AND status = 'running' ORDER BY created_at, rowid";
    size_t cap = 0;
    sqlite3_stmt *s;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4;
            *out = xrealloc(*out, cap * sizeof(**out));
        }
        snprintf((*out)[*n].id, ID_SIZE, "%s", sqlite3_column_text(s, 0));
        (*out)[*n].pid = (long)sqlite3_column_int64(s, 1);
        (*n)++;
    }
    store_done(s);
    return 0;
}

int store_run_set_cancelled(store *st, const char *id)
{
    static const char upd[] = "UPDATE runs SET error_class = 'cancelled', failure_reason ="
                              " 'cancelled' WHERE id = ? AND status = 'running'";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, upd)) != 0)
        return rc;
    store_bind_text(s, 1, id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "cancel");
    store_done(s);
    return rc;
}
