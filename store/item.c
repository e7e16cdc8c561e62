#include "store/item.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

/* The columns of work_items, the only place they are listed (internal.h:
 * STORE_COLS): each fills the member of struct work_item of its name, as
 * its kind; the third is what store_item_insert() binds for it. */
#define ITEM_COLUMNS(FIRST, NEXT)                                                                  \
    FIRST(id, COPY, STORE_TEXT(row->id))                                                           \
    NEXT(goal_id, COPY, STORE_TEXT(row->goal_id))                                                  \
    NEXT(key, RAW, STORE_TEXT(row->key))                                                           \
    NEXT(title, RAW, STORE_TEXT(row->title))                                                       \
    NEXT(description, RAW, STORE_TEXT(row->description ? row->description : ""))                   \
    NEXT(type, RAW, STORE_TEXT(row->type ? row->type : "code"))                                    \
    NEXT(status, RAW, STORE_TEXT(row->status ? row->status : "queued"))                            \
    NEXT(priority, INT, STORE_I64(row->priority))                                                  \
    NEXT(effort, RAW, STORE_TEXT(row->effort ? row->effort : "M"))                                 \
    NEXT(critical, INT, STORE_I64(row->critical))                                                  \
    NEXT(attempts, INT, STORE_I64(row->attempts))                                                  \
    NEXT(tier, INT, STORE_I64(row->tier > 0 ? row->tier : 1))                                      \
    NEXT(max_retries, INT, STORE_I64(row->max_retries > 0 ? row->max_retries : 3))                 \
    NEXT(model_index, INT, STORE_I64(row->model_index))                                            \
    NEXT(next_attempt_at, I64, STORE_I64(row->next_attempt_at))                                    \
    NEXT(timeout_s, INT, row->timeout_s > 0 ? STORE_I64(row->timeout_s) : STORE_NULL)              \
    NEXT(strategy, RAW, STORE_TEXT(row->strategy))                                                 \
    NEXT(human_input, RAW, STORE_TEXT(row->human_input))                                           \
    NEXT(question, RAW, STORE_TEXT(row->question))                                                 \
    NEXT(summary, RAW, STORE_TEXT(row->summary))                                                   \
    NEXT(verified, OPT_INT, store_arg_opt_i64(row->verified))                                      \
    NEXT(commit_sha, RAW, STORE_TEXT(row->commit_sha))                                             \
    NEXT(created_at, I64, STORE_I64(now))                                                          \
    NEXT(updated_at, I64, STORE_I64(now))                                                          \
    NEXT(started_at, OPT_I64, STORE_NULL)                                                          \
    NEXT(ended_at, OPT_I64, STORE_NULL)                                                            \
    NEXT(criteria, RAW, STORE_TEXT(row->criteria))                                                 \
    NEXT(position, INT, row->position > 0 ? STORE_I64(row->position) : STORE_NULL)

#define ITEM_COLS STORE_COLS(ITEM_COLUMNS)

/* The column numbers of ITEM_COLS. */
#define ITEM_COL(member, kind, value) ITEM_COL_##member,
enum item_col { ITEM_COLUMNS(ITEM_COL, ITEM_COL) };

int item_effort_points(const char *effort)
{
    static const struct {
        const char *effort;
        int points;
    } points[] = {{"S", 1}, {"M", 3}, {"L", 5}, {"XL", 8}};

    for (size_t i = 0; effort && i < sizeof(points) / sizeof(points[0]); i++)
        if (!strcmp(effort, points[i].effort))
            return points[i].points;
    return 0;
}

int store_item_insert(store *st, struct work_item *wi)
{
    static const char sql[] = "INSERT INTO work_items(" ITEM_COLS ") VALUES ("
                              STORE_PLACEHOLDERS(ITEM_COLUMNS) ")";
    const struct work_item *row = wi;
    int64_t now = time_now_ms();

    wi->created_at = wi->updated_at = now;
    return store_exec_args(st, "insert work item", NULL, sql,
                           STORE_ARGS(STORE_VALUES(ITEM_COLUMNS)));
}

int store_item_dep_add(store *st, const char *item_id, const char *depends_on_id,
                       const char *condition)
{
    static const char sql[] =
        "INSERT INTO work_item_deps(item_id, depends_on_id, condition) VALUES (?, ?, ?)";
    return store_exec_args(st, "insert dependency", NULL, sql,
                           STORE_ARGS(STORE_TEXT(item_id), STORE_TEXT(depends_on_id),
                                      STORE_TEXT(condition ? condition : "done_or_skipped")));
}

struct key_each {
    int (*fn)(const char *key, void *ctx);
    void *ctx;
};

static int key_row(store_stmt *s, void *ctx)
{
    const struct key_each *h = ctx;

    return h->fn(store_col_raw(s, 0), h->ctx);
}

int store_item_dep_keys_each(store *st, const char *item_id, int (*fn)(const char *key, void *ctx),
                             void *ctx)
{
    static const char q_deps[] =
        "SELECT w.key FROM work_item_deps d JOIN work_items w ON w.id = d.depends_on_id"
        " WHERE d.item_id = ? ORDER BY w.created_at, w.rowid";
    struct key_each h = {fn, ctx};

    return store_each_row(st, "dependencies", key_row, &h, q_deps, STORE_ARGS(STORE_TEXT(item_id)));
}

/* Where each of ITEM_COLS goes in a struct work_item. */
#define ITEM_FIELD(member, kind, value)                                                            \
    STORE_FIELD(struct work_item, member, kind, ITEM_COL_##member),
static const struct store_field item_fields[] = {ITEM_COLUMNS(ITEM_FIELD, ITEM_FIELD)};

/* store_row_fn: a new work item (copied strings) into *(struct work_item **)ctx. */
static void item_fill(store_stmt *s, void *ctx)
{
    struct work_item **out = ctx;

    *out = store_fields_dup(s, sizeof(**out), STORE_FIELDS(item_fields));
}

int store_item_get(store *st, const char *id, struct work_item **out)
{
    static const char sql[] = "SELECT " ITEM_COLS " FROM work_items WHERE id = ?";

    return store_get_by_id(st, "work item", item_fill, out, sql, id);
}

void store_item_free(struct work_item *wi)
{
    if (!wi)
        return;
    store_fields_free(wi, STORE_FIELDS(item_fields));
    free(wi);
}

int store_item_each(store *st, const char *goal_id,
                    int (*fn)(const struct work_item *wi, void *ctx), void *ctx)
{
    struct work_item row;
    struct store_iter it;
    int rc;
    static const char sql[] =
        "SELECT " ITEM_COLS " FROM work_items WHERE goal_id = ? ORDER BY created_at, rowid";
    store_iter_begin(&it, st, "work items", sql, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, item_fields))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

struct effort_each {
    int (*fn)(const char *effort, const char *status, int64_t n, void *ctx);
    void *ctx;
};

static int effort_row(store_stmt *s, void *ctx)
{
    const struct effort_each *h = ctx;

    return h->fn(store_col_raw(s, 0), store_col_raw(s, 1), store_col_i64(s, 2), h->ctx);
}

int store_item_count_by_effort_status(store *st, const char *goal_id,
                                      int (*fn)(const char *effort, const char *status, int64_t n,
                                                void *ctx),
                                      void *ctx)
{
    /* a handful of rows (efforts x statuses); points are mapped by the caller */
    static const char sql[] = "SELECT effort, status, count(*) FROM work_items"
                              " WHERE goal_id = ? GROUP BY effort, status";
    struct effort_each h = {fn, ctx};

    return store_each_row(st, "progress", effort_row, &h, sql, STORE_ARGS(STORE_TEXT(goal_id)));
}

int store_item_get_by_key(store *st, const char *goal_id, const char *key, struct work_item **out)
{
    static const char sql[] = "SELECT " ITEM_COLS " FROM work_items WHERE goal_id = ? AND key = ?";
    int found;
    int rc = store_get_row(st, "work item", item_fill, out, &found, sql,
                           STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(key)));

    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "goal %s has no work item \"%s\"", goal_id, key);
    return rc;
}

static void counts_fill(store_stmt *s, void *ctx)
{
    int **ab = ctx;

    *ab[0] = store_col_int(s, 0);
    *ab[1] = store_col_int(s, 1);
}

/* The two counts sql selects for goal_id (NULL counts as 0). */
static int item_counts(store *st, const char *sql, const char *goal_id, int *a, int *b)
{
    int *ab[2] = {a, b};
    int found;
    int rc = store_get_row(st, "count work items", counts_fill, ab, &found, sql,
                           STORE_ARGS(STORE_TEXT(goal_id)));

    return rc == 0 && !found ? store_err(st, "count work items") : rc;
}

int store_item_count_finished(store *st, const char *goal_id, int *total, int *finished)
{
    static const char sql[] =
        "SELECT count(*), sum(CASE WHEN status IN ('done', 'skipped') THEN 1 ELSE 0 END)"
        " FROM work_items WHERE goal_id = ?";

    return item_counts(st, sql, goal_id, total, finished);
}

int store_item_count_done_verified(store *st, const char *goal_id, int *total, int *verified)
{
    static const char sql[] =
        "SELECT count(*), sum(CASE WHEN status = 'done' AND verified = 1 THEN 1 ELSE 0 END)"
        " FROM work_items WHERE goal_id = ?";

    return item_counts(st, sql, goal_id, total, verified);
}

int store_item_set_summary(store *st, const char *id, const char *summary)
{
    static const char sql[] = "UPDATE work_items SET summary = ? WHERE id = ?";
    return store_exec_args(st, "summary", NULL, sql,
                           STORE_ARGS(STORE_TEXT(summary), STORE_TEXT(id)));
}

int store_item_set_verified(store *st, const char *id, int verified, const char *commit_sha)
{
    static const char sql[] = "UPDATE work_items SET verified = ?, commit_sha = ?"
                              " WHERE id = ?";
    return store_exec_args(
        st, "verified", NULL, sql,
        STORE_ARGS(store_arg_opt_i64(verified), STORE_TEXT(commit_sha), STORE_TEXT(id)));
}

int store_item_set_question(store *st, const char *id, const char *question)
{
    static const char sql[] = "UPDATE work_items SET question = ?, updated_at = ? WHERE id = ?";
    return store_exec_args(
        st, "ask_human", NULL, sql,
        STORE_ARGS(STORE_TEXT(question), STORE_I64(time_now_ms()), STORE_TEXT(id)));
}

int store_item_count_unfinished_others(store *st, const char *goal_id, const char *except_id,
                                       int *n)
{
    static const char q[] =
        "SELECT count(*) FROM work_items WHERE goal_id = ? AND id <> ?"
        " AND status IN ('queued', 'ready', 'in_progress', 'verify', 'blocked')";
    int64_t v = 0;
    int found;
    int rc = store_get_int64(st, NULL, &v, &found, q,
                             STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(except_id)));

    *n = (int)v;
    return rc;
}

int store_item_count_live_others(store *st, const char *goal_id, const char *except_id,
                                    int *n)
{
    static const char q[] = "SELECT count(*) FROM work_items WHERE goal_id = ? AND id <> ?"
                            " AND status IN ('ready', 'in_progress', 'verify')";
    int64_t v = 0;
    int found;
    int rc = store_get_int64(st, NULL, &v, &found, q,
                             STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(except_id)));

    *n = (int)v;
    return rc;
}

int store_item_attempts_inc(store *st, const char *id)
{
    static const char upd[] = "UPDATE work_items SET attempts = attempts + 1 WHERE id = ?";
    return store_exec_id(st, upd, id, "claim");
}

int store_item_status_get(store *st, const char *id, int *found, char status[32],
                          char goal_id[ID_SIZE])
{
    static const char sql[] = "SELECT status, goal_id, id, NULL FROM work_items WHERE id = ?";
    const struct store_text_col cols[] = {{status, 32}, {goal_id, ID_SIZE}};

    return store_get_texts(st, "work item", cols, 2, found, sql, STORE_ARGS(STORE_TEXT(id)));
}

/* In a transaction: the trigger that counts the goal's open items
 * (migration 0019) takes the store's write lock, and takes it first. */
int store_item_status_set(store *st, const char *id, const char *from, const char *to, int terminal,
                          int64_t now_ms, int *changed)
{
    int rc;

    *changed = 0;
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    rc = store_status_set(st, STORE_STATUS_STAMPED_SQL("work_items", "in_progress"), id, from, to,
                          terminal, now_ms, changed);
    if ((rc = store_tx_end(st, rc)) != 0)
        *changed = 0;
    return rc;
}

int store_item_ids_promotable(store *st, const char *goal_id, char (**out)[ID_SIZE], size_t *n)
{
    static const char sql[] =
        "SELECT w.id FROM work_items w WHERE w.goal_id = ? AND w.status = 'queued'"
        " AND NOT EXISTS (SELECT 1 FROM work_item_deps d JOIN work_items x"
        " ON x.id = d.depends_on_id WHERE d.item_id = w.id AND NOT ("
        " x.status = 'done' OR (x.status = 'skipped' AND d.condition = 'done_or_skipped')))"
        " ORDER BY w.created_at, w.rowid";

    return store_ids(st, sql, goal_id, out, n);
}

int store_item_ids_waiting(store *st, const char *goal_id, char (**out)[ID_SIZE], size_t *n)
{
    static const char q[] = "SELECT id FROM work_items WHERE goal_id = ? AND status IN"
                            " ('queued','ready','blocked','escalated')";

    return store_ids(st, q, goal_id, out, n);
}

int store_item_ids_unfinished(store *st, const char *goal_id, char (**out)[ID_SIZE], size_t *n)
{
    static const char sql[] =
        "SELECT id FROM work_items WHERE goal_id = ? AND status IN"
        " ('queued','ready','in_progress','blocked','escalated') ORDER BY created_at, rowid";

    return store_ids(st, sql, goal_id, out, n);
}

int store_item_recovery_restart(store *st, const char *id, const char *input, int alternative,
                                int64_t now_ms)
{
    static const char sql[] =
        "UPDATE work_items SET tier = 1, recovery_epoch = ?3, next_attempt_at = 0,"
        " question = NULL, human_input = CASE WHEN ?4 = 'alternative' THEN human_input"
        " ELSE coalesce(?1, human_input) END, strategy = CASE WHEN ?4 = 'alternative'"
        " THEN ?1 ELSE strategy END WHERE id = ?2";
    return store_exec_args(st, "resolve", NULL, sql,
                           STORE_ARGS(STORE_TEXT(input), STORE_TEXT(id), STORE_I64(now_ms),
                                      STORE_TEXT(alternative ? "alternative" : "")));
}

int store_item_set_recovery(store *st, const char *id, int tier, int model_index,
                            int64_t next_attempt_at, const char *strategy)
{
    static const char sql[] = "UPDATE work_items SET tier = ?, model_index = ?,"
                              " next_attempt_at = ?, strategy = coalesce(?, strategy),"
                              " updated_at = ? WHERE id = ?";
    return store_exec_args(st, "recover", NULL, sql,
                           STORE_ARGS(STORE_I64(tier), STORE_I64(model_index),
                                      STORE_I64(next_attempt_at), STORE_TEXT(strategy),
                                      STORE_I64(time_now_ms()), STORE_TEXT(id)));
}

/* The run of equal error signatures store_item_recovery_counts() counts
 * from the latest run back. */
struct same_run {
    char first[65];
    int n;
};

static int same_row(store_stmt *s, void *ctx)
{
    struct same_run *r = ctx;
    const char *sig = store_col_raw(s, 0);

    if (r->n == 0)
        /* truncation: ok, a 64-hex signature; a cut one would match nothing */
        snprintf(r->first, sizeof(r->first), "%s", sig);
    if (!sig[0] || strcmp(sig, r->first) != 0)
        return 1;
    r->n++;
    return 0;
}

int store_item_recovery_counts(store *st, const char *id, int tier, int *failures, int *same)
{
    /* runs before a human's resolution (recovery_epoch) do not count */
    static const char q1[] = "SELECT count(*) FROM runs r WHERE item_id = ?1 AND kind = 'execute'"
                             " AND tier = ?2 AND status IN ('failed','timeout','aborted')"
                             " AND coalesce(error_class, '') <> 'conflict'"
                             " AND created_at >= (SELECT recovery_epoch FROM work_items"
                             " WHERE id = ?1)";
    static const char q2[] = "SELECT coalesce(error_signature, '') FROM runs WHERE item_id = ?1"
                             " AND kind = 'execute' AND status <> 'running'"
                             " AND created_at >= (SELECT recovery_epoch FROM work_items"
                             " WHERE id = ?1)"
                             " ORDER BY created_at DESC, rowid DESC LIMIT 10";
    struct same_run run = {"", 0};
    int64_t v = 1;
    int found;
    int rc = store_get_int64(st, NULL, &v, &found, q1, STORE_ARGS(STORE_TEXT(id), STORE_I64(tier)));

    if (rc)
        return rc;
    *failures = (int)v;
    if ((rc = store_each_row(st, NULL, same_row, &run, q2, STORE_ARGS(STORE_TEXT(id)))) < 0)
        return rc;
    *same = run.n;
    return 0;
}

int store_item_repeats_answered(store *st, const char *id, int *repeats)
{
    /* the latest execute run since the human's resolution against the
     * latest failed one before it, for an item a human gave input to */
    static const char q[] =
        "SELECT count(*) FROM work_items w WHERE w.id = ?1 AND w.human_input IS NOT NULL"
        " AND coalesce((SELECT error_signature FROM runs WHERE item_id = ?1 AND kind = 'execute'"
        " AND status <> 'running' AND created_at >= w.recovery_epoch"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1), '') <> ''"
        " AND (SELECT error_signature FROM runs WHERE item_id = ?1 AND kind = 'execute'"
        " AND status <> 'running' AND created_at >= w.recovery_epoch"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1) ="
        " (SELECT error_signature FROM runs WHERE item_id = ?1 AND kind = 'execute'"
        " AND status <> 'running' AND coalesce(error_signature, '') <> ''"
        " AND created_at < w.recovery_epoch"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1)";
    int64_t v = 0;
    int found, rc = store_get_int64(st, NULL, &v, &found, q, STORE_ARGS(STORE_TEXT(id)));

    *repeats = rc == 0 && v > 0;
    return rc;
}

int store_item_set_timeout(store *st, const char *id, int timeout_s)
{
    static const char dbl[] = "UPDATE work_items SET timeout_s = ? WHERE id = ?";
    return store_exec_args(st, "timeout", NULL, dbl,
                           STORE_ARGS(STORE_I64(timeout_s), STORE_TEXT(id)));
}

struct owed_out {
    int *owed;
    char *cls;
    size_t cls_n;
    char **cause;
};

static void owed_fill(store_stmt *s, void *ctx)
{
    const struct owed_out *o = ctx;

    if (store_col_int(s, 0) != 1)
        return;
    *o->owed = 1;
    if (o->cls && o->cls_n)
        /* truncation: ok, an error class, shown */
        snprintf(o->cls, o->cls_n, "%s", store_col_raw(s, 1));
    if (o->cause)
        *o->cause = store_col_strdup(s, 2);
}

int store_item_plan_b_owed(store *st, const char *id, int *owed, char *cls, size_t cls_n,
                           char **cause)
{
    static const char q[] =
        "SELECT CAST(coalesce(json_extract(e.payload, '$.pending'), '0') AS BIGINT),"
        " coalesce(json_extract(e.payload, '$.error_class'), ''),"
        " coalesce(json_extract(e.payload, '$.cause'), '') FROM events e"
        " JOIN work_items w ON w.id = e.item_id AND w.tier = 3"
        " WHERE e.item_id = ? AND e.type = 'recovery.plan_b' ORDER BY e.id DESC LIMIT 1";
    struct owed_out out = {owed, cls, cls_n, cause};
    int found;

    *owed = 0;
    if (cause)
        *cause = NULL;
    return store_get_row(st, NULL, owed_fill, &out, &found, q, STORE_ARGS(STORE_TEXT(id)));
}

static void held_fill(store_stmt *s, void *ctx)
{
    struct store_item_held *h = ctx;

    store_col_copy(h->item_id, sizeof(h->item_id), s, 0);
    store_col_copy(h->run_id, sizeof(h->run_id), s, 1);
    h->pid = (long)store_col_i64(s, 2);
    store_col_copy(h->node_id, sizeof(h->node_id), s, 3);
    h->ended_at = store_col_i64(s, 4);
}

int store_item_list_held_idle(store *st, struct store_item_held **out, size_t *n)
{
    static const char sql[] =
        "SELECT w.id, coalesce(r.id, ''), coalesce(r.pid, 0), coalesce(r.node_id, ''),"
        " coalesce(r.ended_at, 0) FROM work_items w LEFT JOIN runs r ON r.id ="
        " (SELECT x.id FROM runs x WHERE x.item_id = w.id ORDER BY x.created_at DESC LIMIT 1)"
        " WHERE w.status IN ('in_progress', 'verify') AND NOT EXISTS"
        " (SELECT 1 FROM runs y WHERE y.goal_id = w.goal_id AND y.status = 'running')";

    return store_rows_alloc(st, "held items", (void **)out, n, STORE_ROW_SHAPE(**out, held_fill),
                            sql, NULL, 0);
}

/* store_row_fn: a row of store_item_runs_ahead() into
 * (struct store_run_ahead *)ctx. */
static void ahead_fill(store_stmt *s, void *ctx)
{
    struct store_run_ahead *a = ctx;

    store_col_copy(a->run_id, sizeof(a->run_id), s, 0);
    store_col_copy(a->item_key, sizeof(a->item_key), s, 1);
    a->pid = (long)store_col_i64(s, 2);
    store_col_copy(a->node_id, sizeof(a->node_id), s, 3);
    a->lease_until = store_col_i64(s, 4);
}

int store_item_runs_ahead(store *st, const char *goal_id, int position,
                          struct store_run_ahead *rows, int max, int *n)
{
    static const char q[] =
        "SELECT r.id, w.key, coalesce(r.pid, 0), coalesce(r.node_id, ''),"
        " coalesce(r.lease_until, 0) FROM work_items w JOIN runs r ON r.item_id = w.id"
        " WHERE w.goal_id = ? AND w.position < ? AND w.status IN ('in_progress', 'verify')"
        " AND r.status = 'running' AND r.kind = 'execute' ORDER BY w.position, r.id";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, ahead_fill), q,
                           STORE_ARGS(STORE_TEXT(goal_id), STORE_I64(position)));
}
