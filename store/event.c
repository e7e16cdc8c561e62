#include "store/event.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define EVENT(member, kind, col) STORE_FIELD(struct store_event, member, kind, col)

int store_event_add_raw(store *st, const char *goal_id, const char *item_id, const char *run_id,
                        const char *type, const char *payload_json, int64_t *seq_out)
{
    static const char sql[] = "INSERT INTO events(ts, goal_id, item_id, run_id, type, payload)"
                              " VALUES (?, ?, ?, ?, ?, ?) RETURNING id";
    return store_exec_insert(st, "event", seq_out, sql,
                             STORE_ARGS(STORE_I64(time_now_ms()), STORE_TEXT(goal_id),
                                        STORE_TEXT(item_id), STORE_TEXT(run_id), STORE_TEXT(type),
                                        STORE_TEXT(payload_json ? payload_json : "{}")));
}

int store_event_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                    const char *type, const cJSON *payload, int64_t *seq_out)
{
    char *text = NULL;
    int rc;

    if (payload) {
        text = xcheck(cJSON_PrintUnformatted(payload));
    }
    rc = store_event_add_raw(st, goal_id, item_id, run_id, type, text, seq_out);
    cJSON_free(text);
    return rc;
}

STORE_EACH_TYPED(events_each, struct store_event)

int store_event_each(store *st, const char *goal_id, int64_t after_id, int limit,
                     int (*fn)(const struct store_event *ev, void *ctx), void *ctx)
{
    static const char sql_all[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, payload FROM events"
        " WHERE id > ? ORDER BY id LIMIT ?";
    static const char sql_goal[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, payload FROM events"
        " WHERE goal_id = ? AND id > ? ORDER BY id LIMIT ?";
    /* goal_id, when given, is ?1 */
    const struct store_arg args[] = {STORE_TEXT(goal_id), STORE_I64(after_id),
                                     STORE_I64(limit > 0 ? limit : -1)};
    static const struct store_field cols[] = {
        EVENT(id, I64, 0),     EVENT(ts, I64, 1),   EVENT(goal_id, RAW, 2), EVENT(item_id, RAW, 3),
        EVENT(run_id, RAW, 4), EVENT(type, RAW, 5), EVENT(payload, RAW, 6),
    };

    return events_each(st, "events", STORE_FIELDS(cols), fn, ctx, goal_id ? sql_goal : sql_all,
                       goal_id ? args : args + 1, goal_id ? 3 : 2);
}

int store_event_id_before(store *st, int64_t ts, int64_t *out)
{
    static const char q[] = "SELECT coalesce(max(id), 0) FROM events WHERE ts < ?";

    return store_count(st, "events", out, q, STORE_ARGS(STORE_I64(ts)));
}

int store_event_last_tool_call(store *st, const char *run_id, char *tool, size_t tool_n, char *arg,
                               size_t arg_n)
{
    /* the arguments are kept as JSON text, maybe cut (tools/registry.c) */
    static const char q_tool[] =
        "SELECT tool, CASE WHEN json_valid(a) THEN coalesce(json_extract(a, '$.path'),"
        " json_extract(a, '$.command'), json_extract(a, '$.pattern'),"
        " json_extract(a, '$.summary'), json_extract(a, '$.question'), a) ELSE a END"
        " FROM (SELECT coalesce(json_extract(payload, '$.tool'), '') AS tool,"
        " coalesce(json_extract(payload, '$.arguments'), '') AS a FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started' ORDER BY id DESC LIMIT 1) AS last";
    const struct store_text_col cols[] = {{tool, tool_n}, {arg, arg_n}};
    int found;

    return store_get_texts(st, "events", cols, 2, &found, q_tool, STORE_ARGS(STORE_TEXT(run_id)));
}

static void failure_fill(store_stmt *s, void *ctx)
{
    struct store_event_failure *out = ctx;

    out->ts = store_col_i64(s, 0);
    store_col_copy(out->type, sizeof(out->type), s, 1);
    store_col_copy(out->why, sizeof(out->why), s, 2);
    store_col_copy(out->tool, sizeof(out->tool), s, 3);
}

int store_event_last_failure(store *st, const char *goal_id, struct store_event_failure *out,
                             int *found)
{
    static const char q_err[] =
        "SELECT ts, type, coalesce(json_extract(payload, '$.reason'),"
        " json_extract(payload, '$.error'), json_extract(payload, '$.tool'), ''),"
        " coalesce(json_extract(payload, '$.tool'), '') FROM events"
        " WHERE goal_id = ? AND type IN ('run.failed', 'run.timeout', 'run.aborted',"
        " 'tool_call.failed') ORDER BY id DESC LIMIT 1";

    memset(out, 0, sizeof(*out));
    return store_get_row(st, "events", failure_fill, out, found, q_err,
                         STORE_ARGS(STORE_TEXT(goal_id)));
}

int store_event_last_failure_goal(store *st, char out[ID_SIZE])
{
    return store_peek_text(st, out, ID_SIZE,
                           "SELECT goal_id FROM events WHERE type IN ('run.failed',"
                           " 'run.timeout', 'run.aborted', 'tool_call.failed')"
                           " AND goal_id IS NOT NULL ORDER BY id DESC LIMIT 1",
                           NULL, 0);
}

struct usage_out {
    int64_t *tokens;
    double *cost_usd;
};

static void usage_fill(store_stmt *s, void *ctx)
{
    const struct usage_out *u = ctx;

    *u->tokens = store_col_i64(s, 0);
    *u->cost_usd = store_col_double(s, 1);
}

int store_event_last_llm_usage(store *st, const char *goal_id, int64_t *tokens, double *cost_usd)
{
    static const char sql[] =
        "SELECT CAST(coalesce(json_extract(payload, '$.tokens_in'), '0') AS BIGINT) +"
        " CAST(coalesce(json_extract(payload, '$.tokens_out'), '0') AS BIGINT),"
        " CAST(coalesce(json_extract(payload, '$.cost_usd'), '0') AS DOUBLE PRECISION) FROM events"
        " WHERE goal_id = ? AND type = 'llm.response' ORDER BY id DESC LIMIT 1";
    struct usage_out out = {tokens, cost_usd};

    return store_get_one(st, NULL, usage_fill, &out, sql, STORE_ARGS(STORE_TEXT(goal_id)));
}

struct tool_call_each {
    int (*fn)(const char *type, const char *payload, void *ctx);
    void *ctx;
};

static int tool_call_row(store_stmt *s, void *ctx)
{
    const struct tool_call_each *h = ctx;

    return h->fn(store_col_raw(s, 0), store_col_raw(s, 1), h->ctx);
}

int store_event_item_tool_calls_each(store *st, const char *item_id,
                                     int (*fn)(const char *type, const char *payload, void *ctx),
                                     void *ctx)
{
    static const char sql[] =
        "SELECT type, payload FROM events WHERE item_id = ? AND type IN"
        " ('tool_call.started', 'tool_call.completed', 'tool_call.failed') ORDER BY id";
    struct tool_call_each h = {fn, ctx};

    return store_each_row(st, NULL, tool_call_row, &h, sql, STORE_ARGS(STORE_TEXT(item_id)));
}

int store_event_delete_before(store *st, int64_t cutoff_ms, int *deleted)
{
    static const char del_events[] = "DELETE FROM events WHERE ts < ?";
    return store_exec_args(st, "retention", deleted, del_events, STORE_ARGS(STORE_I64(cutoff_ms)));
}

int store_event_goals_ended_after(store *st, int64_t *after_id, char (**ids)[ID_SIZE], size_t *n)
{
    static const char q_last[] = "SELECT coalesce(max(id), 0) FROM events";
    static const char q[] = "SELECT goal_id FROM events WHERE id > ? AND id <= ?"
                            " AND type IN ('goal.completed', 'goal.cancelled')"
                            " AND goal_id IS NOT NULL ORDER BY id";
    int64_t last = 0;
    int found = 0, rc;

    *ids = NULL;
    *n = 0;
    if ((rc = store_get_int64(st, "events", &last, &found, q_last, NULL, 0)) != 0)
        return rc;
    if (*after_id >= 0 && last > *after_id &&
        (rc = store_ids_args(st, "events", ids, n, q,
                             STORE_ARGS(STORE_I64(*after_id), STORE_I64(last)))) != 0)
        return rc;
    *after_id = last;
    return 0;
}
