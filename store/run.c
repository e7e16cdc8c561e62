/*
 * run.c - the runs table (store/run.h).
 */
#include "store/run.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define RUNNING(member, kind, col) STORE_FIELD(struct store_run_running, member, kind, col)
#define CANDIDATE(member, kind, col) STORE_FIELD(struct store_run_exec_candidate, member, kind, col)
#define JOB(member, kind, col) STORE_FIELD(struct store_run_job, member, kind, col)
#define ATTEMPT(member, kind, col) STORE_FIELD(struct store_run_attempt, member, kind, col)
#define FACT(member, kind, col) STORE_FIELD(struct store_run_facts, member, kind, col)

/* The columns of runs, the only place they are listed:
 *   COLUMN(member, kind, read, default, write, value)
 * the column (and the member of struct store_run it fills, as kind; NONE
 * when it is not read), how store_run_get() and store_run_list_running()
 * read it (AS_IS; OR: coalesce(column, default); OR_TEXT: coalesce(column,
 * ''); NO: not read), and what store_run_insert() writes for it (BIND: the value, an
 * expression of row, its struct store_run_new; SQL: the SQL literal
 * value; NO: nothing).  The first is FIRST, every later one NEXT; the
 * first is read and bound. */
#define RUN_COLUMNS(FIRST, NEXT)                                                                   \
    FIRST(id, COPY, AS_IS, , BIND, STORE_TEXT(row->id))                                            \
    NEXT(goal_id, COPY, AS_IS, , BIND, STORE_TEXT(row->goal_id))                                   \
    NEXT(item_id, COPY, OR_TEXT, , BIND, STORE_TEXT(row->item_id))                                 \
    NEXT(kind, COPY, AS_IS, , BIND, STORE_TEXT(row->kind))                                         \
    NEXT(lane, COPY, AS_IS, , BIND, STORE_TEXT(row->lane))                                         \
    NEXT(status, COPY, AS_IS, , SQL, 'running')                                                    \
    NEXT(attempt, INT, AS_IS, , BIND, STORE_I64(row->attempt))                                     \
    NEXT(tier, NONE, NO, , BIND, STORE_I64(row->tier))                                             \
    NEXT(model_index, NONE, NO, , BIND, STORE_I64(row->model_index))                               \
    NEXT(timeout_s, INT, OR, -1, BIND, STORE_I64(row->timeout_s))                                  \
    NEXT(pid, LONG, OR, 0, NO, )                                                                   \
    NEXT(lease_until, I64, OR, 0, BIND, STORE_I64(row->lease_until))                               \
    NEXT(created_at, NONE, NO, , BIND, STORE_I64(row->now_ms))                                     \
    NEXT(started_at, I64, OR, 0, BIND, STORE_I64(row->now_ms))                                     \
    NEXT(failure_reason, COPY, OR_TEXT, , NO, )                                                    \
    NEXT(node_id, COPY, OR_TEXT, , BIND, STORE_TEXT(row->node_id))

/* What RUN_COLUMNS generates: the read list (RUN_COLS), its column
 * numbers and field table, the written list, its placeholders and
 * values. */
#define RUN_READ_AS_IS(member, dflt) #member
#define RUN_READ_OR(member, dflt) "coalesce(" #member ", " #dflt ")"
/* '' is no preprocessing token for every compiler (clang refuses an empty
 * character constant): a text column's empty default has its own kind */
#define RUN_READ_OR_TEXT(member, dflt) "coalesce(" #member ", '')"
#define RUN_READ_NO(member, dflt)
#define RUN_READ_FIRST(m, k, read, d, w, v) RUN_READ_##read(m, d)
#define RUN_READ_NEXT(m, k, read, d, w, v) RUN_READ_SEP_##read RUN_READ_##read(m, d)
#define RUN_READ_SEP_AS_IS ", "
#define RUN_READ_SEP_OR ", "
#define RUN_READ_SEP_OR_TEXT ", "
#define RUN_READ_SEP_NO
#define RUN_COLS RUN_COLUMNS(RUN_READ_FIRST, RUN_READ_NEXT)
#define RUN_COL_AS_IS(member) RUN_COL_##member,
#define RUN_COL_OR(member) RUN_COL_##member,
#define RUN_COL_OR_TEXT(member) RUN_COL_##member,
#define RUN_COL_NO(member)
#define RUN_COL(m, k, read, d, w, v) RUN_COL_##read(m)
enum run_col { RUN_COLUMNS(RUN_COL, RUN_COL) };
#define RUN_FIELD_AS_IS(member, kind) STORE_FIELD(struct store_run, member, kind, RUN_COL_##member),
#define RUN_FIELD_OR(member, kind) STORE_FIELD(struct store_run, member, kind, RUN_COL_##member),
#define RUN_FIELD_OR_TEXT(member, kind) STORE_FIELD(struct store_run, member, kind, RUN_COL_##member),
#define RUN_FIELD_NO(member, kind)
#define RUN_FIELD(m, k, read, d, w, v) RUN_FIELD_##read(m, k)
#define RUN_NAME_BIND(member) ", " #member
#define RUN_NAME_SQL(member) ", " #member
#define RUN_NAME_NO(member)
#define RUN_NAME_FIRST(m, k, r, d, write, v) #m
#define RUN_NAME_NEXT(m, k, r, d, write, v) RUN_NAME_##write(m)
#define RUN_MARK_BIND(value) ", ?"
#define RUN_MARK_SQL(value) ", " #value
#define RUN_MARK_NO(value)
#define RUN_MARK_FIRST(m, k, r, d, write, v) "?"
#define RUN_MARK_NEXT(m, k, r, d, write, v) RUN_MARK_##write(v)
#define RUN_VALUE_BIND(value) value,
#define RUN_VALUE_SQL(value)
#define RUN_VALUE_NO(value)
#define RUN_VALUE(m, k, r, d, write, v) RUN_VALUE_##write(v)
#define RUN_WRITE_COLS RUN_COLUMNS(RUN_NAME_FIRST, RUN_NAME_NEXT)
#define RUN_WRITE_MARKS RUN_COLUMNS(RUN_MARK_FIRST, RUN_MARK_NEXT)

int store_run_get_goal_item(store *st, const char *run_id, char goal_id[ID_SIZE],
                            char item_id[ID_SIZE])
{
    const struct store_text_col cols[] = {{goal_id, ID_SIZE}, {item_id, ID_SIZE}};
    int found;
    int rc = store_get_texts(st, "run", cols, 2, &found,
                             "SELECT goal_id, item_id FROM runs WHERE id = ?",
                             STORE_ARGS(STORE_TEXT(run_id)));

    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "no run %s", run_id);
    return rc;
}

int store_run_set_model(store *st, const char *run_id, const char *model, const char *provider)
{
    return store_exec_args(st, "recording the run's model", NULL,
                           "UPDATE runs SET model = ?, provider = ? WHERE id = ?",
                           STORE_ARGS(STORE_TEXT(model), STORE_TEXT(provider), STORE_TEXT(run_id)));
}

int store_run_add_usage(store *st, const char *run_id, int64_t tokens_in, int64_t tokens_cached,
                        int64_t tokens_out, double cost_usd, char goal_id_out[ID_SIZE])
{
    store_stmt *s;
    int rc, step;

    if (goal_id_out)
        goal_id_out[0] = '\0';
    if ((rc = store_prepare(st, &s,
                            "UPDATE runs SET tokens_in = tokens_in + ?, tokens_cached = "
                            "tokens_cached + ?, tokens_out = tokens_out + ?, cost_usd = "
                            "cost_usd + ? WHERE id = ? RETURNING goal_id")) != 0)
        return rc;
    store_bind_i64(s, 1, tokens_in);
    store_bind_i64(s, 2, tokens_cached);
    store_bind_i64(s, 3, tokens_out);
    store_bind_double(s, 4, cost_usd);
    store_bind_text(s, 5, run_id);
    step = store_step(s);
    if (step == STORE_ROW && goal_id_out)
        store_col_copy(goal_id_out, ID_SIZE, s, 0);
    else if (step != STORE_ROW && step != STORE_DONE)
        rc = store_err(st, "recording run usage");
    while (step == STORE_ROW)
        step = store_step(s);
    store_done(s);
    return rc;
}

/* A running run as struct store_run_running reads it: the SELECT and
 * FROM, then the caller's WHERE. */
#define RUNNING_SELECT                                                                             \
    "SELECT r.id, r.kind, coalesce(w.key, ''), coalesce(w.title, ''), r.started_at,"               \
    " (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'turn.started')"           \
    " FROM runs r LEFT JOIN work_items w ON w.id = r.item_id"

static int running_get(store *st, const char *sql, const char *id, struct store_run_running *out,
                       int *found)
{
    static const struct store_field cols[] = {
        RUNNING(id, COPY, 0),
        RUNNING(kind, COPY, 1),
        RUNNING(item_key, COPY, 2),
        RUNNING(item_title, COPY, 3),
        RUNNING(started_at, OPT_I64, 4),
        RUNNING(turns_started, INT, 5),
    };
    int rc = store_get_fields(st, "runs", STORE_INTO(out, cols), found, sql,
                              STORE_ARGS(STORE_TEXT(id)));

    if (!*found)
        out->started_at = -1;
    return rc;
}

int store_run_latest_running(store *st, const char *goal_id, struct store_run_running *out,
                             int *found)
{
    return running_get(st,
                       RUNNING_SELECT " WHERE r.goal_id = ? AND r.status = 'running'"
                                      " ORDER BY r.started_at DESC LIMIT 1",
                       goal_id, out, found);
}

int store_run_running_get(store *st, const char *run_id, struct store_run_running *out,
                          int *found)
{
    return running_get(st, RUNNING_SELECT " WHERE r.id = ? AND r.status = 'running'", run_id, out,
                       found);
}

int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason)
{
    static const char q_run[] =
        "SELECT error_class, failure_reason FROM runs WHERE item_id = ? AND id <> ?"
        " AND status <> 'success' AND status <> 'running' ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1";
    store_stmt *s;
    int rc;

    *error_class = *reason = NULL;
    if ((rc = store_prepare_args(st, &s, q_run,
                                 STORE_ARGS(STORE_TEXT(item_id), STORE_TEXT(except_run_id)))) != 0)
        return rc;
    if (store_next_row(st, s, "run", &rc) && store_col_raw(s, 1)) {
        *error_class = store_col_strdup(s, 0);
        *reason = store_col_strdup(s, 1);
    }
    store_done(s);
    return rc;
}

/* The claim rule, once: the FROM and WHERE of each lane's picks, with now
 * as ?1.  The picks select rows from them, the queue counts count them.
 * The plan lane's rule has two parts, goals to elaborate and goals to
 * plan, each walked in claim order on goals_pick (status, priority DESC,
 * created_at, id) and merged, so a pick stops at the first goal it may
 * take instead of sorting every queued goal; next_attempt_at is compared
 * as +next_attempt_at so that the planner does not trade that order for
 * a range on goals_claim.  The goals to plan and the goals to publish are
 * read from counts the database keeps (goals.items and items_open,
 * migration 0019), each in a partial index in claim order (goals_to_plan,
 * goals_to_publish), whose condition the rule repeats word for word; an
 * item's dependents are work_items.dependents. */
#define NOT_RUNNING                                                                                \
    " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.goal_id = g.id AND r.status = 'running')"
#define ELABORATE_RULE                                                                             \
    " FROM goals g WHERE status = 'queued' AND is_template = 0 AND +next_attempt_at <= ?1"         \
    NOT_RUNNING
#define PLAN_ONLY_RULE_ON(index)                                                                   \
    " FROM goals g" index " WHERE status = 'active' AND items = 0 AND is_template = 0"             \
    " AND +next_attempt_at <= ?1 AND elaboration IS NOT NULL" NOT_RUNNING
#define PUBLISH_RULE_ON(index)                                                                     \
    " FROM goals g" index                                                                          \
    " WHERE status = 'active' AND (partial = 1 OR (items > 0 AND items_open = 0))"                 \
    " AND +next_attempt_at <= ?1" NOT_RUNNING
/* SQLite's planner, without statistics, would rather walk goals_pick */
#define PLAN_ONLY_RULE_LITE PLAN_ONLY_RULE_ON(" INDEXED BY goals_to_plan")
#define PLAN_ONLY_RULE_PG PLAN_ONLY_RULE_ON("")
#define PUBLISH_RULE_LITE PUBLISH_RULE_ON(" INDEXED BY goals_to_publish")
#define PUBLISH_RULE_PG PUBLISH_RULE_ON("")
/* The items of the candidate's goal running now (in progress or in
 * verification): fewer than the goal's cap (?2, goal.max_parallel_items;
 * 1 for a goal without a repository, whose items share one folder). */
#define INFLIGHT                                                                                   \
    "(SELECT count(*) FROM work_items o WHERE o.goal_id = w.goal_id"                               \
    " AND o.status IN ('in_progress', 'verify'))"
#define EXECUTE_RULE EXECUTE_RULE_ON("")
#define EXECUTE_RULE_ON(index)                                                                     \
    " FROM work_items w" index " JOIN goals g ON g.id = w.goal_id"                                 \
    " WHERE w.status = 'ready' AND g.status = 'active' AND w.next_attempt_at <= ?1"                \
    " AND " INFLIGHT " < CASE WHEN g.repo IS NULL THEN 1 ELSE ?2 END"

static int is_busy(const char (*busy)[ID_SIZE], int n, const char *goal_id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(busy[i], goal_id))
            return 1;
    return 0;
}

/* The first goal (not busy) that sql selects as (id, kind, attempts), with
 * now bound as ?1. */
static int pick_goal(store *st, const char *sql, int64_t now, const char (*busy)[ID_SIZE],
                     int n_busy, struct store_run_pick *out)
{
    store_stmt *s;
    int rc = store_prepare(st, &s, sql), found = 0;

    if (rc)
        return rc;
    store_bind_i64(s, 1, now);
    while (!found && store_next_row(st, s, "claim", &rc)) {
        if (is_busy(busy, n_busy, store_col_raw(s, 0)))
            continue;
        store_col_copy(out->goal_id, sizeof(out->goal_id), s, 0);
        store_col_copy(out->kind, sizeof(out->kind), s, 1);
        out->attempts = store_col_int(s, 2);
        found = 1;
    }
    store_done(s);
    if (rc)
        return rc;
    return found ? 0 : ERR_NOTFOUND;
}

int store_run_pick_plan(store *st, int64_t now_ms, const char (*busy)[ID_SIZE], int n_busy,
                        struct store_run_pick *out)
{
#define PICK_PLAN(plan_only)                                                                       \
    "SELECT id, 'elaborate' AS kind, attempts, priority, created_at" ELABORATE_RULE                \
    " UNION ALL SELECT id, 'plan', attempts, priority, created_at" plan_only                       \
    " ORDER BY priority DESC, created_at, id"
    static const char q_lite[] = PICK_PLAN(PLAN_ONLY_RULE_LITE);
    static const char q_pg[] = PICK_PLAN(PLAN_ONLY_RULE_PG);
#undef PICK_PLAN

    return pick_goal(st, store_sql(st, q_lite, q_pg), now_ms, busy, n_busy, out);
}

int store_run_pick_publish(store *st, int64_t now_ms, const char (*busy)[ID_SIZE], int n_busy,
                           struct store_run_pick *out)
{
    static const char q_lite[] =
        "SELECT id, 'publish', attempts" PUBLISH_RULE_LITE " ORDER BY priority DESC, created_at, id";
    static const char q_pg[] =
        "SELECT id, 'publish', attempts" PUBLISH_RULE_PG " ORDER BY priority DESC, created_at, id";

    return pick_goal(st, store_sql(st, q_lite, q_pg), now_ms, busy, n_busy, out);
}

int store_run_execute_candidates_each(store *st, int64_t now_ms, int parallel_cap,
                                      int (*fn)(const struct store_run_exec_candidate *c,
                                                void *ctx),
                                      void *ctx)
{
    struct store_run_exec_candidate row;
    struct store_iter it;
    int rc;
    static const char sql[] =
        "SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at, w.dependents, " INFLIGHT
        EXECUTE_RULE;
    static const struct store_field cols[] = {
        CANDIDATE(id, COPY, 0),        CANDIDATE(goal_id, COPY, 1),   CANDIDATE(priority, INT, 2),
        CANDIDATE(created_at, I64, 3), CANDIDATE(updated_at, I64, 4), CANDIDATE(dependents, INT, 5),
        CANDIDATE(inflight, INT, 6),
    };

    store_iter_begin(&it, st, "select", sql,
                     STORE_ARGS(STORE_I64(now_ms), STORE_I64(parallel_cap)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

static void group_fill(store_stmt *s, void *ctx)
{
    struct store_run_ready_group *g = ctx;

    g->priority = store_col_int(s, 0);
    g->dependents = store_col_int(s, 1);
}

int store_run_ready_group_next(store *st, const struct store_run_ready_group *after,
                               struct store_run_ready_group *out, int *found)
{
#define GROUPS(index, where)                                                                       \
    "SELECT priority, dependents FROM work_items" index " WHERE status = 'ready'" where            \
    " ORDER BY priority DESC, dependents DESC LIMIT 1"
#define LITE " INDEXED BY work_items_ready"
    static const char first_lite[] = GROUPS(LITE, ""), first_pg[] = GROUPS("", "");
    static const char same_lite[] = GROUPS(LITE, " AND priority = ?1 AND dependents < ?2");
    static const char same_pg[] = GROUPS("", " AND priority = ?1 AND dependents < ?2");
    static const char lower_lite[] = GROUPS(LITE, " AND priority < ?1");
    static const char lower_pg[] = GROUPS("", " AND priority < ?1");
#undef LITE
#undef GROUPS
    int rc;

    memset(out, 0, sizeof(*out));
    if (!after)
        return store_get_row(st, "select", group_fill, out, found,
                             store_sql(st, first_lite, first_pg), NULL, 0);
    rc = store_get_row(st, "select", group_fill, out, found, store_sql(st, same_lite, same_pg),
                       STORE_ARGS(STORE_I64(after->priority), STORE_I64(after->dependents)));
    if (rc || *found)
        return rc;
    return store_get_row(st, "select", group_fill, out, found, store_sql(st, lower_lite, lower_pg),
                         STORE_ARGS(STORE_I64(after->priority)));
}

int store_run_execute_group_each(store *st, int64_t now_ms, int parallel_cap,
                                 const struct store_run_ready_group *g,
                                 int (*fn)(const struct store_run_exec_candidate *c, void *ctx),
                                 void *ctx)
{
    struct store_run_exec_candidate row;
    struct store_iter it;
    int rc;
#define WALK(index)                                                                                \
    "SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at, w.dependents, " INFLIGHT      \
    EXECUTE_RULE_ON(index) " AND w.priority = ?3 AND w.dependents = ?4"                            \
    " ORDER BY w.updated_at, w.created_at, w.id"
    static const char q_lite[] = WALK(" INDEXED BY work_items_ready"), q_pg[] = WALK("");
#undef WALK
    static const struct store_field cols[] = {
        CANDIDATE(id, COPY, 0),        CANDIDATE(goal_id, COPY, 1),   CANDIDATE(priority, INT, 2),
        CANDIDATE(created_at, I64, 3), CANDIDATE(updated_at, I64, 4), CANDIDATE(dependents, INT, 5),
        CANDIDATE(inflight, INT, 6),
    };

    store_iter_begin(&it, st, "select", store_sql(st, q_lite, q_pg),
                     STORE_ARGS(STORE_I64(now_ms), STORE_I64(parallel_cap), STORE_I64(g->priority),
                                STORE_I64(g->dependents)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_run_queue_counts(store *st, int64_t now_ms, int parallel_cap,
                           struct store_run_queues *out)
{
#define QUEUES(plan_only, publish)                                                                 \
    "SELECT (SELECT count(*)" ELABORATE_RULE ") + (SELECT count(*)" plan_only "),"                 \
    " (SELECT count(*)" publish ") + (SELECT count(*)" EXECUTE_RULE                                \
    "), (SELECT count(*) FROM work_items WHERE status = 'queued')"
    static const char q_lite[] = QUEUES(PLAN_ONLY_RULE_LITE, PUBLISH_RULE_LITE);
    static const char q_pg[] = QUEUES(PLAN_ONLY_RULE_PG, PUBLISH_RULE_PG);
#undef QUEUES
    store_stmt *s;
    int rc = store_prepare_args(st, &s, store_sql(st, q_lite, q_pg),
                                STORE_ARGS(STORE_I64(now_ms), STORE_I64(parallel_cap)));

    memset(out, 0, sizeof(*out));
    if (rc)
        return rc;
    if (store_step(s) == STORE_ROW) {
        out->plan = store_col_i64(s, 0);
        out->work = store_col_i64(s, 1);
        out->waiting_on_dependencies = store_col_i64(s, 2);
    } else {
        rc = store_err(st, "queues");
    }
    store_done(s);
    return rc;
}

int store_run_pending_retries(store *st, int64_t now_ms, int *out)
{
    static const char sql[] =
        "SELECT (SELECT count(*) FROM work_items w JOIN goals g ON g.id = w.goal_id"
        "        WHERE w.status = 'ready' AND g.status = 'active' AND w.next_attempt_at > ?1)"
        " + (SELECT count(*) FROM goals WHERE status IN ('queued', 'active') AND is_template = 0"
        "        AND next_attempt_at > ?1)";
    int64_t v = 0;
    int rc = store_count(st, "pending retries", &v, sql, STORE_ARGS(STORE_I64(now_ms)));

    *out = (int)v;
    return rc;
}

int store_run_insert(store *st, const struct store_run_new *r)
{
    static const char sql[] = "INSERT INTO runs(" RUN_WRITE_COLS ") VALUES (" RUN_WRITE_MARKS ")";
    const struct store_run_new *row = r;

    return store_exec_args(st, "insert run", NULL, sql,
                           STORE_ARGS(RUN_COLUMNS(RUN_VALUE, RUN_VALUE)));
}

int store_run_last_timeout_s(store *st, const char *goal_id, const char *kind, int *out)
{
    static const char q[] = "SELECT status, coalesce(timeout_s, 0) FROM runs WHERE goal_id = ?"
                            " AND kind = ? ORDER BY created_at DESC, rowid DESC LIMIT 1";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q, STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(kind)));

    *out = 0;
    if (rc)
        return rc;
    if (store_next_row(st, s, "run", &rc) && !strcmp(store_col_raw(s, 0), "timeout") &&
        store_col_int(s, 1) > 0)
        *out = store_col_int(s, 1);
    store_done(s);
    return rc;
}

/* Where each of RUN_COLS goes in a struct store_run. */
static const struct store_field run_fields[] = {RUN_COLUMNS(RUN_FIELD, RUN_FIELD)};

/* store_row_fn: a run into the zeroed (struct store_run *)ctx. */
static void run_fill(store_stmt *s, void *ctx)
{
    store_fields_fill(ctx, s, STORE_FIELDS(run_fields), 0);
}

int store_run_get(store *st, const char *id, struct store_run *out)
{
    static const char sql[] = "SELECT " RUN_COLS " FROM runs WHERE id = ?";

    memset(out, 0, sizeof(*out));
    return store_get_by_id(st, "run", run_fill, out, sql, id);
}

int store_run_list_running(store *st, struct store_run **out, size_t *n)
{
    static const char sql[] = "SELECT " RUN_COLS " FROM runs WHERE status = 'running'";
    void *rows;
    int rc = store_rows_alloc(st, "running runs", &rows, n, STORE_ROW_SHAPE(**out, run_fill), sql,
                              NULL, 0);

    *out = rows;
    return rc;
}

int store_run_count_running(store *st, const char *lane, const char *node_id, int64_t *out)
{
    static const char all[] = "SELECT count(*) FROM runs WHERE status = 'running' AND lane = ?",
                      node[] = "SELECT count(*) FROM runs WHERE status = 'running' AND lane = ?"
                               " AND node_id = ?";

    if (!node_id)
        return store_count(st, "running runs", out, all, STORE_ARGS(STORE_TEXT(lane)));
    return store_count(st, "running runs", out, node,
                       STORE_ARGS(STORE_TEXT(lane), STORE_TEXT(node_id)));
}

int store_run_jobs_each(store *st, int (*fn)(const struct store_run_job *j, void *ctx), void *ctx)
{
    struct store_run_job row;
    struct store_iter it;
    int rc;
    static const char sql[] = "SELECT r.id, r.goal_id, coalesce(r.item_id, ''), r.kind, r.lane,"
                              " coalesce(r.pid, 0), r.started_at, g.title, coalesce(w.key, ''),"
                              " coalesce(r.node_id, '')"
                              " FROM runs r JOIN goals g ON g.id = r.goal_id"
                              " LEFT JOIN work_items w ON w.id = r.item_id"
                              " WHERE r.status = 'running' ORDER BY r.started_at";
    static const struct store_field cols[] = {
        JOB(run_id, RAW, 0),     JOB(goal_id, RAW, 1),    JOB(item_id, RAW, 2),
        JOB(kind, RAW, 3),       JOB(lane, RAW, 4),       JOB(pid, LONG, 5),
        JOB(started_at, I64, 6), JOB(goal_title, RAW, 7), JOB(item_key, RAW, 8),
        JOB(node_id, RAW, 9),
    };

    store_iter_begin(&it, st, "running runs", sql, NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_run_latest_of_item(store *st, const char *item_id, char out[ID_SIZE])
{
    static const char q[] = "SELECT id FROM runs WHERE item_id = ? ORDER BY created_at DESC,"
                            " rowid DESC LIMIT 1";
    int found;

    return store_get_text(st, "run", out, ID_SIZE, &found, q, STORE_ARGS(STORE_TEXT(item_id)));
}

int store_run_item_asked_last(store *st, const char *goal_id, const char *item_id,
                              const char *except_run_id, int *yes)
{
    static const char q_goal[] =
        "SELECT CASE WHEN r.item_id = ? AND EXISTS (SELECT 1 FROM escalations e WHERE"
        " e.run_id = r.id AND e.type = 'ask_human') THEN 1 ELSE 0 END FROM runs r"
        " WHERE r.goal_id = ? AND r.item_id IS NOT NULL AND r.id != ?"
        " ORDER BY r.created_at DESC, r.rowid DESC LIMIT 1";
    static const char q_item[] =
        "SELECT CASE WHEN r.item_id = ? AND EXISTS (SELECT 1 FROM escalations e WHERE"
        " e.run_id = r.id AND e.type = 'ask_human') THEN 1 ELSE 0 END FROM runs r"
        " WHERE r.item_id = ? AND r.id != ? ORDER BY r.created_at DESC, r.rowid DESC LIMIT 1";
    int64_t v = 0;
    int found = 0, rc;

    rc = store_get_int64(st, "run", &v, &found, goal_id ? q_goal : q_item,
                         STORE_ARGS(STORE_TEXT(item_id), STORE_TEXT(goal_id ? goal_id : item_id),
                                    STORE_TEXT(except_run_id)));
    *yes = rc == 0 && found && v == 1;
    return rc;
}

int store_run_renew_lease(store *st, const char *run_id, int64_t lease_until)
{
    static const char sql[] = "UPDATE runs SET lease_until = ? WHERE id = ? AND status = 'running'";
    return store_exec_args(st, "lease", NULL, sql,
                           STORE_ARGS(STORE_I64(lease_until), STORE_TEXT(run_id)));
}

int store_run_live_status(store *st, const char *run_id, char run_status[16], char goal_status[16])
{
    static const char sql[] = "SELECT r.status, g.status FROM runs r JOIN goals g"
                              " ON g.id = r.goal_id WHERE r.id = ?";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_TEXT(run_id)));

    run_status[0] = goal_status[0] = '\0';
    if (rc)
        return rc;
    if (store_next_row(st, s, "run", &rc)) {
        store_col_copy(run_status, 16, s, 0);
        store_col_copy(goal_status, 16, s, 1);
    }
    store_done(s);
    return rc;
}

int store_run_mark_started(store *st, const char *run_id, long pid, int64_t lease_until,
                           int64_t now_ms)
{
    static const char sql[] =
        "UPDATE runs SET pid = ?, lease_until = ?, started_at = coalesce(started_at, ?)"
        " WHERE id = ? AND status = 'running'";
    int n = 0;
    int rc = store_exec_args(st, "run", &n, sql,
                             STORE_ARGS(STORE_I64((int64_t)pid), STORE_I64(lease_until),
                                        STORE_I64(now_ms), STORE_TEXT(run_id)));

    if (rc == 0 && n != 1) /* cancelled meanwhile */
        rc = err_set(ERR_TRANSITION, "run %s is no longer running", run_id);
    return rc;
}

int store_run_write_end(store *st, const char *run_id, const struct store_run_end *e)
{
    static const char sql[] = "UPDATE runs SET turns = ?, model_index = ?, summary = ?,"
                              " error_class = ?, error_signature = ?, failure_reason = ?"
                              " WHERE id = ?";
    return store_exec_args(st, "run", NULL, sql,
                           STORE_ARGS(STORE_I64(e->turns), STORE_I64(e->model_index),
                                      STORE_TEXT(e->summary), STORE_TEXT(e->error_class),
                                      STORE_TEXT(e->error_signature), STORE_TEXT(e->failure_reason),
                                      STORE_TEXT(run_id)));
}

int store_run_item_failures_each(store *st, const char *item_id,
                                 int (*fn)(const struct store_run_failure *f, void *ctx), void *ctx)
{
    struct store_run_failure row;
    struct store_iter it;
    int rc;
    static const char q_fail[] =
        "SELECT coalesce(error_class, ''), coalesce(error_signature, ''), coalesce(failure_reason, "
        "'')"
        " FROM runs WHERE item_id = ? AND status IN ('failed','timeout','aborted')"
        " ORDER BY created_at DESC, rowid DESC LIMIT 3";
    static const struct store_field cols[] = {
        STORE_FIELD(struct store_run_failure, error_class, RAW, 0),
        STORE_FIELD(struct store_run_failure, error_signature, RAW, 1),
        STORE_FIELD(struct store_run_failure, failure_reason, RAW, 2),
    };

    store_iter_begin(&it, st, "runs", q_fail, STORE_ARGS(STORE_TEXT(item_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_run_item_attempts_each(store *st, const char *item_id,
                                 int (*fn)(const struct store_run_attempt *a, void *ctx), void *ctx)
{
    struct store_run_attempt row;
    struct store_iter it;
    int rc;
    static const char q_att[] =
        "SELECT r.id, r.kind, r.status, coalesce(r.model, ''), coalesce(r.error_class, ''),"
        " coalesce(r.failure_reason, ''), coalesce(r.summary, ''),"
        " (SELECT d.data FROM decisions d WHERE d.run_id = r.id AND d.kind = 'verification'"
        "  ORDER BY d.id DESC LIMIT 1), r.attempt, r.tier, r.turns,"
        " coalesce(r.started_at, -1), coalesce(r.ended_at, -1)"
        " FROM runs r WHERE r.item_id = ? AND r.kind IN ('execute', 'plan_b')"
        " ORDER BY r.created_at, r.rowid";
    static const struct store_field cols[] = {
        ATTEMPT(run_id, RAW, 0),    ATTEMPT(kind, RAW, 1),         ATTEMPT(status, RAW, 2),
        ATTEMPT(model, RAW, 3),     ATTEMPT(error_class, RAW, 4),  ATTEMPT(failure_reason, RAW, 5),
        ATTEMPT(summary, RAW, 6),   ATTEMPT(verification, RAW, 7), ATTEMPT(attempt, INT, 8),
        ATTEMPT(tier, INT, 9),      ATTEMPT(turns, INT, 10),       ATTEMPT(started_at, I64, 11),
        ATTEMPT(ended_at, I64, 12),
    };

    store_iter_begin(&it, st, "attempts", q_att, STORE_ARGS(STORE_TEXT(item_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_run_status_get(store *st, const char *id, int *found, char status[32],
                         char goal_id[ID_SIZE], char item_id[ID_SIZE])
{
    static const char sql[] = "SELECT status, goal_id, item_id, id FROM runs WHERE id = ?";
    const struct store_text_col cols[] = {{status, 32}, {goal_id, ID_SIZE}, {item_id, ID_SIZE}};

    return store_get_texts(st, "run", cols, 3, found, sql, STORE_ARGS(STORE_TEXT(id)));
}

int store_run_status_set(store *st, const char *id, const char *from, const char *to, int terminal,
                         int64_t now_ms, int *changed)
{
    static const char sql[] = "UPDATE runs SET status = ?1, ended_at = CASE WHEN ?3 THEN ?2"
                              " ELSE ended_at END WHERE id = ?4 AND status = ?5";
    return store_status_set(st, sql, id, from, to, terminal, now_ms, changed);
}

int store_run_facts_get(store *st, const char *id, struct store_run_facts *out)
{
    static const char q[] = "SELECT goal_id, coalesce(item_id, ''), kind, lane, attempt,"
                            " coalesce(timeout_s, 0), status, model_index FROM runs WHERE id = ?";
    static const struct store_field cols[] = {
        FACT(goal_id, COPY, 0), FACT(item_id, COPY, 1),    FACT(kind, COPY, 2),
        FACT(lane, COPY, 3),    FACT(attempt, INT, 4),     FACT(timeout_s, INT, 5),
        FACT(status, COPY, 6),  FACT(model_index, INT, 7),
    };
    const struct store_fields_into into = {out, STORE_FIELDS(cols), sizeof(*out)};

    memset(out, 0, sizeof(*out));
    return store_get_by_id(st, "run", store_fields_row, (void *)&into, q, id);
}

int store_run_set_failure_if_running(store *st, const char *id, const char *cls,
                                     const char *signature, const char *reason)
{
    static const char upd[] = "UPDATE runs SET error_class = ?, error_signature = ?,"
                              " failure_reason = ? WHERE id = ? AND status = 'running'";
    return store_exec_args(
        st, "abort", NULL, upd,
        STORE_ARGS(STORE_TEXT(cls), STORE_TEXT(signature), STORE_TEXT(reason), STORE_TEXT(id)));
}

/* store_row_fn: a running run's id and pid into (struct store_run_live *)ctx. */
static void live_fill(store_stmt *s, void *ctx)
{
    static const struct store_field cols[] = {
        STORE_FIELD(struct store_run_live, id, COPY, 0),
        STORE_FIELD(struct store_run_live, pid, LONG, 1),
    };

    store_fields_fill(ctx, s, STORE_FIELDS(cols), 0);
}

int store_run_running_of_goal(store *st, const char *goal_id, struct store_run_live **out,
                              size_t *n)
{
    static const char q[] = "SELECT id, coalesce(pid, 0) FROM runs WHERE goal_id = ?"
                            " AND status = 'running' ORDER BY created_at, rowid";
    void *rows;
    int rc = store_rows_alloc(st, "runs", &rows, n, STORE_ROW_SHAPE(**out, live_fill), q,
                              STORE_ARGS(STORE_TEXT(goal_id)));

    *out = rows;
    return rc;
}

int store_run_set_cancelled(store *st, const char *id)
{
    static const char upd[] = "UPDATE runs SET error_class = 'cancelled', failure_reason ="
                              " 'cancelled' WHERE id = ? AND status = 'running'";
    return store_exec_id(st, upd, id, "cancel");
}

int store_run_window_totals(store *st, int64_t since_ms, struct store_run_window *out)
{
    static const char failed[] = "SELECT count(*) FROM runs WHERE created_at >= ?"
                                 " AND status IN ('failed', 'timeout')",
                      tokens[] = "SELECT CAST(coalesce(sum(tokens_in + tokens_out), 0) AS BIGINT)"
                                 " FROM runs WHERE created_at >= ?",
                      cost[] = "SELECT CAST(round(coalesce(sum(cost_usd), 0) * 1000000) AS BIGINT)"
                               " FROM runs WHERE created_at >= ?";
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = store_count(st, "failed runs", &out->failed, failed,
                          STORE_ARGS(STORE_I64(since_ms)))) != 0 ||
        (rc = store_count(st, "tokens used", &out->tokens, tokens,
                          STORE_ARGS(STORE_I64(since_ms)))) != 0)
        return rc;
    return store_count(st, "cost", &out->cost_micro_usd, cost, STORE_ARGS(STORE_I64(since_ms)));
}
