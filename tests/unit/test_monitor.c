/* Unit tests: recurring goals (monitor_fire_triggers) with a controlled
 * clock: a template fires an instance when due, skips while the previous
 * instance is open (no overlap), and fires missed while the daemon was
 * down coalesce into one instance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "lifecycle/intake.h"
#include "lifecycle/monitor.h"
#include "util/config.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/timeutil.h"

static store *st;

static int64_t at(const char *rfc3339)
{
    int64_t ms = 0;

    assert_int_equal(time_parse_rfc3339(&ms, rfc3339), 0);
    return ms;
}

/* One integer from a query with one text parameter (or none). */
static int64_t q_int(const char *sql, const char *arg)
{
    store_stmt *s;
    int64_t v = -1;

    assert_int_equal(store_prepare_uncached(st, &s, sql), 0);
    if (arg)
        store_bind_text(s, 1, arg);
    if (store_step(s) == STORE_ROW)
        v = store_col_i64(s, 0);
    store_finalize(s);
    return v;
}

static int instances(const char *tmpl)
{
    return (int)q_int("SELECT count(*) FROM goals WHERE parent_id = ? AND is_template = 0", tmpl);
}

static int64_t next_fire(const char *tmpl)
{
    return q_int("SELECT next_fire_at FROM triggers WHERE goal_id = ?", tmpl);
}

static void test_recurring_goal(void **state)
{
    static const char json[] = "{\"title\":\"nightly check\",\"schedule\":\"0 * * * *\"}";
    struct goal *g = NULL;
    char tmpl[ID_SIZE];
    int fired = -1;
    (void)state;

    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_int_equal(intake_submit(st, g, tmpl), 0);
    store_goal_free(g);
    assert_int_equal(q_int("SELECT is_template FROM goals WHERE id = ?", tmpl), 1);

    /* the first call makes the trigger, for the next fire after now */
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T10:30:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(next_fire(tmpl), at("2026-11-22T11:00:00Z"));
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T10:59:59Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 0);

    /* due: one instance, a queued goal whose parent is the template */
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T11:00:05Z"), &fired), 0);
    assert_int_equal(fired, 1);
    assert_int_equal(instances(tmpl), 1);
    assert_int_equal(q_int("SELECT count(*) FROM goals WHERE parent_id = ? AND status = 'queued'"
                           " AND schedule IS NULL AND title = 'nightly check'",
                           tmpl),
                     1);
    assert_int_equal(next_fire(tmpl), at("2026-11-22T12:00:00Z"));
    assert_int_equal(
        q_int("SELECT count(*) FROM events WHERE goal_id = ? AND type = 'trigger.fired'"
              " AND CAST(json_extract(payload, '$.fires') AS BIGINT) = 1",
              tmpl),
        1);
    /* the same moment again: nothing more */
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T11:00:06Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 1);

    /* never overlaps: the previous instance is still open, the fire is skipped */
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T12:00:01Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 1);
    assert_int_equal(
        q_int("SELECT count(*) FROM events WHERE goal_id = ? AND type = 'trigger.skipped'"
              " AND json_extract(payload, '$.open_instance') IS NOT NULL",
              tmpl),
        1);
    assert_int_equal(next_fire(tmpl), at("2026-11-22T13:00:00Z"));
    /* an active (not only queued) instance blocks too */
    assert_int_equal(
        store_exec(st, "UPDATE goals SET status = 'active' WHERE parent_id IS NOT NULL"), 0);
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T13:00:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 1);

    /* the instance completes; the daemon is down from 13:00 to 17:30: the
     * fires of 14, 15, 16 and 17 h coalesce into one instance */
    assert_int_equal(
        store_exec(st, "UPDATE goals SET status = 'completed' WHERE parent_id IS NOT NULL"), 0);
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T17:30:00Z"), &fired), 0);
    assert_int_equal(fired, 1);
    assert_int_equal(instances(tmpl), 2);
    assert_int_equal(q_int("SELECT json_extract(payload, '$.fires') FROM events WHERE goal_id = ?"
                           " AND type = 'trigger.fired' ORDER BY id DESC LIMIT 1",
                           tmpl),
                     4);
    /* the next fire is computed from now, not from the missed ones */
    assert_int_equal(next_fire(tmpl), at("2026-11-22T18:00:00Z"));
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T17:45:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 2);
    /* the template itself is never claimed as work: it stays a template */
    assert_int_equal(q_int("SELECT is_template FROM goals WHERE id = ?", tmpl), 1);
}

/* A cancelled template fires no more. */
static void test_cancelled_template(void **state)
{
    static const char json[] = "{\"title\":\"hourly\",\"schedule\":\"@hourly\"}";
    struct goal *g = NULL;
    char tmpl[ID_SIZE];
    int fired = -1;
    (void)state;

    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_int_equal(intake_submit(st, g, tmpl), 0);
    store_goal_free(g);
    assert_int_equal(monitor_fire_triggers(st, at("2030-01-01T00:30:00Z"), &fired), 0);
    assert_int_equal(next_fire(tmpl), at("2030-01-01T01:00:00Z"));
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled' WHERE title = 'hourly'"),
                     0);
    assert_int_equal(monitor_fire_triggers(st, at("2030-01-01T05:00:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 0);
}

static void submit(const char *json, char id[ID_SIZE])
{
    struct goal *g = NULL;

    if (intake_parse(&g, json, strlen(json), "g.json") != 0)
        fail_msg("%s: %s", json, err_last());
    assert_int_equal(intake_submit(st, g, id), 0);
    store_goal_free(g);
}

/* A goal past its deadline raises one `deadline` escalation (news, not a
 * stop: the goal keeps its status and goes on); goals that are done, have
 * no deadline or are templates raise none. */
static void test_deadlines(void **state)
{
    char late[ID_SIZE], active[ID_SIZE], done[ID_SIZE], none[ID_SIZE], tmpl[ID_SIZE];
    int raised = -1;
    (void)state;

    submit("{\"title\":\"late\",\"deadline\":\"2031-01-01T00:00:00Z\"}", late);
    submit("{\"title\":\"late and active\",\"deadline\":\"2031-01-01T00:00:00Z\"}", active);
    submit("{\"title\":\"done in time\",\"deadline\":\"2031-01-01T00:00:00Z\"}", done);
    submit("{\"title\":\"no deadline\"}", none);
    submit("{\"title\":\"template\",\"deadline\":\"2031-01-01T00:00:00Z\","
           "\"schedule\":\"@daily\"}",
           tmpl);
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'completed' WHERE title = "
                                    "'done in time'"),
                     0);
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'active' WHERE title = "
                                    "'late and active'"),
                     0);

    /* not yet */
    assert_int_equal(monitor_check_deadlines(st, at("2030-12-31T23:59:59Z"), &raised), 0);
    assert_int_equal(raised, 0);
    /* past it: the two open goals, each once */
    assert_int_equal(monitor_check_deadlines(st, at("2031-01-01T00:00:01Z"), &raised), 0);
    assert_int_equal(raised, 2);
    assert_int_equal(q_int("SELECT count(*) FROM escalations WHERE type = 'deadline'", NULL), 2);
    assert_int_equal(
        q_int("SELECT count(*) FROM escalations WHERE type = 'deadline' AND goal_id = ?"
              " AND status = 'open'",
              late),
        1);
    assert_int_equal(q_int("SELECT count(*) FROM escalations WHERE goal_id = ?", active), 1);
    assert_int_equal(q_int("SELECT count(*) FROM goals WHERE id = ? AND status = 'queued'", late),
                     1);
    assert_int_equal(q_int("SELECT count(*) FROM goals WHERE id = ? AND status = 'active'", active),
                     1);
    assert_int_equal(q_int("SELECT count(*) FROM escalations WHERE goal_id IN (SELECT id FROM goals"
                           " WHERE title IN ('done in time','no deadline','template'))",
                           NULL),
                     0);
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE goal_id = ? AND type = "
                           "'escalation.opened'",
                           late),
                     1);
    /* a later check raises nothing more */
    assert_int_equal(monitor_check_deadlines(st, at("2031-01-02T00:00:00Z"), &raised), 0);
    assert_int_equal(raised, 0);
    assert_int_equal(q_int("SELECT count(*) FROM escalations WHERE type = 'deadline'", NULL), 2);
    (void)none;
    (void)done;
    (void)tmpl;
}

/* The sweep: a goal that has spent its budget raises one `budget`
 * escalation; events and context packs past monitor.retention_days are
 * deleted, keeping each item's latest pack; the sweep leaves an event. */
static void test_sweep(void **state)
{
    char g[ID_SIZE], thrifty[ID_SIZE], item_a[ID_SIZE], item_b[ID_SIZE];
    struct monitor_sweep sw;
    int64_t now = time_now_ms(); /* the submits' events are recent */
    int64_t old = now - 91 * 86400000LL, recent = now - 89 * 86400000LL;
    char sql[1024];
    (void)state;

    assert_int_equal(store_exec(st, "DELETE FROM events"), 0);
    submit("{\"title\":\"spender\",\"budget\":{\"max_tokens\":1000}}", g);
    submit("{\"title\":\"thrifty\",\"budget\":{\"max_tokens\":1000}}", thrifty);
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'active', spent_tokens = 1500"
                                    " WHERE title = 'spender'"),
                     0);
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'active', spent_tokens = 999"
                                    " WHERE title = 'thrifty'"),
                     0);
    id_new(item_a);
    id_new(item_b);
    snprintf(sql, sizeof(sql),
             "INSERT INTO work_items(id, goal_id, key, title, created_at, updated_at) VALUES"
             " ('%s', '%s', 'wi-1', 'a', 0, 0), ('%s', '%s', 'wi-2', 'b', 0, 0)",
             item_a, g, item_b, g);
    if (store_exec(st, sql) != 0)
        fail_msg("%s", err_last());
    /* item a: two old packs (the later one is its latest); item b: an old
     * and a recent one */
    snprintf(sql, sizeof(sql),
             "INSERT INTO context_packs(goal_id, item_id, pack, created_at) VALUES"
             " ('%s', '%s', '{\"n\":1}', %lld), ('%s', '%s', '{\"n\":2}', %lld),"
             " ('%s', '%s', '{\"n\":3}', %lld), ('%s', '%s', '{\"n\":4}', %lld)",
             g, item_a, (long long)old - 1000, g, item_a, (long long)old, g, item_b, (long long)old,
             g, item_b, (long long)recent);
    assert_int_equal(store_exec(st, sql), 0);
    snprintf(sql, sizeof(sql),
             "INSERT INTO events(ts, goal_id, type) VALUES (%lld, '%s', 'old.one'),"
             " (%lld, '%s', 'old.two'), (%lld, '%s', 'recent.one')",
             (long long)old, g, (long long)old, g, (long long)recent, g);
    assert_int_equal(store_exec(st, sql), 0);

    assert_int_equal(monitor_sweep(st, now, 3, &sw), 0);
    assert_int_equal(sw.budget_escalations, 1);
    assert_int_equal(sw.runs_aborted, 3); /* the daemon's count, recorded */
    assert_int_equal(
        q_int("SELECT count(*) FROM escalations WHERE type = 'budget' AND goal_id = ?", g), 1);
    assert_int_equal(q_int("SELECT count(*) FROM escalations WHERE type = 'budget'", NULL), 1);
    assert_int_equal(sw.events_deleted, 2);
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE type LIKE 'old.%'", NULL), 0);
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE type = 'recent.one'", NULL), 1);
    assert_int_equal(sw.packs_deleted, 2);
    assert_int_equal(q_int("SELECT count(*) FROM context_packs WHERE item_id = ? AND"
                           " CAST(json_extract(pack, '$.n') AS BIGINT) = 2",
                           item_a),
                     1);
    assert_int_equal(q_int("SELECT count(*) FROM context_packs WHERE item_id = ? AND"
                           " CAST(json_extract(pack, '$.n') AS BIGINT) = 4",
                           item_b),
                     1);
    assert_int_equal(q_int("SELECT count(*) FROM context_packs WHERE goal_id = ?", g), 2);
    assert_int_equal(
        q_int("SELECT count(*) FROM events WHERE type = 'monitor.sweep'"
              " AND CAST(json_extract(payload, '$.events_deleted') AS BIGINT) = 2"
              " AND CAST(json_extract(payload, '$.context_packs_deleted') AS BIGINT) = 2"
              " AND CAST(json_extract(payload, '$.budget_escalations') AS BIGINT) = 1"
              " AND CAST(json_extract(payload, '$.runs_aborted') AS BIGINT) = 3",
              NULL),
        1);

    /* again: the open budget escalation is not repeated, nothing to delete */
    assert_int_equal(monitor_sweep(st, now + 1000, 0, &sw), 0);
    assert_int_equal(sw.budget_escalations, 0);
    assert_int_equal(sw.events_deleted, 0);
    assert_int_equal(sw.packs_deleted, 0);

    /* retention 0 keeps everything */
    setenv("GOALD_MONITOR_RETENTION_DAYS", "0", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(monitor_sweep(st, now + 400 * 86400000LL, 0, &sw), 0);
    assert_int_equal(sw.events_deleted, 0);
    assert_int_equal(sw.packs_deleted, 0);
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE type = 'recent.one'", NULL), 1);
    unsetenv("GOALD_MONITOR_RETENTION_DAYS");
    assert_int_equal(config_load(NULL), 0);
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recurring_goal),
        cmocka_unit_test(test_cancelled_template),
        cmocka_unit_test(test_deadlines),
        cmocka_unit_test(test_sweep),
    };
    int rc;

    testutil_setup("monitor");
    testutil_db(path, sizeof(path), "m.db");
    if (store_open(&st, path) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
