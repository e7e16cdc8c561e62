/* gate_result.c - the gate_results table (see gate_result.h). */
#include "store/gate_result.h"

#include <string.h>

#include "store/internal.h"

#define TXT(s, i) ((const char *)sqlite3_column_text((s), (i)))

/* Step s to its end, each row filled by fill and handed to fn; s is done
 * here. */
static int gate_result_rows(store *st, sqlite3_stmt *s,
                            void (*fill)(struct store_gate_result *g, sqlite3_stmt *s),
                            int (*fn)(const struct store_gate_result *g, void *ctx), void *ctx)
{
    int rc = 0;

    for (;;) {
        struct store_gate_result g;
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "gate results");
            break;
        }
        memset(&g, 0, sizeof(g));
        fill(&g, s);
        if ((rc = fn(&g, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}

static void fill_of_item(struct store_gate_result *g, sqlite3_stmt *s)
{
    g->name = TXT(s, 0);
    g->passed = sqlite3_column_int(s, 1);
    g->exit_code = sqlite3_column_int(s, 2);
    g->classification = TXT(s, 3);
    g->counted = sqlite3_column_type(s, 4) != SQLITE_NULL;
    g->tests_passed = sqlite3_column_int(s, 4);
    g->tests_failed = sqlite3_column_int(s, 5);
    g->output_tail = TXT(s, 6);
    g->output_hash = TXT(s, 7);
    g->tree_id = TXT(s, 8);
    g->run_id = TXT(s, 9);
}

int store_gate_result_each_latest_of_item(store *st, const char *item_id,
                                          int (*fn)(const struct store_gate_result *g,
                                                    void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1), ifnull(classification, ''), tests_passed,"
        " tests_failed, ifnull(output_tail, ''), ifnull(output_hash, ''), ifnull(tree_id, ''),"
        " run_id FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results"
        " WHERE item_id = ?1 AND run_id = (SELECT run_id FROM gate_results WHERE item_id = ?1"
        " ORDER BY id DESC LIMIT 1) GROUP BY name, tree_id) ORDER BY id";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_gates);

    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    return gate_result_rows(st, s, fill_of_item, fn, ctx);
}

static void fill_of_goal(struct store_gate_result *g, sqlite3_stmt *s)
{
    g->item_key = TXT(s, 0);
    g->name = TXT(s, 1);
    g->passed = sqlite3_column_int(s, 2);
    g->exit_code = sqlite3_column_int(s, 3);
    g->classification = TXT(s, 4);
    g->counted = sqlite3_column_type(s, 5) != SQLITE_NULL;
    g->tests_passed = sqlite3_column_int(s, 5);
    g->tests_failed = sqlite3_column_int(s, 6);
    g->output_hash = TXT(s, 7);
}

int store_gate_result_each_latest_of_goal(store *st, const char *goal_id,
                                          int (*fn)(const struct store_gate_result *g,
                                                    void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT w.key, g.name, g.passed, ifnull(g.exit_code, -1), ifnull(g.classification, ''),"
        " g.tests_passed, g.tests_failed, g.output_hash FROM gate_results g"
        " JOIN work_items w ON w.id = g.item_id WHERE g.id IN (SELECT max(id) FROM gate_results"
        " WHERE goal_id = ? GROUP BY item_id, name) ORDER BY w.created_at, g.name";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_gates);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    return gate_result_rows(st, s, fill_of_goal, fn, ctx);
}
