#include "store/goal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define WAITING(member, col) STORE_FIELD(struct store_goal_waiting, member, RAW, col)

/* The columns of goals, the only place they are listed (internal.h:
 * STORE_COLS): each fills the member of struct goal of its name, as its
 * kind; the third is what store_goal_insert() binds for it. */
#define GOAL_COLUMNS(FIRST, NEXT)                                                                  \
    FIRST(id, COPY, STORE_TEXT(row->id))                                                           \
    NEXT(parent_id, RAW, STORE_TEXT(row->parent_id))                                               \
    NEXT(title, RAW, STORE_TEXT(row->title))                                                       \
    NEXT(description, RAW, STORE_TEXT(row->description ? row->description : ""))                   \
    NEXT(status, RAW, STORE_TEXT(row->status ? row->status : "queued"))                            \
    NEXT(priority, INT, STORE_I64(row->priority))                                                  \
    NEXT(is_template, INT, STORE_I64(row->is_template))                                            \
    NEXT(schedule, RAW, STORE_TEXT(row->schedule))                                                 \
    NEXT(repo, RAW, STORE_TEXT(row->repo))                                                         \
    NEXT(base_branch, RAW, STORE_TEXT(row->base_branch))                                           \
    NEXT(branch, RAW, STORE_TEXT(row->branch))                                                     \
    NEXT(worktree, RAW, STORE_TEXT(row->worktree))                                                 \
    NEXT(deadline_at, OPT_I64, store_arg_opt_i64(row->deadline_at))                                \
    NEXT(budget_max_tokens, OPT_I64, store_arg_opt_i64(row->budget_max_tokens))                    \
    NEXT(budget_max_cost_usd, OPT_DOUBLE, store_arg_opt_double(row->budget_max_cost_usd))          \
    NEXT(budget_max_hours, OPT_DOUBLE, store_arg_opt_double(row->budget_max_hours))                \
    NEXT(spent_tokens, I64, STORE_I64(row->spent_tokens))                                          \
    NEXT(spent_cost_usd, DOUBLE, STORE_DOUBLE(row->spent_cost_usd))                                \
    NEXT(spent_wall_ms, I64, STORE_I64(row->spent_wall_ms))                                        \
    NEXT(success_criteria, RAW,                                                                    \
         STORE_TEXT(row->success_criteria ? row->success_criteria : "[]"))                         \
    NEXT(allowed_actions, RAW, STORE_TEXT(row->allowed_actions))                                   \
    NEXT(verification, RAW, STORE_TEXT(row->verification))                                         \
    NEXT(publish, RAW, STORE_TEXT(row->publish))                                                   \
    NEXT(elaboration, RAW, STORE_TEXT(row->elaboration))                                           \
    NEXT(spec, RAW, STORE_TEXT(row->spec))                                                         \
    NEXT(partial, INT, STORE_I64(row->partial))                                                    \
    NEXT(blocked_reason, RAW, STORE_TEXT(row->blocked_reason))                                     \
    NEXT(created_at, I64, STORE_I64(now))                                                          \
    NEXT(updated_at, I64, STORE_I64(now))                                                          \
    NEXT(started_at, OPT_I64, store_arg_opt_i64(row->started_at))                                  \
    NEXT(ended_at, OPT_I64, store_arg_opt_i64(row->ended_at))                                      \
    NEXT(outcome, RAW, STORE_TEXT(row->outcome))                                                   \
    NEXT(outcome_reason, RAW, STORE_TEXT(row->outcome_reason))                                     \
    NEXT(head_commit, RAW, STORE_TEXT(row->head_commit))                                           \
    NEXT(clone, OPT_INT, store_arg_opt_i64(row->clone))

#define GOAL_COLS STORE_COLS(GOAL_COLUMNS)

/* The column numbers of GOAL_COLS. */
#define GOAL_COL(member, kind, value) GOAL_COL_##member,
enum goal_col { GOAL_COLUMNS(GOAL_COL, GOAL_COL) };

int store_goal_insert(store *st, struct goal *g)
{
    static const char sql[] = "INSERT INTO goals(" GOAL_COLS ") VALUES ("
                              STORE_PLACEHOLDERS(GOAL_COLUMNS) ")";
    const struct goal *row = g;
    int64_t now = time_now_ms();

    g->created_at = g->updated_at = now;
    return store_exec_args(st, "insert goal", NULL, sql, STORE_ARGS(STORE_VALUES(GOAL_COLUMNS)));
}

/* Where each of GOAL_COLS goes in a struct goal. */
#define GOAL_FIELD(member, kind, value)                                                            \
    STORE_FIELD(struct goal, member, kind, GOAL_COL_##member),
static const struct store_field goal_fields[] = {GOAL_COLUMNS(GOAL_FIELD, GOAL_FIELD)};

/* store_row_fn: a new goal (copied strings) into *(struct goal **)ctx. */
static void goal_fill(store_stmt *s, void *ctx)
{
    struct goal **out = ctx;

    *out = store_fields_dup(s, sizeof(**out), STORE_FIELDS(goal_fields));
}

int store_goal_get(store *st, const char *id, struct goal **out)
{
    static const char sql[] = "SELECT " GOAL_COLS " FROM goals WHERE id = ?";

    return store_get_by_id(st, "goal", goal_fill, out, sql, id);
}

void store_goal_free(struct goal *g)
{
    if (!g)
        return;
    store_fields_free(g, STORE_FIELDS(goal_fields));
    free(g);
}

int store_goal_each(store *st, const char *status, int (*fn)(const struct goal *g, void *ctx),
                    void *ctx)
{
    struct goal row;
    struct store_iter it;
    int rc;
    static const char sql_all[] = "SELECT " GOAL_COLS " FROM goals ORDER BY created_at DESC, id";
    static const char sql_status[] =
        "SELECT " GOAL_COLS " FROM goals WHERE status = ? ORDER BY created_at DESC, id";
    const struct store_arg arg = STORE_TEXT(status);
    store_iter_begin(&it, st, "goals", status ? sql_status : sql_all, &arg, status != NULL);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, goal_fields))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_goal_count(store *st, const char *status, int64_t *out)
{
    static const char sql_all[] = "SELECT count(*) FROM goals";
    static const char sql_status[] = "SELECT count(*) FROM goals WHERE status = ?";
    const struct store_arg arg = STORE_TEXT(status);

    return store_count(st, "count goals", out, status ? sql_status : sql_all, &arg, status != NULL);
}

/* The ids store_resolve_id() finds: the first copied into out, n counted. */
struct first_id {
    char *out;
    int n;
};

static int first_id_row(store_stmt *s, void *ctx)
{
    struct first_id *f = ctx;

    if (f->n++ == 0) {
        strncpy(f->out, store_col_raw(s, 0), ID_LEN);
        f->out[ID_LEN] = '\0';
    }
    return 0;
}

int store_resolve_id(store *st, enum store_kind kind, const char *prefix, char out[ID_SIZE])
{
    /* ids are [0-9a-f-]: every id beginning with P sorts in [P, P||'g') */
    static const struct {
        const char *what, *sql;
    } kinds[] = {
        [STORE_KIND_GOAL] = {"goal", "SELECT id FROM goals WHERE id >= ?1 AND id < ?1 || 'g'"
                                     " ORDER BY id LIMIT 2"},
        [STORE_KIND_ITEM] = {"work item", "SELECT id FROM work_items WHERE id >= ?1"
                                          " AND id < ?1 || 'g' ORDER BY id LIMIT 2"},
        [STORE_KIND_RUN] = {"run", "SELECT id FROM runs WHERE id >= ?1 AND id < ?1 || 'g'"
                                   " ORDER BY id LIMIT 2"},
        [STORE_KIND_ESCALATION] = {"escalation", "SELECT id FROM escalations WHERE id >= ?1"
                                                 " AND id < ?1 || 'g' ORDER BY id LIMIT 2"},
    };
    struct first_id first = {out, 0};
    const char *what, *sql;
    char lower[ID_SIZE];
    size_t len = strlen(prefix);
    int rc;

    if ((unsigned)kind >= sizeof(kinds) / sizeof(kinds[0]))
        return err_set(ERR_INVALID, "unknown kind of row %d", (int)kind);
    what = kinds[kind].what;
    sql = kinds[kind].sql;
    if (len > ID_LEN)
        return err_set(ERR_NOTFOUND, "%s %s: not found", what, prefix);
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char)(prefix[i] >= 'A' && prefix[i] <= 'F' ? prefix[i] + 32 : prefix[i]);
    if (!id_prefix_valid(lower))
        return err_set(ERR_INVALID, "%s id \"%s\": expected hexadecimal characters", what, prefix);
    if (len < ID_SHORT)
        return err_set(ERR_INVALID, "%s id \"%s\": give at least %d characters", what, prefix,
                       ID_SHORT);
    rc = store_each_row(st, "resolve id", first_id_row, &first, sql, STORE_ARGS(STORE_TEXT(lower)));
    if (rc)
        return rc;
    if (first.n == 0)
        return err_set(ERR_NOTFOUND, "%s %s: not found", what, prefix);
    if (first.n > 1)
        return err_set(ERR_AMBIGUOUS, "%s id %s is ambiguous: give more characters", what, prefix);
    return 0;
}

int store_goal_add_spend(store *st, const char *goal_id, int64_t tokens, double cost_usd)
{
    return store_exec_args(
        st, "recording goal usage", NULL,
        "UPDATE goals SET spent_tokens = spent_tokens + ?, "
        "spent_cost_usd = spent_cost_usd + ? WHERE id = ?",
        STORE_ARGS(STORE_I64(tokens), STORE_DOUBLE(cost_usd), STORE_TEXT(goal_id)));
}

int store_goal_set_partial(store *st, const char *goal_id)
{
    static const char sql[] = "UPDATE goals SET partial = 1 WHERE id = ?";
    return store_exec_id(st, sql, goal_id, "partial");
}

int store_goal_open_ids(store *st, char (**out)[ID_SIZE], size_t *n)
{
    static const char q[] = "SELECT id FROM goals WHERE is_template = 0 AND status IN"
                            " ('queued', 'active', 'blocked') ORDER BY created_at, id";

    return store_ids(st, q, NULL, out, n);
}

int store_goal_ended(store *st, const char *goal_id, int *ended)
{
    static const char q[] = "SELECT status IN ('completed', 'cancelled') FROM goals WHERE id = ?";
    int64_t v = 0;
    int found;
    int rc = store_get_int64(st, "goal", &v, &found, q, STORE_ARGS(STORE_TEXT(goal_id)));

    *ended = (int)v;
    return rc;
}

int store_goal_each_waiting(store *st, int (*fn)(const struct store_goal_waiting *w, void *ctx),
                            void *ctx)
{
    struct store_goal_waiting row;
    struct store_iter it;
    int rc;
    /* the open breakers joined into one text: the dialects name the
     * aggregate differently */
#define WAITING_SQL(JOIN)                                                                          \
    "SELECT g.id, g.title, e.id, e.packet,"                                                        \
    " (SELECT " JOIN "(b.error_class || ': ' || coalesce(b.reason, 'open'), '; ')"                 \
    "  FROM breakers b WHERE b.state <> 'closed'),"                                                \
    " (SELECT x.id FROM escalations x JOIN breakers b ON b.error_class = x.type"                   \
    "  AND b.state <> 'closed' WHERE x.status = 'open' ORDER BY x.created_at LIMIT 1)"             \
    " FROM goals g LEFT JOIN escalations e ON e.id = (SELECT id FROM escalations"                  \
    "  WHERE goal_id = g.id AND status = 'open' ORDER BY created_at, id LIMIT 1)"                  \
    " WHERE g.is_template = 0 AND g.status IN ('queued', 'active', 'blocked')"                     \
    " ORDER BY g.created_at, g.id"
    static const char q_lite[] = WAITING_SQL("group_concat");
    static const char q_pg[] = WAITING_SQL("string_agg");
#undef WAITING_SQL
    static const struct store_field cols[] = {
        WAITING(id, 0),     WAITING(title, 1),    WAITING(escalation_id, 2),
        WAITING(packet, 3), WAITING(breakers, 4), WAITING(breaker_escalation_id, 5),
    };

    store_iter_begin(&it, st, "goals", store_sql(st, q_lite, q_pg), NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_goal_attempts_inc(store *st, const char *id)
{
    static const char upd[] = "UPDATE goals SET attempts = attempts + 1 WHERE id = ?";
    return store_exec_id(st, upd, id, "claim");
}

int store_goal_attempts_reset(store *st, const char *id)
{
    static const char fresh[] = "UPDATE goals SET attempts = 0 WHERE id = ?";
    return store_exec_id(st, fresh, id, "run");
}

int store_goal_spend_run_wall(store *st, const char *goal_id, const char *run_id, int64_t now_ms)
{
    /* the run's wall time, never negative (no two-argument max() in
     * PostgreSQL) */
    static const char wall[] =
        "UPDATE goals SET spent_wall_ms = spent_wall_ms + (SELECT CASE WHEN d > 0 THEN d ELSE 0"
        " END FROM (SELECT ?1 - coalesce((SELECT started_at FROM runs WHERE id = ?2), ?1) AS d)"
        " AS x) WHERE id = ?3";
    return store_exec_args(st, "run", NULL, wall,
                           STORE_ARGS(STORE_I64(now_ms), STORE_TEXT(run_id), STORE_TEXT(goal_id)));
}

int store_goal_status_get(store *st, const char *id, int *found, char status[32])
{
    static const char sql[] = "SELECT status, id, NULL, NULL FROM goals WHERE id = ?";
    return store_get_text(st, "goal", status, 32, found, sql, STORE_ARGS(STORE_TEXT(id)));
}

int store_goal_status_set(store *st, const char *id, const char *from, const char *to, int terminal,
                          int64_t now_ms, int *changed)
{
    return store_status_set(st, STORE_STATUS_STAMPED_SQL("goals", "active"), id, from, to, terminal,
                            now_ms, changed);
}

int store_goal_set_worktree(store *st, const char *id, const char *worktree)
{
    static const char sql[] = "UPDATE goals SET worktree = ? WHERE id = ?";
    return store_exec_args(st, "worktree", NULL, sql,
                           STORE_ARGS(STORE_TEXT(worktree), STORE_TEXT(id)));
}

int store_goal_set_head(store *st, const char *id, const char *sha)
{
    static const char sql[] = "UPDATE goals SET head_commit = ? WHERE id = ?";
    return store_exec_args(st, "goal head", NULL, sql, STORE_ARGS(STORE_TEXT(sha), STORE_TEXT(id)));
}

int store_goal_set_elaboration(store *st, const char *id, const char *success_criteria,
                               const char *allowed_actions, const char *verification,
                               const char *elaboration)
{
    static const char sql[] = "UPDATE goals SET success_criteria = ?, allowed_actions = ?,"
                              " verification = ?, elaboration = ? WHERE id = ?";
    return store_exec_args(st, "elaboration", NULL, sql,
                           STORE_ARGS(STORE_TEXT(success_criteria), STORE_TEXT(allowed_actions),
                                      STORE_TEXT(verification), STORE_TEXT(elaboration),
                                      STORE_TEXT(id)));
}

int store_goal_set_nothing_to_do(store *st, const char *id, const char *elaboration,
                                 const char *reason)
{
    static const char sql[] = "UPDATE goals SET elaboration = ?, outcome = 'nothing_to_do',"
                              " outcome_reason = ?, branch = NULL WHERE id = ?";
    return store_exec_args(st, "elaboration", NULL, sql,
                           STORE_ARGS(STORE_TEXT(elaboration), STORE_TEXT(reason), STORE_TEXT(id)));
}

static void budget_fill(store_stmt *s, void *ctx)
{
    struct budget_facts *out = ctx;

    out->has_max_tokens = !store_col_null(s, 0);
    out->has_max_cost = !store_col_null(s, 1);
    out->has_max_hours = !store_col_null(s, 2);
    out->max_tokens = store_col_i64(s, 0);
    out->max_cost_usd = store_col_double(s, 1);
    out->max_hours = store_col_double(s, 2);
    out->spent_tokens = store_col_i64(s, 3);
    out->spent_cost_usd = store_col_double(s, 4);
    out->spent_wall_ms = store_col_i64(s, 5);
}

int store_goal_budget_get(store *st, const char *id, struct budget_facts *out)
{
    static const char sql[] =
        "SELECT budget_max_tokens, budget_max_cost_usd, budget_max_hours, spent_tokens,"
        " spent_cost_usd, spent_wall_ms FROM goals WHERE id = ?";
    int found;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_get_row(st, NULL, budget_fill, out, &found, sql, STORE_ARGS(STORE_TEXT(id)));
    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "goal %s: not found", id);
    return rc;
}

struct fresh_out {
    char *status;
    size_t n;
    int *never_elaborated;
};

static void fresh_fill(store_stmt *s, void *ctx)
{
    const struct fresh_out *f = ctx;

    store_col_copy(f->status, f->n, s, 0);
    if (f->never_elaborated)
        *f->never_elaborated = store_col_int(s, 1);
}

int store_goal_status_fresh(store *st, const char *id, char *status, size_t n,
                            int *never_elaborated)
{
    struct fresh_out out = {status, n, never_elaborated};
    int found;

    status[0] = '\0';
    if (never_elaborated)
        *never_elaborated = 0;
    return store_get_row(st, NULL, fresh_fill, &out, &found,
                         "SELECT status, elaboration IS NULL FROM goals WHERE id = ?",
                         STORE_ARGS(STORE_TEXT(id)));
}

int store_goal_budget_raise(store *st, const char *id, double max_tokens, double max_cost_usd,
                            double max_hours)
{
    static const char sql[] =
        "UPDATE goals SET budget_max_tokens = CASE WHEN ?1 > 0 THEN CAST(?1 AS INTEGER)"
        " ELSE budget_max_tokens END, budget_max_cost_usd = CASE WHEN ?2 > 0 THEN ?2"
        " ELSE budget_max_cost_usd END, budget_max_hours = CASE WHEN ?3 > 0 THEN ?3"
        " ELSE budget_max_hours END WHERE id = ?4";
    return store_exec_args(st, "budget", NULL, sql,
                           STORE_ARGS(STORE_DOUBLE(max_tokens), STORE_DOUBLE(max_cost_usd),
                                      STORE_DOUBLE(max_hours), STORE_TEXT(id)));
}

int store_goal_set_partial_rearm(store *st, const char *id)
{
    return store_exec_id(st,
                         "UPDATE goals SET partial = 1, attempts = 0, next_attempt_at = 0"
                         " WHERE id = ?1",
                         id, "resolve");
}

int store_goal_publish_skip_push(store *st, const char *id)
{
    static const char q_lite[] = "UPDATE goals SET publish = json_set(coalesce(publish, '{}'),"
                                 " '$.push', json('false'), '$.pull_request', json('false')),"
                                 " attempts = 0, next_attempt_at = 0 WHERE id = ?1";
    static const char q_pg[] = "UPDATE goals SET publish = (coalesce(publish, '{}')::jsonb"
                               " || '{\"push\": false, \"pull_request\": false}'::jsonb)::text,"
                               " attempts = 0, next_attempt_at = 0 WHERE id = ?1";

    return store_exec_id(st, store_sql(st, q_lite, q_pg), id, "resolve");
}

int store_goal_attempts_rearm(store *st, const char *id)
{
    return store_exec_id(st, "UPDATE goals SET attempts = 0, next_attempt_at = 0 WHERE id = ?1", id,
                         "resolve");
}

int store_goal_set_next_attempt(store *st, const char *id, int64_t at_ms)
{
    static const char sql[] = "UPDATE goals SET next_attempt_at = ? WHERE id = ?";
    return store_exec_args(st, "recover", NULL, sql, STORE_ARGS(STORE_I64(at_ms), STORE_TEXT(id)));
}

int store_goal_open_instance(store *st, const char *template_id, char out[ID_SIZE])
{
    static const char q_open[] =
        "SELECT id FROM goals WHERE parent_id = ? AND status IN ('queued','active','blocked')"
        " LIMIT 1";
    return store_peek_text(st, out, ID_SIZE, q_open, STORE_ARGS(STORE_TEXT(template_id)));
}
