#include "store/event.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/jsonobj.h"
#include "util/timeutil.h"
#include "util/utf8.h"
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

    if (payload && jsonobj_has_long_string(payload, UTF8_TEXT_MAX)) {
        /* one event never carries a text past the cap, whoever wrote it */
        cJSON *capped = cJSON_Duplicate(payload, 1);
        jsonobj_cap_strings(capped, UTF8_TEXT_MAX);
        text = cJSON_PrintUnformatted(capped);
        cJSON_Delete(capped);
    } else if (payload) {
        text = cJSON_PrintUnformatted(payload);
    }
    rc = store_event_add_raw(st, goal_id, item_id, run_id, type, text, seq_out);
    cJSON_free(text);
    return rc;
}

int store_event_each(store *st, const char *goal_id, int64_t after_id, int limit,
                     int (*fn)(const struct store_event *ev, void *ctx), void *ctx)
{
    struct store_event row;
    struct store_iter it;
    int rc;
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

    store_iter_begin(&it, st, "events", goal_id ? sql_goal : sql_all, goal_id ? args : args + 1,
                     goal_id ? 3 : 2);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

/* One row of store_event_each_capped(): its head from the columns, its
 * payload read apart (SQLite: from where it lies, so that a large one is
 * never loaded; PostgreSQL: in the row when at most inline_max bytes). */
struct capped {
    store *st;
    size_t inline_max;
    char *buf; /* inline_max + 1 bytes */
    int (*fn)(const struct store_event *ev, void *ctx);
    void *ctx;
};

static int capped_row(store_stmt *s, void *ctx)
{
    struct capped *c = ctx;
    store *st = c->st;
    struct store_event ev = {0};
    static const struct store_field cols[] = {
        EVENT(id, I64, 0),           EVENT(ts, I64, 1),      EVENT(goal_id, RAW, 2),
        EVENT(item_id, RAW, 3),      EVENT(run_id, RAW, 4),  EVENT(type, RAW, 5),
        EVENT(payload_size, I64, 6), EVENT(payload, RAW, 7),
    };
    size_t got;
    int rc;

    store_fields_fill(&ev, s, STORE_FIELDS(cols), 0);
    if (store_dialect_of(st) == STORE_SQLITE) {
        rc = store_lite_text_read(st, &(struct store_lite_cell){"events", "payload", ev.id}, 0,
                                  c->buf, c->inline_max, &got, &ev.payload_size);
        if (rc == ERR_NOTFOUND)
            return 0; /* deleted since the row was read: as if before it */
        if (rc)
            return rc;
        c->buf[got] = '\0';
        ev.payload = (size_t)ev.payload_size <= c->inline_max ? c->buf : NULL;
    }
    return c->fn(&ev, c->ctx);
}

int store_event_each_capped(store *st, const char *goal_id, int64_t after_id, int limit,
                            size_t inline_max, int (*fn)(const struct store_event *ev, void *ctx),
                            void *ctx)
{
    /* ?1 goal (when given), ?2 after, ?3 limit, ?4 inline_max (PostgreSQL) */
    static const char lite_all[] = "SELECT id, ts, goal_id, item_id, run_id, type, 0, NULL"
                                   " FROM events WHERE id > ?2 ORDER BY id LIMIT ?3";
    static const char lite_goal[] = "SELECT id, ts, goal_id, item_id, run_id, type, 0, NULL"
                                    " FROM events WHERE goal_id = ?1 AND id > ?2"
                                    " ORDER BY id LIMIT ?3";
    static const char pg_all[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, octet_length(payload),"
        " CASE WHEN octet_length(payload) <= ?4 THEN payload END"
        " FROM events WHERE id > ?2 AND ?1::text IS NULL ORDER BY id LIMIT ?3";
    static const char pg_goal[] =
        "SELECT id, ts, goal_id, item_id, run_id, type, octet_length(payload),"
        " CASE WHEN octet_length(payload) <= ?4 THEN payload END"
        " FROM events WHERE goal_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3";
    const int lite = store_dialect_of(st) == STORE_SQLITE;
    struct capped c = {st, inline_max, NULL, fn, ctx};
    int rc;

    if (lite)
        c.buf = xmalloc(inline_max + 1);
    rc = store_each_row(
        st, "events", capped_row, &c,
        goal_id ? store_sql(st, lite_goal, pg_goal) : store_sql(st, lite_all, pg_all),
        STORE_ARGS(STORE_TEXT(goal_id), STORE_I64(after_id), STORE_I64(limit > 0 ? limit : -1),
                   STORE_I64((int64_t)inline_max)));
    free(c.buf);
    return rc;
}

static int hex_val(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

struct hex_slice {
    char *buf;
    size_t n, got;
};

/* PostgreSQL's slice comes as hex (bytes of a text cut anywhere are not
 * text): decoded into the caller's buffer. */
static void hex_fill(store_stmt *s, void *ctx)
{
    struct hex_slice *h = ctx;
    const char *t = store_col_text(s, 0);

    for (h->got = 0; h->got < h->n && t[0] && t[1]; t += 2) {
        int hi = hex_val(t[0]), lo = hex_val(t[1]);
        if (hi < 0 || lo < 0)
            break;
        h->buf[h->got++] = (char)(hi << 4 | lo);
    }
}

int store_event_payload_read(store *st, int64_t id, int64_t off, char *buf, size_t n, size_t *got)
{
    static const char pg[] = "SELECT encode(substring(convert_to(payload, 'UTF8') FROM ?2 FOR ?3),"
                             " 'hex') FROM events WHERE id = ?1";
    struct hex_slice h = {buf, n, 0};
    int64_t size;
    int rc;

    if (store_dialect_of(st) == STORE_SQLITE)
        return store_lite_text_read(st, &(struct store_lite_cell){"events", "payload", id}, off,
                                    buf, n, got, &size);
    rc = store_get_one(st, "events", hex_fill, &h, pg,
                       STORE_ARGS(STORE_I64(id), STORE_I64(off + 1), STORE_I64((int64_t)n)));
    if (rc == ERR_NOTFOUND)
        rc = err_set(ERR_NOTFOUND, "events %lld: gone", (long long)id);
    *got = h.got;
    return rc;
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
        " ('tool_call.started', 'tool_call.completed', 'tool_call.failed', 'worktree.reset')"
        " ORDER BY id";
    struct tool_call_each h = {fn, ctx};

    return store_each_row(st, NULL, tool_call_row, &h, sql, STORE_ARGS(STORE_TEXT(item_id)));
}

struct step_each {
    int (*fn)(const struct store_step_event *e, void *ctx);
    void *ctx;
};

static int step_row(store_stmt *s, void *ctx)
{
    const struct step_each *h = ctx;
    struct store_step_event e = {store_col_raw(s, 0), store_col_raw(s, 1), store_col_raw(s, 2),
                                 store_col_raw(s, 3), store_col_raw(s, 4)};

    return h->fn(&e, h->ctx);
}

int store_event_item_steps_each(store *st, const char *item_id,
                                int (*fn)(const struct store_step_event *e, void *ctx),
                                void *ctx)
{
    static const char sql[] =
        "SELECT e.type, e.payload, coalesce(e.run_id, ''), coalesce(r.status, ''),"
        " coalesce(r.error_class, '') FROM events e LEFT JOIN runs r ON r.id = e.run_id"
        " WHERE e.item_id = ? AND e.type IN"
        " ('tool_call.started', 'tool_call.completed', 'tool_call.failed', 'worktree.reset')"
        " ORDER BY e.id";
    struct step_each h = {fn, ctx};

    return store_each_row(st, NULL, step_row, &h, sql, STORE_ARGS(STORE_TEXT(item_id)));
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
