/* Unit tests: backoff, run limits, budgets, breakers across processes, stall detection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle/control.h"
#include "lifecycle/intake.h"
#include "store/internal.h"
#include "tests/unit/testutil.h"
#include "util/config.h"
#include "util/err.h"
#include "util/timeutil.h"

static char dbpath[512];
static store *st;

static char *last_event(const char *type)
{
    static char buf[2048];
    store_stmt *s;

    assert_int_equal(store_prepare_uncached(st, &s,
                                            "SELECT payload FROM events WHERE type = ?"
                                            " ORDER BY id DESC LIMIT 1"),
                     0);
    store_bind_text(s, 1, type);
    if (store_step(s) != STORE_ROW) {
        store_finalize(s);
        return NULL;
    }
    snprintf(buf, sizeof(buf), "%s", store_col_raw(s, 0));
    store_finalize(s);
    return buf;
}

static int count_events(const char *type)
{
    store_stmt *s;
    int n;

    store_prepare_uncached(st, &s, "SELECT count(*) FROM events WHERE type = ?");
    store_bind_text(s, 1, type);
    store_step(s);
    n = store_col_int(s, 0);
    store_finalize(s);
    return n;
}

static void test_backoff(void **state)
{
    (void)state;
    setenv("GOALD_CONTROL_BACKOFF_BASE_MS", "1000", 1);
    setenv("GOALD_CONTROL_BACKOFF_MAX_MS", "10000", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(control_backoff_ms(1), 1000);
    assert_int_equal(control_backoff_ms(2), 2000);
    assert_int_equal(control_backoff_ms(3), 4000);
    assert_int_equal(control_backoff_ms(4), 8000);
    assert_int_equal(control_backoff_ms(5), 10000);
    assert_int_equal(control_backoff_ms(60), 10000);
    unsetenv("GOALD_CONTROL_BACKOFF_BASE_MS");
    unsetenv("GOALD_CONTROL_BACKOFF_MAX_MS");
    assert_int_equal(config_load(NULL), 0);
}

static void test_run_limits(void **state)
{
    struct run_usage u = {0};
    const char *lim = NULL;
    cJSON *p;
    (void)state;

    setenv("GOALD_CONTROL_MAX_TURNS", "5", 1);
    setenv("GOALD_CONTROL_MAX_TOKENS", "1000", 1);
    setenv("GOALD_CONTROL_MAX_WALL_TIME_S", "60", 1);
    assert_int_equal(config_load(NULL), 0);
    u.started_ms = 1000;
    u.turns = 4;
    u.tokens = 999;
    assert_int_equal(control_check_run(st, NULL, "item-1", "run-1", &u, 1000 + 59999, &lim), 0);
    u.turns = 5;
    assert_int_equal(control_check_run(st, NULL, "item-1", "run-1", &u, 2000, &lim), ERR_POLICY);
    assert_string_equal(lim, "max_turns");
    p = cJSON_Parse(last_event("control.limit_reached"));
    assert_string_equal(cJSON_GetObjectItem(p, "limit_type")->valuestring, "max_turns");
    assert_string_equal(cJSON_GetObjectItem(p, "task_id")->valuestring, "item-1");
    assert_int_equal(cJSON_GetObjectItem(p, "value")->valueint, 5);
    assert_int_equal(cJSON_GetObjectItem(p, "threshold")->valueint, 5);
    cJSON_Delete(p);
    u.turns = 1;
    assert_int_equal(control_check_run(st, NULL, "item-1", "run-1", &u, 1000 + 60000, &lim),
                     ERR_POLICY);
    assert_string_equal(lim, "max_wall_time");
    p = cJSON_Parse(last_event("control.limit_reached"));
    assert_int_equal(cJSON_GetObjectItem(p, "threshold")->valueint, 60);
    cJSON_Delete(p);
    u.tokens = 1000;
    assert_int_equal(control_check_run(st, NULL, "item-1", "run-1", &u, 2000, &lim), ERR_POLICY);
    assert_string_equal(lim, "max_tokens");
    p = cJSON_Parse(last_event("control.limit_reached"));
    assert_int_equal(cJSON_GetObjectItem(p, "value")->valueint, 1000);
    cJSON_Delete(p);
    unsetenv("GOALD_CONTROL_MAX_TURNS");
    unsetenv("GOALD_CONTROL_MAX_TOKENS");
    unsetenv("GOALD_CONTROL_MAX_WALL_TIME_S");
    assert_int_equal(config_load(NULL), 0);
}

static void test_budget(void **state)
{
    struct goal *g = NULL;
    char id[ID_SIZE];
    const char *which = NULL;
    const char *json = "{\"title\":\"b\",\"budget\":{\"max_cost_usd\":1.0,\"max_tokens\":10000}}";
    cJSON *p;
    (void)state;

    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_int_equal(intake_submit(st, g, id), 0);
    store_goal_free(g);
    assert_int_equal(store_exec(st, "UPDATE goals SET spent_cost_usd = 0.9, spent_tokens = 5000"),
                     0);
    /* the next call is estimated at 0.05: fits */
    assert_int_equal(control_check_budget(st, id, NULL, NULL, 1000, 0.05, &which), 0);
    /* estimated at 0.2: would exceed the cost budget, stop before the call */
    assert_int_equal(control_check_budget(st, id, NULL, NULL, 1000, 0.2, &which), ERR_POLICY);
    assert_string_equal(which, "cost_usd");
    p = cJSON_Parse(last_event("control.limit_reached"));
    assert_string_equal(cJSON_GetObjectItem(p, "limit_type")->valuestring, "budget.cost_usd");
    assert_true(cJSON_GetObjectItem(p, "estimate")->valuedouble == 0.2);
    cJSON_Delete(p);
    assert_int_equal(control_check_budget(st, id, NULL, NULL, 5001, 0.0, &which), ERR_POLICY);
    assert_string_equal(which, "tokens");
}

/* Record a failure of cls from a separate process with its own connection. */
static void child_record(const char *cls, const char *run_id, int64_t now)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        store *c = NULL;
        if (store_open(&c, dbpath) != 0)
            _exit(2);
        int rc = breaker_record(c, cls, run_id, now);
        store_close(c);
        _exit(rc ? 1 : 0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int child_gate(const char *run_id, int64_t now)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        store *c = NULL;
        int allowed = -1;
        if (store_open(&c, dbpath) != 0)
            _exit(2);
        if (breaker_gate(c, now, run_id, &allowed, NULL, 0) != 0)
            _exit(3);
        store_close(c);
        _exit(allowed ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
    return WEXITSTATUS(status) == 0;
}

static char *breaker_state(const char *cls)
{
    static char buf[32];
    store_stmt *s;

    store_prepare_uncached(st, &s, "SELECT state FROM breakers WHERE error_class = ?");
    store_bind_text(s, 1, cls);
    snprintf(buf, sizeof(buf), "%s", store_step(s) == STORE_ROW ? store_col_raw(s, 0) : "none");
    store_finalize(s);
    return buf;
}

static void test_breaker_two_processes(void **state)
{
    int allowed = -1;
    char blocking[64];
    int64_t t = 1000000;
    (void)state;

    setenv("GOALD_BREAKER_THRESHOLD", "3", 1);
    setenv("GOALD_BREAKER_COOLDOWN_S", "10", 1);
    assert_int_equal(config_load(NULL), 0);
    /* closed -> open after 3 consecutive failures, recorded by another process */
    child_record("rate_limit", "r1", t);
    child_record("rate_limit", "r2", t);
    assert_string_equal(breaker_state("rate_limit"), "closed");
    assert_int_equal(breaker_gate(st, t, "x", &allowed, NULL, 0), 0);
    assert_int_equal(allowed, 1);
    child_record("rate_limit", "r3", t);
    assert_string_equal(breaker_state("rate_limit"), "open");
    assert_int_equal(count_events("circuit.opened"), 1);
    /* this process sees it: no claim during the cooldown */
    assert_int_equal(breaker_gate(st, t + 5000, "x", &allowed, blocking, sizeof(blocking)), 0);
    assert_int_equal(allowed, 0);
    assert_string_equal(blocking, "rate_limit");
    /* after the cooldown: half-open, exactly one probe (this process) */
    assert_int_equal(breaker_gate(st, t + 10000, "probe-1", &allowed, NULL, 0), 0);
    assert_int_equal(allowed, 1);
    assert_string_equal(breaker_state("rate_limit"), "half_open");
    assert_int_equal(count_events("circuit.half_open"), 1);
    assert_false(child_gate("other", t + 10001)); /* the other process may not */
    /* the probe succeeds: closed */
    assert_int_equal(breaker_record(st, NULL, "probe-1", t + 11000), 0);
    assert_string_equal(breaker_state("rate_limit"), "closed");
    assert_int_equal(count_events("circuit.closed"), 1);
    assert_true(child_gate("other", t + 11001));

    /* open -> half-open -> open: the probe fails */
    t += 100000;
    for (int i = 0; i < 3; i++)
        child_record("provider_api", "r", t);
    assert_string_equal(breaker_state("provider_api"), "open");
    assert_true(child_gate("probe-2", t + 10000)); /* the other process probes */
    assert_string_equal(breaker_state("provider_api"), "half_open");
    assert_int_equal(breaker_gate(st, t + 10001, "y", &allowed, NULL, 0), 0);
    assert_int_equal(allowed, 0);
    child_record("provider_api", "probe-2", t + 10500);
    assert_string_equal(breaker_state("provider_api"), "open");
    assert_int_equal(count_events("circuit.opened"), 3);
    /* the cooldown starts again from the failed probe */
    assert_int_equal(breaker_gate(st, t + 15000, "y", &allowed, NULL, 0), 0);
    assert_int_equal(allowed, 0);
    unsetenv("GOALD_BREAKER_THRESHOLD");
    unsetenv("GOALD_BREAKER_COOLDOWN_S");
    assert_int_equal(config_load(NULL), 0);
}

static void test_success_resets_count(void **state)
{
    (void)state;
    setenv("GOALD_BREAKER_THRESHOLD", "2", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(breaker_record(st, "timeout", "a", 1), 0);
    assert_int_equal(breaker_record(st, NULL, "b", 2), 0); /* not consecutive any more */
    assert_int_equal(breaker_record(st, "timeout", "c", 3), 0);
    assert_string_equal(breaker_state("timeout"), "closed");
    assert_int_equal(breaker_record(st, "timeout", "d", 4), 0);
    assert_string_equal(breaker_state("timeout"), "open");
    unsetenv("GOALD_BREAKER_THRESHOLD");
    assert_int_equal(config_load(NULL), 0);
}

static void test_stall_detection(void **state)
{
    struct progress_detector d;
    char a[HASH_HEX_SIZE], b[HASH_HEX_SIZE];
    (void)state;

    progress_init(&d, 3);
    progress_fingerprint(a, "diff1", "read:{\"path\":\"x\"}", NULL, "reply1");
    progress_fingerprint(b, "diff2", "read:{\"path\":\"x\"}", NULL, "reply1");
    assert_string_not_equal(a, b);
    assert_int_equal(progress_observe(&d, a), 0);
    assert_int_equal(progress_observe(&d, a), 0);
    assert_int_equal(progress_observe(&d, b), 0); /* progress: the count starts again */
    assert_int_equal(progress_observe(&d, b), 0);
    assert_int_equal(progress_observe(&d, b), 1); /* three identical in a row */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_run_limits),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_breaker_two_processes),
        cmocka_unit_test(test_success_resets_count),
        cmocka_unit_test(test_stall_detection),
    };
    int rc;

    testutil_setup("control");
    testutil_db(dbpath, sizeof(dbpath), "c.db");
    if (store_open(&st, dbpath) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
