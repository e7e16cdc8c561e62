/* gate_result.c - the gate_results table (see gate_result.h). */
#include "store/gate_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define GATE(member, kind, col) STORE_FIELD(struct store_gate_result, member, kind, col)

int store_gate_result_each_latest_of_item(store *st, const char *item_id,
                                          int (*fn)(const struct store_gate_result *g, void *ctx),
                                          void *ctx)
{
    struct store_gate_result row;
    struct store_iter it;
    int rc;
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1), coalesce(classification, ''), tests_passed,"
        " tests_failed, coalesce(output_tail, ''), coalesce(output_hash, ''), coalesce(tree_id, "
        "''),"
        " run_id FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results"
        " WHERE item_id = ?1 AND run_id = (SELECT run_id FROM gate_results WHERE item_id = ?1"
        " ORDER BY id DESC LIMIT 1) GROUP BY name, tree_id) ORDER BY id";
    static const struct store_field cols[] = {
        GATE(name, RAW, 0),           GATE(passed, INT, 1),      GATE(exit_code, INT, 2),
        GATE(classification, RAW, 3), GATE(counted, SET, 4),     GATE(tests_passed, INT, 4),
        GATE(tests_failed, INT, 5),   GATE(output_tail, RAW, 6), GATE(output_hash, RAW, 7),
        GATE(tree_id, RAW, 8),        GATE(run_id, RAW, 9),
    };

    store_iter_begin(&it, st, "gate results", q_gates, STORE_ARGS(STORE_TEXT(item_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

int store_gate_result_each_latest_of_goal(store *st, const char *goal_id,
                                          int (*fn)(const struct store_gate_result *g, void *ctx),
                                          void *ctx)
{
    struct store_gate_result row;
    struct store_iter it;
    int rc;
    static const char q_gates[] =
        "SELECT w.key, g.name, g.passed, coalesce(g.exit_code, -1), coalesce(g.classification, ''),"
        " g.tests_passed, g.tests_failed, g.output_hash FROM gate_results g"
        " JOIN work_items w ON w.id = g.item_id WHERE g.id IN (SELECT max(id) FROM gate_results"
        " WHERE goal_id = ? GROUP BY item_id, name) ORDER BY w.created_at, g.name";
    static const struct store_field cols[] = {
        GATE(item_key, RAW, 0),     GATE(name, RAW, 1),           GATE(passed, INT, 2),
        GATE(exit_code, INT, 3),    GATE(classification, RAW, 4), GATE(counted, SET, 5),
        GATE(tests_passed, INT, 5), GATE(tests_failed, INT, 6),   GATE(output_hash, RAW, 7),
    };

    store_iter_begin(&it, st, "gate results", q_gates, STORE_ARGS(STORE_TEXT(goal_id)));
    while ((rc = store_iter_next(&it, STORE_INTO(&row, cols))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
}

static void tree_hit_fill(store_stmt *s, void *ctx)
{
    struct store_gate_tree_hit *h = ctx;

    store_col_copy(h->run_id, sizeof(h->run_id), s, 0);
    store_col_copy(h->output_hash, sizeof(h->output_hash), s, 1);
    h->passed = store_col_int(s, 2);
    h->reusable = store_col_int(s, 3);
    h->exit_code = store_col_int(s, 4);
    h->duration_ms = store_col_i64(s, 5);
    h->format = store_col_strdup(s, 6);
    h->cases = store_col_strdup(s, 7);
    h->output_tail = store_col_strdup(s, 8);
}

int store_gate_tree_run_get(store *st, const struct store_gate_tree_run *key,
                            struct store_gate_tree_hit *out, int *found)
{
    static const char q[] =
        "SELECT coalesce(run_id, ''), coalesce(output_hash, ''), passed, reusable,"
        " coalesce(exit_code, -1), coalesce(duration_ms, 0), format, cases,"
        " coalesce(output_tail, '') FROM gate_tree_runs"
        " WHERE goal_id = ? AND gate = ? AND command = ? AND env = ? AND tree_id = ?";

    memset(out, 0, sizeof(*out));
    return store_get_row(st, "gate tree runs", tree_hit_fill, out, found, q,
                         STORE_ARGS(STORE_TEXT(key->goal_id), STORE_TEXT(key->gate),
                                    STORE_TEXT(key->command), STORE_TEXT(key->env),
                                    STORE_TEXT(key->tree_id)));
}

void store_gate_tree_hit_release(struct store_gate_tree_hit *h)
{
    free(h->format);
    free(h->cases);
    free(h->output_tail);
    memset(h, 0, sizeof(*h));
}

int store_gate_tree_run_put(store *st, const struct store_gate_tree_run *r)
{
    /* the first run stays: a later run of the same gate on the same tree
     * (a re-run that passed after a failure) is never recorded over it */
    static const char ins[] =
        "INSERT INTO gate_tree_runs(goal_id, gate, command, env, tree_id, run_id, passed,"
        " reusable, exit_code, format, cases, output_hash, output_tail, duration_ms, created_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (goal_id, gate, command, env, tree_id) DO NOTHING";

    return store_exec_args(
        st, "gate tree run", NULL, ins,
        STORE_ARGS(STORE_TEXT(r->goal_id), STORE_TEXT(r->gate), STORE_TEXT(r->command),
                   STORE_TEXT(r->env), STORE_TEXT(r->tree_id), STORE_TEXT(r->run_id),
                   STORE_I64(r->passed), STORE_I64(r->reusable), STORE_I64(r->exit_code),
                   STORE_TEXT(r->format), STORE_TEXT(r->cases ? r->cases : "[]"),
                   STORE_TEXT(r->output_hash), STORE_TEXT(r->output_tail),
                   STORE_I64(r->duration_ms),
                   STORE_I64(time_now_ms())));
}

int store_gate_result_insert(store *st, const struct store_gate_row *r, int64_t *id_out)
{
    static const char sql[] =
        "INSERT INTO gate_results(goal_id, item_id, run_id, name, type, command, must_pass,"
        " passed, exit_code, duration_ms, output_tail, output_hash, tree_id, classification,"
        " tests_passed, tests_failed, tests_skipped, tests_total, created_at, tests_format, note)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id";
    return store_exec_insert(
        st, "gate result", id_out, sql,
        STORE_ARGS(STORE_TEXT(r->goal_id), STORE_TEXT(r->item_id), STORE_TEXT(r->run_id),
                   STORE_TEXT(r->name), STORE_TEXT(r->type), STORE_TEXT(r->command),
                   STORE_I64(r->must_pass), STORE_I64(r->passed), STORE_I64(r->exit_code),
                   STORE_I64(r->duration_ms), STORE_TEXT(r->output_tail),
                   STORE_TEXT(r->output_hash), STORE_TEXT(r->tree_id),
                   STORE_TEXT(r->classification), store_arg_opt_i64(r->tests_passed),
                   store_arg_opt_i64(r->tests_failed), store_arg_opt_i64(r->tests_skipped),
                   store_arg_opt_i64(r->tests_total), STORE_I64(time_now_ms()),
                   STORE_TEXT(r->tests_format), STORE_TEXT(r->note)));
}

int store_gate_result_set_note(store *st, int64_t id, const char *note)
{
    static const char sql[] = "UPDATE gate_results SET note = ? WHERE id = ?";
    return store_exec_args(st, "gate result", NULL, sql,
                           STORE_ARGS(STORE_TEXT(note), STORE_I64(id)));
}

int store_gate_case_insert(store *st, int64_t gate_result_id, const char *name, const char *status,
                           const char *file)
{
    static const char sql[] =
        "INSERT INTO gate_cases(gate_result_id, name, status, file) VALUES (?,?,?,?)";
    return store_exec_args(st, "gate case", NULL, sql,
                           STORE_ARGS(STORE_I64(gate_result_id), STORE_TEXT(name),
                                      STORE_TEXT(status), STORE_TEXT(file)));
}

int store_gate_result_format(store *st, int64_t id, char **format_out)
{
    static const char sql[] = "SELECT tests_format FROM gate_results WHERE id = ?";
    int found;
    int rc;

    rc = store_get_strdup(st, "gate result", format_out, &found, sql, STORE_ARGS(STORE_I64(id)));
    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "gate result %lld: not found", (long long)id);
    return rc;
}

struct cases_each {
    int (*fn)(const char *name, const char *status, const char *file, void *ctx);
    void *ctx;
};

static int case_row(store_stmt *s, void *ctx)
{
    const struct cases_each *h = ctx;

    return h->fn(store_col_raw(s, 0), store_col_raw(s, 1), store_col_raw(s, 2), h->ctx);
}

int store_gate_cases_each(store *st, int64_t gate_result_id,
                          int (*fn)(const char *name, const char *status, const char *file,
                                    void *ctx),
                          void *ctx)
{
    static const char sql[] =
        "SELECT name, status, file FROM gate_cases WHERE gate_result_id = ? ORDER BY rowid";
    struct cases_each h = {fn, ctx};

    return store_each_row(st, "gate cases", case_row, &h, sql,
                          STORE_ARGS(STORE_I64(gate_result_id)));
}

struct failed_each {
    int (*fn)(const char *name, int exit_code, const char *output_tail, void *ctx);
    void *ctx;
};

static int failed_row(store_stmt *s, void *ctx)
{
    const struct failed_each *h = ctx;

    return h->fn(store_col_raw(s, 0), store_col_int(s, 1), store_col_raw(s, 2), h->ctx);
}

int store_gate_result_failed_last_run_each(store *st, const char *item_id,
                                           int (*fn)(const char *name, int exit_code,
                                                     const char *output_tail, void *ctx),
                                           void *ctx)
{
    static const char sql[] =
        "SELECT name, exit_code, output_tail FROM gate_results WHERE item_id = ? AND passed = 0"
        " AND coalesce(classification, 'introduced') = 'introduced' AND run_id = (SELECT run_id"
        " FROM gate_results WHERE item_id = ? ORDER BY id DESC LIMIT 1) ORDER BY id";
    struct failed_each h = {fn, ctx};

    return store_each_row(st, NULL, failed_row, &h, sql,
                          STORE_ARGS(STORE_TEXT(item_id), STORE_TEXT(item_id)));
}

struct baseline_out {
    int *passed;
    char **format, **cases;
};

static void baseline_fill(store_stmt *s, void *ctx)
{
    const struct baseline_out *b = ctx;

    *b->passed = store_col_int(s, 0);
    *b->format = store_col_strdup(s, 1);
    *b->cases = store_col_strdup(s, 2);
}

int store_gate_baseline_get(store *st, const struct store_gate_baseline *key, int *found,
                            int *passed, char **format, char **cases)
{
    static const char q[] = "SELECT passed, format, cases FROM gate_baselines WHERE goal_id = ?"
                            " AND gate = ? AND command = ? AND baseline = ?";
    struct baseline_out out = {passed, format, cases};

    *format = *cases = NULL;
    return store_get_row(st, NULL, baseline_fill, &out, found, q,
                         STORE_ARGS(STORE_TEXT(key->goal_id), STORE_TEXT(key->gate),
                                    STORE_TEXT(key->command), STORE_TEXT(key->baseline)));
}

int store_gate_baseline_put(store *st, const struct store_gate_baseline *b)
{
    static const char ins[] =
        "INSERT INTO gate_baselines(goal_id, gate, command, baseline, passed,"
        " exit_code, format, cases, output_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (goal_id, gate, command, baseline) DO UPDATE SET passed = excluded.passed,"
        " exit_code = excluded.exit_code, format = excluded.format, cases = excluded.cases,"
        " output_hash = excluded.output_hash, created_at = excluded.created_at";
    return store_exec_args(st, "gate baseline", NULL, ins,
                           STORE_ARGS(STORE_TEXT(b->goal_id), STORE_TEXT(b->gate),
                                      STORE_TEXT(b->command), STORE_TEXT(b->baseline),
                                      STORE_I64(b->passed), STORE_I64(b->exit_code),
                                      STORE_TEXT(b->format), STORE_TEXT(b->cases),
                                      STORE_TEXT(b->output_hash), STORE_I64(time_now_ms())));
}

struct latest_each {
    int (*fn)(const char *name, int passed, void *ctx);
    void *ctx;
};

static int latest_row(store_stmt *s, void *ctx)
{
    const struct latest_each *h = ctx;

    return h->fn(store_col_raw(s, 0), store_col_int(s, 1), h->ctx);
}

int store_gate_result_latest_by_item_each(store *st, const char *item_id,
                                          int (*fn)(const char *name, int passed, void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1) FROM gate_results WHERE id IN"
        " (SELECT max(id) FROM gate_results WHERE item_id = ? GROUP BY name) ORDER BY name";
    struct latest_each h = {fn, ctx};

    return store_each_row(st, NULL, latest_row, &h, q_gates, STORE_ARGS(STORE_TEXT(item_id)));
}
