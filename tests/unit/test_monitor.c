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
#include <string.h>

#include "lifecycle/intake.h"
#include "lifecycle/monitor.h"
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
    sqlite3_stmt *s;
    int64_t v = -1;

    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    if (arg)
        sqlite3_bind_text(s, 1, arg, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
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
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE goal_id = ? AND type = 'trigger.fired'"
                           " AND json_extract(payload, '$.fires') = 1",
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
    assert_int_equal(q_int("SELECT count(*) FROM events WHERE goal_id = ? AND type = 'trigger.skipped'"
                           " AND json_extract(payload, '$.open_instance') IS NOT NULL",
                           tmpl),
                     1);
    assert_int_equal(next_fire(tmpl), at("2026-11-22T13:00:00Z"));
    /* an active (not only queued) instance blocks too */
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'active' WHERE parent_id IS NOT NULL"), 0);
    assert_int_equal(monitor_fire_triggers(st, at("2026-11-22T13:00:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 1);

    /* the instance completes; the daemon is down from 13:00 to 17:30: the
     * fires of 14, 15, 16 and 17 h coalesce into one instance */
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'completed' WHERE parent_id IS NOT NULL"),
                     0);
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
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled' WHERE title = 'hourly'"), 0);
    assert_int_equal(monitor_fire_triggers(st, at("2030-01-01T05:00:00Z"), &fired), 0);
    assert_int_equal(fired, 0);
    assert_int_equal(instances(tmpl), 0);
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recurring_goal),
        cmocka_unit_test(test_cancelled_template),
    };
    int rc;

    testutil_setup("monitor");
    testutil_tmp_path(path, sizeof(path), "m.db");
    if (store_open(&st, path) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
