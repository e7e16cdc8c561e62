/* gate_result.c - the gate_results table (see gate_result.h). */
#include "store/gate_result.h"

#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"

#define TXT(s, i) (store_col_raw((s), (i)))

/* Step s to its end, each row filled by fill and handed to fn; s is done
 * here. */
static int gate_result_rows(store *st, store_stmt *s,
                            void (*fill)(struct store_gate_result *g, store_stmt *s),
                            int (*fn)(const struct store_gate_result *g, void *ctx), void *ctx)
{
    int rc = 0;

    while (store_next_row(st, s, "gate results", &rc)) {
        struct store_gate_result g;
        memset(&g, 0, sizeof(g));
        fill(&g, s);
        if ((rc = fn(&g, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

static void fill_of_item(struct store_gate_result *g, store_stmt *s)
{
    g->name = TXT(s, 0);
    g->passed = store_col_int(s, 1);
    g->exit_code = store_col_int(s, 2);
    g->classification = TXT(s, 3);
    g->counted = !store_col_null(s, 4);
    g->tests_passed = store_col_int(s, 4);
    g->tests_failed = store_col_int(s, 5);
    g->output_tail = TXT(s, 6);
    g->output_hash = TXT(s, 7);
    g->tree_id = TXT(s, 8);
    g->run_id = TXT(s, 9);
}

int store_gate_result_each_latest_of_item(store *st, const char *item_id,
                                          int (*fn)(const struct store_gate_result *g, void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1), coalesce(classification, ''), tests_passed,"
        " tests_failed, coalesce(output_tail, ''), coalesce(output_hash, ''), coalesce(tree_id, "
        "''),"
        " run_id FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results"
        " WHERE item_id = ?1 AND run_id = (SELECT run_id FROM gate_results WHERE item_id = ?1"
        " ORDER BY id DESC LIMIT 1) GROUP BY name, tree_id) ORDER BY id";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q_gates, STORE_ARGS(STORE_TEXT(item_id)));

    if (rc)
        return rc;
    return gate_result_rows(st, s, fill_of_item, fn, ctx);
}

static void fill_of_goal(struct store_gate_result *g, store_stmt *s)
{
    g->item_key = TXT(s, 0);
    g->name = TXT(s, 1);
    g->passed = store_col_int(s, 2);
    g->exit_code = store_col_int(s, 3);
    g->classification = TXT(s, 4);
    g->counted = !store_col_null(s, 5);
    g->tests_passed = store_col_int(s, 5);
    g->tests_failed = store_col_int(s, 6);
    g->output_hash = TXT(s, 7);
}

int store_gate_result_each_latest_of_goal(store *st, const char *goal_id,
                                          int (*fn)(const struct store_gate_result *g, void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT w.key, g.name, g.passed, coalesce(g.exit_code, -1), coalesce(g.classification, ''),"
        " g.tests_passed, g.tests_failed, g.output_hash FROM gate_results g"
        " JOIN work_items w ON w.id = g.item_id WHERE g.id IN (SELECT max(id) FROM gate_results"
        " WHERE goal_id = ? GROUP BY item_id, name) ORDER BY w.created_at, g.name";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q_gates, STORE_ARGS(STORE_TEXT(goal_id)));

    if (rc)
        return rc;
    return gate_result_rows(st, s, fill_of_goal, fn, ctx);
}

/* A test count to bind: NULL when not counted (< 0). */
static struct store_arg count_arg(int v)
{
    return v < 0 ? STORE_NULL : STORE_I64(v);
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
        STORE_ARGS(
            STORE_TEXT(r->goal_id), STORE_TEXT(r->item_id), STORE_TEXT(r->run_id),
            STORE_TEXT(r->name), STORE_TEXT(r->type), STORE_TEXT(r->command),
            STORE_I64(r->must_pass), STORE_I64(r->passed), STORE_I64(r->exit_code),
            STORE_I64(r->duration_ms), STORE_TEXT(r->output_tail), STORE_TEXT(r->output_hash),
            STORE_TEXT(r->tree_id), STORE_TEXT(r->classification), count_arg(r->tests_passed),
            count_arg(r->tests_failed), count_arg(r->tests_skipped), count_arg(r->tests_total),
            STORE_I64(time_now_ms()), STORE_TEXT(r->tests_format), STORE_TEXT(r->note)));
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
    store_stmt *s;
    int rc, step;

    *format_out = NULL;
    if ((rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_I64(id)))) != 0)
        return rc;
    step = store_step(s);
    if (step == STORE_ROW)
        *format_out = store_col_strdup(s, 0);
    else if (step == STORE_DONE)
        rc = err_set(ERR_NOTFOUND, "gate result %lld: not found", (long long)id);
    else
        rc = store_err(st, "gate result");
    store_done(s);
    return rc;
}

int store_gate_cases_each(store *st, int64_t gate_result_id,
                          int (*fn)(const char *name, const char *status, const char *file,
                                    void *ctx),
                          void *ctx)
{
    static const char sql[] =
        "SELECT name, status, file FROM gate_cases WHERE gate_result_id = ? ORDER BY rowid";
    store_stmt *s;
    int rc, step = STORE_DONE;

    if ((rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_I64(gate_result_id)))) != 0)
        return rc;
    while (!rc && (step = store_step(s)) == STORE_ROW)
        rc = fn(store_col_raw(s, 0), store_col_raw(s, 1), store_col_raw(s, 2), ctx);
    if (!rc && step != STORE_DONE)
        rc = store_err(st, "gate cases");
    store_done(s);
    return rc;
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
    store_stmt *s;
    int rc;

    if ((rc = store_prepare_args(st, &s, sql,
                                 STORE_ARGS(STORE_TEXT(item_id), STORE_TEXT(item_id)))) != 0)
        return rc;
    while (!rc && store_step(s) == STORE_ROW)
        rc = fn(store_col_raw(s, 0), store_col_int(s, 1), store_col_raw(s, 2), ctx);
    store_done(s);
    return rc;
}

int store_gate_baseline_get(store *st, const char *goal_id, const char *gate, const char *command,
                            const char *baseline, int *found, int *passed, char **format,
                            char **cases)
{
    static const char q[] = "SELECT passed, format, cases FROM gate_baselines WHERE goal_id = ?"
                            " AND gate = ? AND command = ? AND baseline = ?";
    store_stmt *s;
    int rc;

    *found = 0;
    *format = *cases = NULL;
    if ((rc = store_prepare_args(st, &s, q,
                                 STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(gate),
                                            STORE_TEXT(command), STORE_TEXT(baseline)))) != 0)
        return rc;
    if (store_step(s) == STORE_ROW) {
        *found = 1;
        *passed = store_col_int(s, 0);
        *format = store_col_strdup(s, 1);
        *cases = store_col_strdup(s, 2);
    }
    store_done(s);
    return 0;
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

int store_gate_result_latest_by_item_each(store *st, const char *item_id,
                                          int (*fn)(const char *name, int passed, void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT name, passed, coalesce(exit_code, -1) FROM gate_results WHERE id IN"
        " (SELECT max(id) FROM gate_results WHERE item_id = ? GROUP BY name) ORDER BY name";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, q_gates, STORE_ARGS(STORE_TEXT(item_id)));

    if (rc)
        return rc;
    while (store_step(s) == STORE_ROW)
        if ((rc = fn(store_col_raw(s, 0), store_col_int(s, 1), ctx)) != 0)
            break;
    store_done(s);
    return rc;
}
