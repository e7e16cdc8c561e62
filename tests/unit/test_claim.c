/* Unit tests: claiming units of work per lane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/claim.h"
#include "lifecycle/control.h"
#include "lifecycle/intake.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/timeutil.h"

static store *st;

static void submit(char id[ID_SIZE], const char *json)
{
    struct goal *g = NULL;

    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_int_equal(intake_submit(st, g, id), 0);
    store_goal_free(g);
}

static int runs_running(void)
{
    sqlite3_stmt *s;
    int n;

    sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM runs WHERE status='running'", -1, &s,
                       NULL);
    sqlite3_step(s);
    n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return n;
}

static void test_plan_lane(void **state)
{
    char hi[ID_SIZE], lo[ID_SIZE], tmpl[ID_SIZE];
    struct claim c, c2;
    int64_t now = time_now_ms();
    (void)state;

    submit(lo, "{\"title\":\"low\",\"priority\":10}");
    submit(hi, "{\"title\":\"high\",\"priority\":90}");
    submit(tmpl, "{\"title\":\"recurring\",\"priority\":100,\"schedule\":\"@daily\"}");
    assert_int_equal(claim_next(st, "plan", now, NULL, 0, &c, NULL, 0), 0);
    assert_string_equal(c.goal_id, hi); /* priority first; templates never */
    assert_string_equal(c.kind, "elaborate");
    assert_string_equal(c.lane, "plan");
    assert_int_equal(c.attempt, 1);
    assert_string_equal(c.item_id, "");
    /* the goal with a running run is not claimed twice */
    assert_int_equal(claim_next(st, "plan", now, NULL, 0, &c2, NULL, 0), 0);
    assert_string_equal(c2.goal_id, lo);
    assert_int_equal(claim_next(st, "plan", now, NULL, 0, &c2, NULL, 0), ERR_NOTFOUND);
    assert_int_equal(runs_running(), 2);
    assert_int_equal(claim_load(st, c.run_id, &c2), 0);
    assert_string_equal(c2.kind, "elaborate");
    assert_string_equal(c2.goal_id, hi);
    /* elaborated: the next unit of the goal is its plan */
    assert_int_equal(transition_apply(st, ENTITY_RUN, c.run_id, "success", NULL, NULL), 0);
    assert_int_equal(claim_load(st, c.run_id, &c2), ERR_TRANSITION);
    assert_int_equal(transition_apply(st, ENTITY_GOAL, hi, "active", NULL, NULL), 0);
    assert_int_equal(store_exec(st, "UPDATE goals SET elaboration = '{}'"), 0);
    assert_int_equal(claim_next(st, "plan", now, NULL, 0, &c, NULL, 0), 0);
    assert_string_equal(c.kind, "plan");
    assert_string_equal(c.goal_id, hi);
    assert_int_equal(c.attempt, 2); /* the goal's second plan-lane unit */
}

static void test_work_lane_and_breaker(void **state)
{
    char g[ID_SIZE];
    struct claim c, c2;
    struct plan p;
    cJSON *j;
    char blocked[64];
    int64_t now = time_now_ms();
    (void)state;

    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled'; "
                                    "UPDATE runs SET status = 'aborted'"),
                     0);
    submit(g, "{\"title\":\"work\"}");
    assert_int_equal(transition_apply(st, ENTITY_GOAL, g, "active", NULL, NULL), 0);
    j = cJSON_Parse("{\"work_items\":[{\"key\":\"a\",\"title\":\"A\",\"type\":\"code\","
                    "\"effort\":\"S\"},{\"key\":\"b\",\"title\":\"B\",\"type\":\"code\","
                    "\"effort\":\"S\"}]}");
    assert_int_equal(plan_parse(&p, j, 50), 0);
    cJSON_Delete(j);
    assert_int_equal(plan_store(st, g, &p), 0);
    plan_release(&p);
    assert_int_equal(claim_next(st, "work", now, NULL, 0, &c, NULL, 0), 0);
    assert_string_equal(c.kind, "execute");
    assert_string_equal(c.goal_id, g);
    assert_int_equal(c.attempt, 1);
    assert_true(c.item_id[0] != '\0');
    /* one item per goal at a time */
    assert_int_equal(claim_next(st, "work", now, NULL, 0, &c2, NULL, 0), ERR_NOTFOUND);
    /* a breaker open stops claims */
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c.item_id, "failed", NULL, NULL), 0);
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c.item_id, "ready", NULL, NULL), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(breaker_record(st, "rate_limit", "r", now), 0);
    assert_int_equal(claim_next(st, "work", now + 1, NULL, 0, &c2, blocked, sizeof(blocked)),
                     ERR_NOTFOUND);
    assert_string_equal(blocked, "rate_limit");
    /* after the cooldown, one probe claim goes through: b, which has waited
     * longer than a (freshness), on its first attempt */
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, 0, &c2, NULL, 0), 0);
    assert_string_not_equal(c2.item_id, c.item_id);
    assert_int_equal(c2.attempt, 1);
    /* while the probe runs, nothing else is claimed */
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c2.item_id, "cancelled", NULL, NULL), 0);
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, 0, &c, blocked, sizeof(blocked)),
                     ERR_NOTFOUND);
    assert_string_equal(blocked, "rate_limit");
    /* the probe's model call succeeds: closed; a's second claim counts its attempts */
    assert_int_equal(breaker_record(st, NULL, c2.run_id, now + 62000), 0);
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, 0, &c2, NULL, 0), 0);
    assert_int_equal(c2.attempt, 2);
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_lane),
        cmocka_unit_test(test_work_lane_and_breaker),
    };
    int rc;

    testutil_setup("claim");
    testutil_tmp_path(path, sizeof(path), "c.db");
    if (store_open(&st, path) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
