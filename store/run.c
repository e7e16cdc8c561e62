/*
 * run.c - the runs table (store/run.h).
 */
#include "store/run.h"

#include <stdio.h>

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
