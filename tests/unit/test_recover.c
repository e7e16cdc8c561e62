/* Unit tests: recover_decide(), the four-tier recovery policy, as a table
 * with one row per rule (docs/design.md §1, lifecycle/recover.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/recover.h"
#include "util/config.h"
#include "util/xalloc.h"

struct row {
    const char *name;
    /* facts */
    const char *cls;
    int tier, failures, max_retries, same, model_index, nmodels, critical;
    /* decision */
    enum recover_action action;
    int next_tier;
    int64_t backoff_ms; /* -1: not checked (0 expected for every non-retry) */
    int next_model;
    const char *why_has; /* a word the event's "why" must contain */
};

/* backoff base 1000 ms, max 5000 ms (set in main) */
static const struct row rows[] = {
    /* tier 1: retry with backoff min(base*2^(n-1), max), up to max_retries */
    {"first failure retries", "gate", 1, 1, 3, 1, 0, 2, 1, RECOVER_RETRY, 1, 1000, 0, "tier 1"},
    {"second failure doubles", "gate", 1, 2, 3, 1, 0, 2, 1, RECOVER_RETRY, 1, 2000, 0, "tier 1"},
    {"last retry", "gate", 1, 3, 3, 2, 0, 2, 1, RECOVER_RETRY, 1, 4000, 0, "tier 1"},
    {"backoff capped", "limit", 1, 5, 9, 1, 0, 1, 1, RECOVER_RETRY, 1, 5000, 0, "tier 1"},
    {"stalled retries like any failure", "stalled", 1, 1, 3, 1, 0, 1, 1, RECOVER_RETRY, 1, 1000, 0,
     "tier 1"},
    {"timeout retries", "timeout", 1, 1, 3, 1, 0, 1, 0, RECOVER_RETRY, 1, 1000, 0, "tier 1"},
    /* tier 1 exhausted -> tier 2: the next model of the chain */
    {"retries exhausted, next model", "gate", 1, 4, 3, 1, 0, 2, 1, RECOVER_FAILOVER, 2, 0, 1,
     "tier 2"},
    {"no retries configured", "gate", 1, 1, 0, 1, 0, 2, 1, RECOVER_FAILOVER, 2, 0, 1, "tier 2"},
    {"three identical signatures skip tier 1", "gate", 1, 3, 3, 3, 0, 2, 1, RECOVER_FAILOVER, 2, 0,
     1, "three times"},
    /* a run that died (its process or node killed) is not the model's
     * failure: identical aborts retry until max_retries (a node
     * killed three times while it ran the same item) */
    {"identical aborts still retry", "aborted", 1, 5, 10, 5, 0, 2, 1, RECOVER_RETRY, 1, 5000, 0,
     "tier 1"},
    {"aborts past max_retries, next model", "aborted", 1, 11, 10, 11, 0, 2, 1, RECOVER_FAILOVER, 2,
     0, 1, "tier 2"},
    {"context_length skips tier 1", "context_length", 1, 1, 3, 1, 0, 2, 1, RECOVER_FAILOVER, 2, 0,
     1, "tier 2"},
    {"tier 2 moves along the chain", "gate", 2, 1, 3, 1, 1, 3, 1, RECOVER_FAILOVER, 2, 0, 2,
     "tier 2"},
    /* -> tier 3: Plan B, when no model is left */
    {"single model: retries exhausted, Plan B", "gate", 1, 4, 3, 1, 0, 1, 1, RECOVER_PLAN_B, 3, 0,
     0, "tier 3"},
    {"single model: identical signatures, Plan B", "invalid_response", 1, 3, 3, 3, 0, 1, 1,
     RECOVER_PLAN_B, 3, 0, 0, "tier 3"},
    {"single model: context_length, Plan B", "context_length", 1, 1, 3, 1, 0, 1, 1, RECOVER_PLAN_B,
     3, 0, 0, "tier 3"},
    {"last model failed at tier 2, Plan B", "gate", 2, 1, 3, 1, 1, 2, 1, RECOVER_PLAN_B, 3, 0, 1,
     "tier 3"},
    /* -> tier 4: escalate a critical item, skip the others */
    {"Plan B failed, critical: escalate", "gate", 3, 1, 3, 1, 1, 2, 1, RECOVER_ESCALATE, 4, 0, 1,
     "tier 4"},
    {"Plan B failed, not critical: skip", "gate", 3, 1, 3, 1, 1, 2, 0, RECOVER_SKIP, 4, 0, 1,
     "not critical"},
    {"after an escalation, critical", "gate", 4, 1, 3, 1, 0, 1, 1, RECOVER_ESCALATE, 4, 0, 0,
     "tier 4"},
    {"after an escalation, not critical", "gate", 4, 1, 3, 1, 0, 1, 0, RECOVER_SKIP, 4, 0, 0,
     "tier 4"},
    /* straight to a human, whatever the tier and criticality */
    {"auth at tier 1", "auth", 1, 1, 3, 1, 0, 2, 1, RECOVER_ESCALATE, 4, 0, 0, "human"},
    {"auth, not critical: still a human", "auth", 1, 1, 3, 1, 0, 2, 0, RECOVER_ESCALATE, 4, 0, 0,
     "human"},
    {"auth at tier 2", "auth", 2, 1, 3, 1, 1, 3, 1, RECOVER_ESCALATE, 4, 0, 1, "human"},
    {"budget", "budget", 1, 1, 3, 1, 0, 2, 0, RECOVER_ESCALATE, 4, 0, 0, "human"},
    {"config", "config", 1, 1, 3, 1, 0, 2, 1, RECOVER_ESCALATE, 4, 0, 0, "human"},
};

static void test_policy_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct recover_facts f = {r->cls,  r->tier,        r->failures, r->max_retries,
                                  r->same, r->model_index, r->nmodels,  r->critical, 0};
        struct recover_decision d;

        recover_decide(&f, &d);
        if (d.action != r->action || d.tier != r->next_tier || d.model_index != r->next_model ||
            d.backoff_ms != r->backoff_ms || !d.why || !strstr(d.why, r->why_has)) {
            fail_msg("row %zu \"%s\": got %s tier %d model %d backoff %lld why \"%s\"; "
                     "expected %s tier %d model %d backoff %lld why containing \"%s\"",
                     i, r->name, recover_action_name(d.action), d.tier, d.model_index,
                     (long long)d.backoff_ms, d.why ? d.why : "(null)",
                     recover_action_name(r->action), r->next_tier, r->next_model,
                     (long long)r->backoff_ms, r->why_has);
        }
    }
}

/* A run failing as the item did before a human's answer goes back to a
 * human at once, whatever is left of the ladder (a died run does not). */
static void test_repeats_answered(void **state)
{
    struct recover_facts f = {"gate", 1, 1, 3, 1, 0, 2, 0, 1};
    struct recover_decision d;

    (void)state;
    recover_decide(&f, &d);
    assert_int_equal(d.action, RECOVER_ESCALATE);
    assert_int_equal(d.tier, 4);
    assert_non_null(strstr(d.why, "before the human's answer"));
    f.error_class = "aborted";
    recover_decide(&f, &d);
    assert_int_equal(d.action, RECOVER_RETRY);
}

/* The whole ladder for one item on a two-model chain: 1 + max_retries
 * attempts on model 0, one on model 1, Plan B, then a human. */
static void test_ladder(void **state)
{
    struct recover_facts f = {"gate", 1, 0, 3, 1, 0, 2, 1, 0};
    struct recover_decision d;
    enum recover_action seen[8];
    int n = 0;

    (void)state;
    for (;;) {
        f.failures_at_tier++;
        recover_decide(&f, &d);
        seen[n++] = d.action;
        if (d.action == RECOVER_ESCALATE || d.action == RECOVER_SKIP || n == 8)
            break;
        if (d.tier != f.tier)
            f.failures_at_tier = 0; /* a new tier counts its own failures */
        f.tier = d.tier;
        f.model_index = d.model_index;
    }
    assert_int_equal(n, 6);
    assert_int_equal(seen[0], RECOVER_RETRY);
    assert_int_equal(seen[1], RECOVER_RETRY);
    assert_int_equal(seen[2], RECOVER_RETRY);
    assert_int_equal(seen[3], RECOVER_FAILOVER);
    assert_int_equal(seen[4], RECOVER_PLAN_B);
    assert_int_equal(seen[5], RECOVER_ESCALATE);
    assert_string_equal(recover_action_name(RECOVER_ESCALATE), "escalated");
    assert_string_equal(recover_action_name(RECOVER_SKIP), "skipped");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_table),
        cmocka_unit_test(test_ladder),
        cmocka_unit_test(test_repeats_answered),
    };

    setenv("GOALD_CONTROL_BACKOFF_BASE_MS", "1000", 1);
    setenv("GOALD_CONTROL_BACKOFF_MAX_MS", "5000", 1);
    if (config_load(NULL) != 0)
        return 1;
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
