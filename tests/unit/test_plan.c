/* Unit tests: plan validation, DAG storage and readiness; selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "lifecycle/goal_view.h"
#include "store/run.h"
#include "lifecycle/intake.h"
#include "lifecycle/plan.h"
#include "lifecycle/select.h"
#include "lifecycle/transitions.h"
#include "tests/unit/storehelp.h"
#include "tests/unit/testutil.h"
#include "util/config.h"
#include "util/err.h"
#include "util/timeutil.h"

static store *st;

static int parse(const char *json, struct plan *p, int max)
{
    cJSON *j = cJSON_Parse(json);
    int rc;

    assert_non_null(j);
    rc = plan_parse(p, j, max);
    cJSON_Delete(j);
    return rc;
}

#define ITEM(k, deps)                                                                              \
    "{\"key\":\"" k "\",\"title\":\"t " k                                                          \
    "\",\"type\":\"code\",\"effort\":\"S\",\"depends_on\":[" deps "]}"

static void test_validation_cases(void **state)
{
    static const struct {
        const char *json;
        const char *msg;
    } cases[] = {
        {"[]", "expected an object with a \"work_items\" array"},
        {"{\"items\":[]}", "expected an object with a \"work_items\" array"},
        {"{\"work_items\":[]}", "work_items: the plan has no items"},
        {"{\"work_items\":[" ITEM("a", "") "," ITEM("b", "") "," ITEM("c", "") "]}",
         "work_items: 3 items, more than the maximum of 2"},
        {"{\"work_items\":[{\"title\":\"x\",\"type\":\"code\",\"effort\":\"S\"}]}",
         "work_items[0].key: missing"},
        {"{\"work_items\":[{\"key\":\"a\",\"type\":\"code\",\"effort\":\"S\"}]}",
         "work_items[0].title: missing"},
        {"{\"work_items\":[{\"key\":\"a\",\"title\":\"x\",\"effort\":\"S\"}]}",
         "work_items[0].type: missing"},
        {"{\"work_items\":[{\"key\":\"a\",\"title\":\"x\",\"type\":\"code\"}]}",
         "work_items[0].effort: missing"},
        {"{\"work_items\":[{\"key\":\"a\",\"title\":\"x\",\"type\":\"poem\",\"effort\":\"S\"}]}",
         "work_items[0].type: \"poem\" is not one of code, test, doc, refactor, analysis"},
        {"{\"work_items\":[{\"key\":\"a\",\"title\":\"x\",\"type\":\"code\",\"effort\":\"XXL\"}]}",
         "work_items[0].effort: \"XXL\" is not one of S, M, L, XL"},
        {"{\"work_items\":[{\"key\":\"a\",\"title\":\"x\",\"type\":\"code\",\"effort\":\"S\","
         "\"priority\":300}]}",
         "work_items[0].priority: expected an integer 0-100"},
        {"{\"work_items\":[" ITEM("a", "") "," ITEM("a", "") "]}",
         "work_items[1].key: duplicate key \"a\""},
        {"{\"work_items\":[" ITEM("a", "\"a\"") "]}", "a: depends on itself"},
        {"{\"work_items\":[" ITEM("a", "\"zz\"") "]}", "a: depends on unknown item \"zz\""},
        {"{\"work_items\":[" ITEM("a", "") "," ITEM("b", "\"a\",\"a\"") "]}",
         "b: depends on \"a\" twice"},
        {"{\"work_items\":[" ITEM("wi-1", "\"wi-3\"") "," ITEM("wi-2", "\"wi-1\"") "," ITEM(
             "wi-3", "\"wi-2\"") "]}",
         "cycle: wi-1 -> wi-3 -> wi-2 -> wi-1"},
        {"{\"work_items\":[" ITEM("x", "") "," ITEM("a", "\"x\",\"b\"") "," ITEM("b", "\"a\"") "]}",
         "cycle: a -> b -> a"},
    };
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct plan p;
        int rc = parse(cases[i].json, &p, i == 3 ? 2 : 50);
        if (rc != ERR_INVALID)
            fail_msg("case %zu accepted: %s", i, cases[i].json);
        if (strcmp(err_last(), cases[i].msg) != 0)
            fail_msg("case %zu: expected\n  %s\ngot\n  %s", i, cases[i].msg, err_last());
        assert_null(p.items);
    }
}

static void new_goal(char id[ID_SIZE], const char *title, int priority)
{
    struct goal *g = NULL;
    char json[256];

    snprintf(json, sizeof(json), "{\"title\":\"%s\",\"priority\":%d}", title, priority);
    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_int_equal(intake_submit(st, g, id), 0);
    store_goal_free(g);
    assert_int_equal(transition_apply(st, ENTITY_GOAL, id, "active", NULL, NULL), 0);
}

/* The rows of sql (one text column, goal_id bound) joined by spaces. */
static char *joined(const char *sql, const char *goal_id)
{
    static char buf[1024];
    size_t len = 0;
    store_stmt *s;

    buf[0] = '\0';
    assert_int_equal(store_prepare_uncached(st, &s, sql), 0);
    store_bind_text(s, 1, goal_id);
    while (store_step(s) == STORE_ROW)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? " " : "",
                                store_col_text(s, 0));
    store_finalize(s);
    assert_true(len < sizeof(buf));
    return buf;
}

static char *edges(const char *goal_id)
{
    return joined("SELECT a.key || '>' || b.key AS e"
                  " FROM work_item_deps d JOIN work_items a ON a.id = d.depends_on_id"
                  " JOIN work_items b ON b.id = d.item_id WHERE a.goal_id = ? ORDER BY e",
                  goal_id);
}

static char *statuses(const char *goal_id)
{
    return joined("SELECT key || '=' || status FROM work_items WHERE goal_id = ? ORDER BY key",
                  goal_id);
}

static void set_status(const char *goal_id, const char *key, const char *status)
{
    store_test_exec(st, "UPDATE work_items SET status = ? WHERE goal_id = ? AND key = ?",
                    STORE_ARGS(STORE_TEXT(status), STORE_TEXT(goal_id), STORE_TEXT(key)));
}

/* A->B->C, C->D, C->E, D+E->F: exactly those edges, readiness follows. */
static void test_fan_out_fan_in(void **state)
{
    struct plan p;
    char gid[ID_SIZE];
    int n = -1;
    (void)state;

    assert_int_equal(
        parse(
            "{\"work_items\":[" ITEM("A", "") "," ITEM("B", "\"A\"") "," ITEM(
                "C", "\"B\"") "," ITEM("D", "\"C\"") "," ITEM("E",
                                                              "\"C\"") "," ITEM("F",
                                                                                "\"D\",\"E\"") "]}",
            &p, 50),
        0);
    assert_int_equal(p.n, 6);
    new_goal(gid, "fan", 50);
    assert_int_equal(plan_store(st, gid, &p), 0);
    plan_release(&p);
    assert_string_equal(edges(gid), "A>B B>C C>D C>E D>F E>F");
    assert_string_equal(statuses(gid), "A=ready B=queued C=queued D=queued E=queued F=queued");
    set_status(gid, "A", "done");
    assert_int_equal(plan_promote_ready(st, gid, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(statuses(gid), "A=done B=ready C=queued D=queued E=queued F=queued");
    set_status(gid, "B", "done");
    set_status(gid, "C", "skipped"); /* skipped counts: dependents go on */
    assert_int_equal(plan_promote_ready(st, gid, &n), 0);
    assert_int_equal(n, 2);
    set_status(gid, "D", "done");
    assert_int_equal(plan_promote_ready(st, gid, &n), 0);
    assert_int_equal(n, 0); /* F waits for E too */
    set_status(gid, "E", "done");
    assert_int_equal(plan_promote_ready(st, gid, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(statuses(gid), "A=done B=done C=skipped D=done E=done F=ready");
}

static void test_select(void **state)
{
    struct plan p;
    char g1[ID_SIZE], g2[ID_SIZE];
    struct select_candidate c, c2;
    int64_t now = time_now_ms();
    (void)state;

    /* isolate from the other test's goal */
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled'"), 0);
    new_goal(g1, "one", 50);
    new_goal(g2, "two", 50);
    assert_int_equal(parse("{\"work_items\":[{\"key\":\"lo\",\"title\":\"x\",\"type\":\"code\","
                           "\"effort\":\"S\",\"priority\":10},{\"key\":\"hi\",\"title\":\"x\","
                           "\"type\":\"code\",\"effort\":\"S\",\"priority\":90}]}",
                           &p, 50),
                     0);
    assert_int_equal(plan_store(st, g1, &p), 0);
    plan_release(&p);
    /* g2: priority 40 but unblocks 3 items: 40*.6 + 60*.2 = 36 < 90*.6 = 54 */
    assert_int_equal(parse("{\"work_items\":[{\"key\":\"root\",\"title\":\"x\",\"type\":\"code\","
                           "\"effort\":\"S\",\"priority\":40}," ITEM("a", "\"root\"") "," ITEM(
                               "b", "\"root\"") "," ITEM("c", "\"root\"") "]}",
                           &p, 50),
                     0);
    assert_int_equal(plan_store(st, g2, &p), 0);
    plan_release(&p);
    assert_int_equal(select_next(st, now, NULL, 0, &c), 0);
    assert_string_equal(c.goal_id, g1);
    assert_int_equal(c.priority, 90);
    /* the goal is busy in the daemon: the other goal's item */
    assert_int_equal(select_next(st, now, (const char(*)[ID_SIZE])g1, 1, &c2), 0);
    assert_string_equal(c2.goal_id, g2);
    assert_int_equal(c2.dependents, 3);
    /* created after `now`: freshness 0, so 40*0.6 + 3 dependents*20*0.2 */
    assert_true(c2.score == 36.0);
    /* an item in progress holds its goal */
    set_status(g1, "lo", "in_progress");
    assert_int_equal(select_next(st, now, NULL, 0, &c), 0);
    assert_string_equal(c.goal_id, g2);
    /* backoff: not claimable before next_attempt_at */
    assert_int_equal(store_exec(st, "UPDATE work_items SET next_attempt_at = 9e15 WHERE key = "
                                    "'root'"),
                     0);
    assert_int_equal(select_next(st, now, NULL, 0, &c), ERR_NOTFOUND);
    /* freshness: waiting an hour adds 20 */
    {
        struct select_candidate x = {0};
        x.priority = 50;
        x.waiting_since = now - 3600 * 1000;
        assert_true(select_score(&x, now) == 50 * 0.6 + 20);
        x.waiting_since = now - 1800 * 1000;
        assert_true(select_score(&x, now) == 50 * 0.6 + 10);
        x.dependents = 9;
        assert_true(select_score(&x, now) == 50 * 0.6 + 10 + 20);
    }
}

/* criteria: indexes into the goal's success criteria; every criterion
 * served by an item (an item without criteria serves every one). */
static void test_criteria(void **state)
{
    static const struct {
        const char *items;
        const char *msg; /* NULL: accepted */
    } cases[] = {
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\",\"criteria\":[0,1]}",
         NULL},
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\"}", NULL},
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\",\"criteria\":[0]}",
         "success criterion 1 (\"docs updated\") is served by no item"},
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\",\"criteria\":[0,1,2]}",
         "a: criteria: 2 is not the index of a success criterion (there are 2, numbered from 0)"},
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\",\"criteria\":[-1]}",
         "work_items[0].criteria[0]: expected the index of a success criterion"},
        {"{\"key\":\"a\",\"title\":\"t\",\"type\":\"code\",\"effort\":\"S\",\"criteria\":\"0\"}",
         "work_items[0].criteria: expected an array of indexes"},
    };
    struct criteria crit;

    (void)state;
    assert_int_equal(criteria_parse(&crit, "[\"tests pass\", \"docs updated\"]"), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[1024];
        struct plan p;
        int rc;
        snprintf(json, sizeof(json), "{\"work_items\":[%s]}", cases[i].items);
        rc = parse(json, &p, 10);
        if (rc == 0) {
            rc = plan_check_criteria(&p, &crit);
            plan_release(&p);
        }
        if (!cases[i].msg) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, ERR_INVALID);
        assert_string_equal(err_last(), cases[i].msg);
    }
    criteria_release(&crit);
}

/* The best candidate by scoring every one (what select_next did before it
 * walked the groups): the reference for the walk. */
struct scan_best {
    int64_t now;
    const char (*busy)[ID_SIZE];
    int n_busy;
    struct select_candidate best;
    int found;
};

static int scan_row(const struct store_run_exec_candidate *e, void *ctx)
{
    struct scan_best *b = ctx;
    struct select_candidate c = {0};

    for (int i = 0; i < b->n_busy; i++)
        if (!strcmp(b->busy[i], e->goal_id))
            return 0;
    snprintf(c.id, sizeof(c.id), "%s", e->id);
    c.priority = e->priority;
    c.dependents = e->dependents;
    c.created_at = e->created_at;
    c.waiting_since = e->updated_at;
    c.score = select_score(&c, b->now);
    if (!b->found || c.score > b->best.score ||
        (c.score == b->best.score &&
         (c.created_at < b->best.created_at ||
          (c.created_at == b->best.created_at && strcmp(c.id, b->best.id) < 0)))) {
        b->best = c;
        b->found = 1;
    }
    return 0;
}

/* select_next walks groups of (priority, dependents), each the longest
 * waiting first, and stops early: on random queues (ties, waits past
 * select.freshness_full_s and in the future, busy goals, items in
 * progress, backoff) it takes what scoring every candidate takes. */
static void test_select_walk_is_the_scan(void **state)
{
    enum { GOALS = 10, ITEMS = 4, ROUNDS = 60 };
    static const int prios[] = {10, 50, 90};
    static const int deps[] = {0, 1, 2, 5, 6};
    char goals[GOALS][ID_SIZE], busy[2][ID_SIZE];
    int64_t now = time_now_ms(), full = 3600 * 1000;
    const int64_t waits[] = {2 * full, full, full - 1, 600000, 1, 0, -5000};
    struct plan p;
    (void)state;

    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled'"), 0);
    for (int g = 0; g < GOALS; g++) {
        new_goal(goals[g], "walk", 50);
        assert_int_equal(parse("{\"work_items\":[" ITEM("a", "") "," ITEM("b", "") "," ITEM("c", "")
                               "," ITEM("d", "") "]}",
                               &p, 50),
                         0);
        assert_int_equal(plan_store(st, goals[g], &p), 0);
        plan_release(&p);
    }
    srand(31);
    for (int r = 0; r < ROUNDS; r++) {
        struct scan_best b;
        struct select_candidate c;
        int rc;

        memset(&b, 0, sizeof(b));
        b.now = now;
        b.busy = (const char(*)[ID_SIZE])busy;
        b.n_busy = rand() % 3;

        for (int g = 0; g < GOALS; g++)
            for (int i = 0; i < ITEMS; i++) {
                char sql[1024];
                int roll = rand() % 20;
                snprintf(sql, sizeof(sql),
                         "UPDATE work_items SET status = '%s', priority = %d, dependents = %d,"
                         " updated_at = %lld, created_at = %d, next_attempt_at = %lld"
                         " WHERE goal_id = '%s' AND key = '%c'",
                         roll == 0 ? "in_progress" : roll == 1 ? "queued" : "ready",
                         prios[rand() % 3], deps[rand() % 5],
                         (long long)(now - waits[rand() % 7]), rand() % 3,
                         (long long)(rand() % 15 == 0 ? now + 60000 : 0), goals[g], 'a' + i);
                assert_int_equal(store_exec(st, sql), 0);
            }
        for (int i = 0; i < b.n_busy; i++)
            snprintf(busy[i], ID_SIZE, "%s", goals[rand() % GOALS]);
        assert_int_equal(store_run_execute_candidates_each(
                             st, now, (int)config_int(CFG_GOAL_MAX_PARALLEL_ITEMS), scan_row, &b),
                         0);
        rc = select_next(st, now, b.n_busy ? (const char(*)[ID_SIZE])busy : NULL, b.n_busy, &c);
        assert_int_equal(rc, b.found ? 0 : ERR_NOTFOUND);
        if (b.found) {
            assert_string_equal(c.id, b.best.id);
            assert_true(c.score == b.best.score);
        }
    }
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation_cases),
        cmocka_unit_test(test_criteria),
        cmocka_unit_test(test_fan_out_fan_in),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_select_walk_is_the_scan),
    };
    int rc;

    testutil_setup("plan");
    testutil_db(path, sizeof(path), "p.db");
    if (store_open(&st, path) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
