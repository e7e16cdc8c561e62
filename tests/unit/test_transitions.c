/* Unit tests: the transition table, applied with its event in one transaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "store/internal.h"
#include "lifecycle/transitions.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/status.h"
#include "tests/unit/storehelp.h"
#include "tests/unit/testutil.h"
#include "util/err.h"

static store *st;

static int count(const char *sql_text, const char *arg)
{
    store_stmt *s;
    int n;

    assert_int_equal(store_prepare_uncached(st, &s, sql_text), 0);
    if (arg)
        store_bind_text(s, 1, arg);
    assert_int_equal(store_step(s), STORE_ROW);
    n = store_col_int(s, 0);
    store_finalize(s);
    return n;
}

static void status_of(const char *table, const char *id, char *out, size_t n)
{
    char q[128];
    store_stmt *s;

    snprintf(q, sizeof(q), "SELECT status FROM %s WHERE id = ?", table);
    assert_int_equal(store_prepare_uncached(st, &s, q), 0);
    store_bind_text(s, 1, id);
    assert_int_equal(store_step(s), STORE_ROW);
    snprintf(out, n, "%s", store_col_raw(s, 0));
    store_finalize(s);
}

static void new_goal(char id[ID_SIZE], const char *status)
{
    struct goal g;

    memset(&g, 0, sizeof(g));
    assert_int_equal(id_new(g.id), 0);
    g.title = "t";
    g.spec = "{}";
    g.status = (char *)status;
    g.deadline_at = g.budget_max_tokens = g.started_at = g.ended_at = -1;
    g.budget_max_cost_usd = g.budget_max_hours = -1;
    assert_int_equal(store_goal_insert(st, &g), 0);
    memcpy(id, g.id, ID_SIZE);
}

static void new_item(char id[ID_SIZE], const char *goal_id, const char *status, int n)
{
    struct work_item wi;
    char key[32];

    memset(&wi, 0, sizeof(wi));
    assert_int_equal(id_new(wi.id), 0);
    snprintf(wi.goal_id, sizeof(wi.goal_id), "%s", goal_id);
    snprintf(key, sizeof(key), "wi-%d", n);
    wi.key = key;
    wi.title = "item";
    wi.status = (char *)status;
    wi.verified = -1;
    assert_int_equal(store_item_insert(st, &wi), 0);
    memcpy(id, wi.id, ID_SIZE);
}

static void new_run(char id[ID_SIZE], const char *goal_id, const char *status)
{
    assert_int_equal(id_new(id), 0);
    store_test_exec(st,
                    "INSERT INTO runs(id, goal_id, kind, lane, status,"
                    " created_at) VALUES (?, ?, 'plan', 'plan', ?, 0)",
                    STORE_ARGS(STORE_TEXT(id), STORE_TEXT(goal_id), STORE_TEXT(status)));
}

/* Every row of the table is applied on a fresh entity in its from-state,
 * leaves the to-state and exactly one event "<entity>.<to>". */
/* The store's status enums name exactly the statuses of the state
 * machines: every enum has a name the machine knows, every name maps back
 * to its enum, and a name the machine does not know is *_UNKNOWN. */
static void test_status_enums_match_the_machines(void **state)
{
    (void)state;
    for (int s = 0; s < GOAL_STATUS_UNKNOWN; s++) {
        assert_true(transition_status_valid(ENTITY_GOAL, goal_status_name((enum goal_status)s)));
        assert_int_equal(goal_status_of(goal_status_name((enum goal_status)s)), s);
    }
    for (int s = 0; s < ITEM_STATUS_UNKNOWN; s++) {
        assert_true(transition_status_valid(ENTITY_ITEM, item_status_name((enum item_status)s)));
        assert_int_equal(item_status_of(item_status_name((enum item_status)s)), s);
    }
    for (int s = 0; s < RUN_STATUS_UNKNOWN; s++) {
        assert_true(transition_status_valid(ENTITY_RUN, run_status_name((enum run_status)s)));
        assert_int_equal(run_status_of(run_status_name((enum run_status)s)), s);
    }
    /* and the machines have no status the enums lack */
    {
        static const char *const goal[] = {"queued", "active", "blocked", "completed", "cancelled"};
        static const char *const item[] = {"queued",  "ready",  "in_progress", "verify",
                                           "done",    "failed", "blocked",     "escalated",
                                           "skipped", "cancelled"};
        static const char *const run[] = {"running", "success", "failed", "timeout", "aborted"};
        for (size_t i = 0; i < sizeof(goal) / sizeof(goal[0]); i++)
            assert_int_not_equal(goal_status_of(goal[i]), GOAL_STATUS_UNKNOWN);
        for (size_t i = 0; i < sizeof(item) / sizeof(item[0]); i++)
            assert_int_not_equal(item_status_of(item[i]), ITEM_STATUS_UNKNOWN);
        for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
            assert_int_not_equal(run_status_of(run[i]), RUN_STATUS_UNKNOWN);
    }
    assert_int_equal(item_status_of(NULL), ITEM_STATUS_UNKNOWN);
    assert_int_equal(item_status_of("Done"), ITEM_STATUS_UNKNOWN);
    assert_int_equal(goal_status_of("scheduled"), GOAL_STATUS_UNKNOWN);
    assert_string_equal(run_status_name(RUN_STATUS_UNKNOWN), "?");
    assert_true(item_status_finished(ITEM_SKIPPED) && !item_status_finished(ITEM_FAILED));
    assert_true(goal_status_ended(GOAL_CANCELLED) && !goal_status_ended(GOAL_BLOCKED));
}

static void test_every_allowed_transition(void **state)
{
    char gid[ID_SIZE], id[ID_SIZE], got[32];
    (void)state;

    for (int i = 0; i < transitions_count; i++) {
        const struct transition *t = &transitions[i];
        const char *table = t->kind == ENTITY_GOAL   ? "goals"
                            : t->kind == ENTITY_ITEM ? "work_items"
                                                     : "runs";
        char type[64];
        int before;

        if (t->kind == ENTITY_GOAL) {
            new_goal(id, t->from);
        } else {
            new_goal(gid, "active");
            if (t->kind == ENTITY_ITEM)
                new_item(id, gid, t->from, i);
            else
                new_run(id, gid, t->from);
        }
        snprintf(type, sizeof(type), "%s.%s", entity_name(t->kind), t->to);
        before = count("SELECT count(*) FROM events", NULL);
        if (transition_apply(st, t->kind, id, t->to, t->from, NULL) != 0)
            fail_msg("%s %s -> %s refused: %s", entity_name(t->kind), t->from, t->to, err_last());
        status_of(table, id, got, sizeof(got));
        assert_string_equal(got, t->to);
        assert_int_equal(count("SELECT count(*) FROM events", NULL), before + 1);
        assert_int_equal(count("SELECT count(*) FROM events WHERE type = ? AND id = "
                               "(SELECT max(id) FROM events)",
                               type),
                         1);
    }
}

static void test_forbidden_transitions_write_nothing(void **state)
{
    static const struct transition bad[] = {
        {ENTITY_GOAL, "queued", "completed"},  {ENTITY_GOAL, "completed", "active"},
        {ENTITY_GOAL, "cancelled", "active"},  {ENTITY_GOAL, "completed", "blocked"},
        {ENTITY_GOAL, "blocked", "completed"}, {ENTITY_ITEM, "queued", "in_progress"},
        {ENTITY_ITEM, "ready", "done"},        {ENTITY_ITEM, "in_progress", "done"},
        {ENTITY_ITEM, "done", "ready"},        {ENTITY_ITEM, "skipped", "ready"},
        {ENTITY_ITEM, "verify", "cancelled"},  {ENTITY_ITEM, "cancelled", "ready"},
        {ENTITY_ITEM, "failed", "done"},       {ENTITY_ITEM, "escalated", "done"},
        {ENTITY_RUN, "success", "failed"},     {ENTITY_RUN, "aborted", "running"},
        {ENTITY_RUN, "failed", "success"},
    };
    char gid[ID_SIZE], id[ID_SIZE], got[32];
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const struct transition *t = &bad[i];
        const char *table = t->kind == ENTITY_GOAL   ? "goals"
                            : t->kind == ENTITY_ITEM ? "work_items"
                                                     : "runs";
        int before;
        char want[128];

        assert_false(transition_allowed(t->kind, t->from, t->to));
        if (t->kind == ENTITY_GOAL) {
            new_goal(id, t->from);
        } else {
            new_goal(gid, "active");
            if (t->kind == ENTITY_ITEM)
                new_item(id, gid, t->from, 1000 + (int)i);
            else
                new_run(id, gid, t->from);
        }
        before = count("SELECT count(*) FROM events", NULL);
        assert_int_equal(transition_apply(st, t->kind, id, t->to, NULL, NULL), ERR_TRANSITION);
        snprintf(want, sizeof(want), "cannot go from %s to %s", t->from, t->to);
        assert_non_null(strstr(err_last(), want));
        status_of(table, id, got, sizeof(got));
        assert_string_equal(got, t->from);
        assert_int_equal(count("SELECT count(*) FROM events", NULL), before);
    }
}

static void test_expect_from_and_unknown(void **state)
{
    char id[ID_SIZE];
    (void)state;

    new_goal(id, "queued");
    assert_int_equal(transition_apply(st, ENTITY_GOAL, id, "active", "blocked", NULL),
                     ERR_TRANSITION);
    assert_non_null(strstr(err_last(), "is queued, not blocked"));
    assert_int_equal(transition_apply(st, ENTITY_GOAL, id, "flying", NULL, NULL), ERR_TRANSITION);
    assert_int_equal(transition_apply(st, ENTITY_GOAL, "00000000-0000-4000-8000-000000000000",
                                      "active", NULL, NULL),
                     ERR_NOTFOUND);
}

/* An outer rollback takes the status and its event back together. */
static void test_rollback_takes_event_too(void **state)
{
    char id[ID_SIZE], got[32];
    int before;
    (void)state;

    new_goal(id, "queued");
    before = count("SELECT count(*) FROM events", NULL);
    assert_int_equal(store_tx_begin(st), 0);
    assert_int_equal(transition_apply(st, ENTITY_GOAL, id, "active", NULL, NULL), 0);
    store_tx_rollback(st);
    status_of("goals", id, got, sizeof(got));
    assert_string_equal(got, "queued");
    assert_int_equal(count("SELECT count(*) FROM events", NULL), before);
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_enums_match_the_machines),
        cmocka_unit_test(test_every_allowed_transition),
        cmocka_unit_test(test_forbidden_transitions_write_nothing),
        cmocka_unit_test(test_expect_from_and_unknown),
        cmocka_unit_test(test_rollback_takes_event_too),
    };
    int rc;

    testutil_setup("transitions");
    testutil_db(path, sizeof(path), "t.db");
    if (store_open(&st, path) != 0) {
        fprintf(stderr, "%s\n", err_last());
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
