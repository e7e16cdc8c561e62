/* Unit tests: store open, pragmas, migrations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/gate_result.h"
#include "store/goal.h"
#include "store/heartbeat.h"
#include "store/internal.h"
#include "store/item.h"
#include "store/run.h"
#include "store/store.h"
#include "tests/unit/storehelp.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "util/strbuf.h"

/* A new store named rel (testutil_db), open: the test fails unless it
 * opens.  Closed with store_close(). */
static store *open_new(const char *rel)
{
    char path[512];
    store *st = NULL;

    testutil_db(path, sizeof(path), rel);
    assert_int_equal(store_open(&st, path), 0);
    return st;
}

static void test_fresh_database(void **state)
{
    char path[512];
    store *st = NULL;
    store_stmt *s;
    struct stat sb;
    int v = -1;

    (void)state;
    testutil_db(path, sizeof(path), "fresh/sub/goald.db");
    assert_int_equal(store_open(&st, path), 0);
    assert_int_equal(store_schema_version(st, &v), 0);
    assert_int_equal(v, store_schema_latest());
    assert_true(v >= 1);
    /* every table of docs/design.md §5 */
    static const char *tables[] = {
        "goals",         "work_items",  "work_item_deps",   "runs",      "events",
        "context_packs", "escalations", "artifacts",        "decisions", "gate_results",
        "triggers",      "breakers",    "schema_migrations"};
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        assert_int_equal(
            store_prepare_uncached(st, &s,
                                   store_sql(st,
                                             "SELECT count(*) FROM sqlite_master WHERE "
                                             "type='table' AND name=?",
                                             "SELECT count(*) FROM information_schema.tables "
                                             "WHERE table_schema = current_schema() AND "
                                             "table_name = ?")),
            0);
        store_bind_text(s, 1, tables[i]);
        assert_int_equal(store_step(s), STORE_ROW);
        if (store_col_int(s, 0) != 1)
            fail_msg("table %s missing", tables[i]);
        store_finalize(s);
    }
    if (store_dialect_of(st) == STORE_PG) {
        store_close(st);
        return; /* the rest is the SQLite file's */
    }
    /* pragmas */
    assert_int_equal(store_prepare_uncached(st, &s, "PRAGMA journal_mode"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_string_equal(store_col_raw(s, 0), "wal");
    store_finalize(s);
    assert_int_equal(store_prepare_uncached(st, &s, "PRAGMA foreign_keys"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_int_equal(store_col_int(s, 0), 1);
    store_finalize(s);
    assert_int_equal(store_prepare_uncached(st, &s, "PRAGMA synchronous"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_int_equal(store_col_int(s, 0), 1); /* NORMAL */
    store_finalize(s);
    store_close(st);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
}

static void test_reopen_applies_nothing(void **state)
{
    char path[512];
    store *st = NULL;
    int applied = -1;
    store_stmt *s;

    (void)state;
    testutil_db(path, sizeof(path), "reopen.db");
    assert_int_equal(store_open(&st, path), 0);
    store_close(st);
    assert_int_equal(store_open(&st, path), 0);
    assert_int_equal(store_migrate(st, &applied), 0);
    assert_int_equal(applied, 0);
    assert_int_equal(store_prepare_uncached(st, &s, "SELECT count(*) FROM schema_migrations"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_int_equal(store_col_int(s, 0), store_dialect_of(st) == STORE_PG
                                              ? (int)store_migrations_pg_count
                                              : (int)store_migrations_count);
    store_finalize(s);
    store_close(st);
}

/* migrations/pg/ is embedded apart from the SQLite ones (the glob of
 * migrations/ does not reach into pg/): it starts at the baseline 0012 and
 * reaches the same newest version. */
static void test_pg_migrations_embedded(void **state)
{
    (void)state;
    assert_true(store_migrations_pg_count >= 1);
    assert_int_equal(store_migrations_pg[0].version, 12);
    assert_string_equal(store_migrations_pg[0].name, "0012_baseline");
    assert_non_null(strstr(store_migrations_pg[0].sql, "GENERATED ALWAYS AS IDENTITY"));
    for (size_t i = 1; i < store_migrations_pg_count; i++)
        assert_true(store_migrations_pg[i].version > store_migrations_pg[i - 1].version);
    assert_int_equal(store_migrations_pg[store_migrations_pg_count - 1].version,
                     store_schema_latest());
    for (size_t i = 0; i < store_migrations_count; i++)
        assert_null(strstr(store_migrations[i].sql, "IDENTITY"));
}

static void test_newer_database_refused(void **state)
{
    char path[512];
    char sql[256];
    store *st = NULL;
    int latest = store_schema_latest();

    (void)state;
    testutil_db(path, sizeof(path), "newer.db");
    assert_int_equal(store_open(&st, path), 0);
    snprintf(sql, sizeof(sql),
             "INSERT INTO schema_migrations(version, name, applied_at) VALUES (%d, 'future', 0)",
             latest + 5);
    assert_int_equal(store_exec(st, sql), 0);
    store_close(st);
    st = NULL;
    assert_int_equal(store_open(&st, path), ERR_VERSION);
    assert_null(st);
    snprintf(sql, sizeof(sql), "database schema version %d is newer than this goald", latest + 5);
    assert_non_null(strstr(err_last(), sql));
    snprintf(sql, sizeof(sql), "knows up to version %d", latest);
    assert_non_null(strstr(err_last(), sql));
}

static void test_nested_transactions(void **state)
{
    store *st;
    store_stmt *s;

    (void)state;
    st = open_new("tx.db");
    assert_int_equal(store_tx_begin(st), 0);
    assert_int_equal(store_exec(st, "INSERT INTO breakers(error_class, updated_at) VALUES "
                                    "('a', 0)"),
                     0);
    assert_int_equal(store_tx_begin(st), 0);
    assert_int_equal(store_exec(st, "INSERT INTO breakers(error_class, updated_at) VALUES "
                                    "('b', 0)"),
                     0);
    store_tx_rollback(st); /* only b goes */
    assert_int_equal(store_tx_commit(st), 0);
    assert_int_equal(
        store_prepare_uncached(st, &s, "SELECT min(error_class) || count(*) FROM breakers"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    assert_string_equal(store_col_raw(s, 0), "a1");
    store_finalize(s);
    store_close(st);
}

/* A statement that fails inside a transaction: SQLite goes on with the
 * transaction, PostgreSQL aborts it - and its COMMIT then answers success
 * with the tag ROLLBACK, which the store must report as the failure it is. */
static void test_commit_after_failed_statement(void **state)
{
    store *st;
    store_stmt *s;
    int rc;

    (void)state;
    st = open_new("failed.db");
    assert_int_equal(store_tx_begin(st), 0);
    assert_int_equal(
        store_exec(st, "INSERT INTO breakers(error_class, updated_at) VALUES ('a', 0)"), 0);
    assert_int_not_equal(
        store_exec(st, "INSERT INTO breakers(error_class, updated_at) VALUES ('a', 0)"), 0);
    rc = store_tx_commit(st);
    assert_int_equal(store_prepare_uncached(st, &s, "SELECT count(*) FROM breakers"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    if (store_dialect_of(st) == STORE_PG) {
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err_last(), "rolled back"));
        assert_int_equal(store_col_int(s, 0), 0);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(store_col_int(s, 0), 1);
    }
    store_finalize(s);
    store_close(st);
}

/* A heartbeat row per node; the freshest is the default. */
static void test_heartbeat_per_node(void **state)
{
    store *st;
    struct store_heartbeat hb;
    struct store_heartbeat a = {
        .node_id = "a", .host = "h1", .pid = 11, .started_at = 1, .last_tick = 100, .lanes = "{}"};
    struct store_heartbeat b = {.node_id = "b",
                                .host = "h2",
                                .pid = 22,
                                .started_at = 2,
                                .last_tick = 200,
                                .lanes = "{\"plan\": {}}"};
    long pid = 0;
    int64_t tick = 0;
    int found = 0;

    (void)state;
    st = open_new("nodes.db");
    assert_int_equal(store_heartbeat_read(st, NULL, &hb), ERR_NOTFOUND);
    assert_int_equal(store_heartbeat_write(st, &a), 0);
    assert_int_equal(store_heartbeat_write(st, &b), 0);
    a.last_tick = 150; /* a's next tick: its row, replaced */
    assert_int_equal(store_heartbeat_write(st, &a), 0);
    assert_int_equal(store_heartbeat_read(st, NULL, &hb), 0);
    assert_string_equal(hb.node_id, "b");
    assert_string_equal(hb.lanes, "{\"plan\": {}}");
    store_heartbeat_release(&hb);
    assert_int_equal(store_heartbeat_read(st, "a", &hb), 0);
    assert_string_equal(hb.host, "h1");
    assert_int_equal(hb.pid, 11);
    assert_int_equal(hb.last_tick, 150);
    store_heartbeat_release(&hb);
    assert_int_equal(store_heartbeat_tick(st, "a", &pid, &tick, &found), 0);
    assert_int_equal(found, 1);
    assert_int_equal(pid, 11);
    assert_int_equal(store_heartbeat_delete(st, "b"), 0);
    assert_int_equal(store_heartbeat_read(st, "b", &hb), ERR_NOTFOUND);
    assert_int_equal(store_heartbeat_tick(st, NULL, &pid, &tick, &found), 0);
    assert_int_equal(pid, 11);
    store_close(st);
}

/* A wake from one connection reaches another that listens
 * (PostgreSQL's NOTIFY); SQLite has none (one node, woken by its socket). */
static void test_wake_between_connections(void **state)
{
    char path[512];
    store *a = NULL, *b = NULL;
    struct pollfd p;
    int n = 0;

    (void)state;
    testutil_db(path, sizeof(path), "wake.db");
    assert_int_equal(store_open(&a, path), 0);
    assert_int_equal(store_open(&b, path), 0);
    assert_int_equal(store_wake_listen(a), 0);
    if (store_dialect_of(a) != STORE_PG) {
        assert_int_equal(store_wake_fd(a), -1);
        assert_int_equal(store_wake_nodes(b), 0);
        goto out;
    }
    assert_true(store_wake_fd(a) >= 0);
    assert_int_equal(store_wake_drain(a), 0);
    /* a node frozen inside a transaction does not hold the write lock of
     * every node for ever */
    {
        store_stmt *s;
        assert_int_equal(
            store_prepare_uncached(a, &s,
                                   "SELECT current_setting('idle_in_transaction_session_timeout')"),
            0);
        assert_int_equal(store_step(s), STORE_ROW);
        assert_string_equal(store_col_text(s, 0), "1min");
        store_finalize(s);
    }
    /* inside a transaction: delivered at the commit, not before */
    assert_int_equal(store_tx_begin(b), 0);
    assert_int_equal(store_wake_nodes(b), 0);
    p.fd = store_wake_fd(a);
    p.events = POLLIN;
    assert_int_equal(poll(&p, 1, 200), 0);
    assert_int_equal(store_tx_commit(b), 0);
    for (int i = 0; i < 50 && n == 0; i++) {
        p.fd = store_wake_fd(a);
        p.events = POLLIN;
        if (poll(&p, 1, 100) > 0)
            n = store_wake_drain(a);
    }
    assert_int_equal(n, 1);
out:
    store_close(b);
    store_close(a);
}

/* The reads of one item's events (its tool calls, its owed Plan B, its
 * recovery history: every execute run makes them) use an index: without
 * one each read scans the whole event log, and an item costs more with
 * every goal ever run. */
static void test_events_by_item_indexed(void **state)
{
    store *st;
    store_stmt *s;
    strbuf plan;
    int pg;

    (void)state;
    strbuf_init(&plan, 65536);
    st = open_new("events_item.db");
    pg = store_dialect_of(st) == STORE_PG;
    /* PostgreSQL: on an empty table a scan is cheaper, so scans are
     * priced out; the index is then taken when there is one */
    if (pg)
        store_test_exec(st, "SET enable_seqscan = off", NULL, 0);
    assert_int_equal(
        store_prepare_uncached(st, &s,
                               store_sql(st,
                                         "EXPLAIN QUERY PLAN SELECT type, payload FROM events "
                                         "WHERE item_id = 'x' AND type IN ('tool_call.started', "
                                         "'tool_call.completed') ORDER BY id",
                                         "EXPLAIN SELECT type, payload FROM events "
                                         "WHERE item_id = 'x' AND type IN ('tool_call.started', "
                                         "'tool_call.completed') ORDER BY id")),
        0);
    while (store_step(s) == STORE_ROW)
        assert_int_equal(strbuf_adds(&plan, store_col_text(s, pg ? 0 : 3)), 0);
    store_finalize(s);
    if (!strstr(strbuf_cstr(&plan), "events_item"))
        fail_msg("the read of an item's events does not use events_item: %s", strbuf_cstr(&plan));
    strbuf_release(&plan);
    store_close(st);
}

/* A read that fails is an error, never "no row": with the server gone
 * (the connection ended inside a transaction), a run's facts are not
 * "run not found" (the daemon took that for a run already ended, and a
 * job's end was lost in a server restart); once the server can be
 * reached again (store_reachable), the read works.  PostgreSQL only: a
 * SQLite file has no connection to lose. */
static void test_failed_read_is_not_absence(void **state)
{
    char path[512];
    store *a = NULL, *b = NULL;
    store_stmt *s;
    struct store_run_facts f;
    int64_t pid, gone = 0;

    (void)state;
    testutil_db(path, sizeof(path), "lost.db");
    assert_int_equal(store_open(&a, path), 0);
    assert_int_equal(store_reachable(a), 0);
    if (store_dialect_of(a) != STORE_PG)
        goto out;
    assert_int_equal(store_open(&b, path), 0);
    /* prepared (cached) while the server is there */
    assert_int_equal(store_run_facts_get(a, "no-such-run", &f), ERR_NOTFOUND);
    assert_int_equal(store_prepare_uncached(a, &s, "SELECT pg_backend_pid()"), 0);
    assert_int_equal(store_step(s), STORE_ROW);
    pid = store_col_i64(s, 0);
    store_finalize(s);
    assert_int_equal(store_tx_begin(a), 0);
    assert_int_equal(store_prepare_uncached(b, &s, "SELECT pg_terminate_backend(?1)"), 0);
    store_bind_args(s, STORE_ARGS(STORE_I64(pid)));
    assert_int_equal(store_step(s), STORE_ROW);
    store_finalize(s);
    for (int i = 0; i < 100 && !gone; i++) {
        assert_int_equal(store_prepare_uncached(b, &s,
                                                "SELECT count(*) FROM pg_stat_activity"
                                                " WHERE pid = ?1"),
                         0);
        store_bind_args(s, STORE_ARGS(STORE_I64(pid)));
        assert_int_equal(store_step(s), STORE_ROW);
        gone = store_col_i64(s, 0) == 0;
        store_finalize(s);
        if (!gone)
            usleep(20000);
    }
    assert_true(gone);
    assert_int_equal(store_run_facts_get(a, "no-such-run", &f), ERR_DB);
    assert_int_not_equal(store_tx_end(a, ERR_DB), 0);
    /* outside the transaction: reached again, and the read answers */
    assert_int_equal(store_reachable(a), 0);
    assert_int_equal(store_run_facts_get(a, "no-such-run", &f), ERR_NOTFOUND);
out:
    store_close(b);
    store_close(a);
}

/* Every column of goals, work_items and runs goes in and comes back out
 * as the member it belongs to (each entity's X-macro list: a column in
 * the wrong place, of the wrong kind, or missing fails here). */
/* gate_tree_runs keeps a tree's first run: a pass recorded after a
 * failure of the same gate, command and digest on the same tree changes
 * nothing; another digest is another run. */
static void test_gate_tree_first_run(void **state)
{
    store *st = open_new("tree_runs.db");
    struct goal g = {.id = "g-tree",
                     .title = "t",
                     .spec = "{}",
                     .status = "active",
                     .deadline_at = -1,
                     .budget_max_tokens = -1,
                     .budget_max_cost_usd = -1,
                     .budget_max_hours = -1,
                     .started_at = -1,
                     .ended_at = -1};
    struct store_gate_tree_run r = {.goal_id = "g-tree", .gate = "tests", .command = "sh t",
                                    .env = "e1", .tree_id = "t1", .run_id = "run-1",
                                    .passed = 0, .reusable = 0, .exit_code = 1};
    struct store_gate_tree_hit h;
    int found = 0;

    (void)state;
    assert_int_equal(store_goal_insert(st, &g), 0);
    assert_int_equal(store_gate_tree_run_get(st, &r, &h, &found), 0);
    assert_int_equal(found, 0);
    store_gate_tree_hit_release(&h);
    assert_int_equal(store_gate_tree_run_put(st, &r), 0);
    /* the second try passes: not recorded over the first */
    r.run_id = "run-2";
    r.passed = r.reusable = 1;
    r.exit_code = 0;
    r.format = "tap";
    r.cases = "[[\"a\",\"pass\",null]]";
    assert_int_equal(store_gate_tree_run_put(st, &r), 0);
    assert_int_equal(store_gate_tree_run_get(st, &r, &h, &found), 0);
    assert_int_equal(found, 1);
    assert_string_equal(h.run_id, "run-1");
    assert_int_equal(h.passed, 0);
    assert_int_equal(h.reusable, 0);
    assert_int_equal(h.exit_code, 1);
    store_gate_tree_hit_release(&h);
    /* another digest (a gate setting, the sandbox) is another run */
    r.env = "e2";
    assert_int_equal(store_gate_tree_run_put(st, &r), 0);
    assert_int_equal(store_gate_tree_run_get(st, &r, &h, &found), 0);
    assert_int_equal(found, 1);
    assert_string_equal(h.run_id, "run-2");
    assert_int_equal(h.passed, 1);
    assert_int_equal(h.reusable, 1);
    assert_string_equal(h.format, "tap");
    assert_string_equal(h.cases, "[[\"a\",\"pass\",null]]");
    store_gate_tree_hit_release(&h);
    store_close(st);
}

static void test_rows_round_trip(void **state)
{
    store *st = open_new("rows.db");
    struct goal g = {.id = "g-rows",
                     .parent_id = NULL,
                     .title = "t",
                     .description = "d",
                     .status = "active",
                     .priority = 7,
                     .is_template = 1,
                     .schedule = "@daily",
                     .repo = "/r",
                     .base_branch = "main",
                     .branch = "goal/x",
                     .worktree = "/w",
                     .deadline_at = 11,
                     .budget_max_tokens = 12,
                     .budget_max_cost_usd = 1.5,
                     .budget_max_hours = 2.5,
                     .spent_tokens = 13,
                     .spent_cost_usd = 0.25,
                     .spent_wall_ms = 14,
                     .success_criteria = "[\"c\"]",
                     .allowed_actions = "[\"a\"]",
                     .verification = "[\"v\"]",
                     .publish = "{\"p\":1}",
                     .elaboration = "{\"e\":1}",
                     .spec = "{\"s\":1}",
                     .partial = 1,
                     .blocked_reason = "br",
                     .started_at = 15,
                     .ended_at = 16,
                     .outcome = "nothing_to_do",
                     .outcome_reason = "or",
                     .head_commit = "hc"};
    struct work_item wi = {.id = "i-rows",
                           .goal_id = "g-rows",
                           .key = "k",
                           .title = "it",
                           .description = "id",
                           .type = "test",
                           .status = "ready",
                           .priority = 8,
                           .effort = "XL",
                           .critical = 1,
                           .attempts = 2,
                           .tier = 3,
                           .max_retries = 4,
                           .model_index = 5,
                           .next_attempt_at = 17,
                           .timeout_s = 18,
                           .strategy = "st",
                           .human_input = "hi",
                           .question = "q",
                           .summary = "su",
                           .verified = 1,
                           .commit_sha = "cs",
                           .criteria = "[0]"};
    struct store_run_new rn = {.id = "r-rows",
                               .goal_id = "g-rows",
                               .item_id = "i-rows",
                               .kind = "execute",
                               .lane = "work",
                               .attempt = 2,
                               .tier = 3,
                               .model_index = 1,
                               .timeout_s = 19,
                               .lease_until = 20,
                               .now_ms = 21,
                               .node_id = "n"};
    struct goal *g2 = NULL;
    struct work_item *w2 = NULL;
    struct store_run r2;

    (void)state;
    assert_int_equal(store_goal_insert(st, &g), 0);
    assert_int_equal(store_goal_get(st, "g-rows", &g2), 0);
    assert_string_equal(g2->id, "g-rows");
    assert_null(g2->parent_id);
    assert_string_equal(g2->title, "t");
    assert_string_equal(g2->description, "d");
    assert_string_equal(g2->status, "active");
    assert_int_equal(g2->priority, 7);
    assert_int_equal(g2->is_template, 1);
    assert_string_equal(g2->schedule, "@daily");
    assert_string_equal(g2->repo, "/r");
    assert_string_equal(g2->base_branch, "main");
    assert_string_equal(g2->branch, "goal/x");
    assert_string_equal(g2->worktree, "/w");
    assert_int_equal(g2->deadline_at, 11);
    assert_int_equal(g2->budget_max_tokens, 12);
    assert_true(g2->budget_max_cost_usd == 1.5);
    assert_true(g2->budget_max_hours == 2.5);
    assert_int_equal(g2->spent_tokens, 13);
    assert_true(g2->spent_cost_usd == 0.25);
    assert_int_equal(g2->spent_wall_ms, 14);
    assert_string_equal(g2->success_criteria, "[\"c\"]");
    assert_string_equal(g2->allowed_actions, "[\"a\"]");
    assert_string_equal(g2->verification, "[\"v\"]");
    assert_string_equal(g2->publish, "{\"p\":1}");
    assert_string_equal(g2->elaboration, "{\"e\":1}");
    assert_string_equal(g2->spec, "{\"s\":1}");
    assert_int_equal(g2->partial, 1);
    assert_string_equal(g2->blocked_reason, "br");
    assert_int_equal(g2->created_at, g.created_at);
    assert_int_equal(g2->updated_at, g.updated_at);
    assert_int_equal(g2->started_at, 15);
    assert_int_equal(g2->ended_at, 16);
    assert_string_equal(g2->outcome, "nothing_to_do");
    assert_string_equal(g2->outcome_reason, "or");
    assert_string_equal(g2->head_commit, "hc");

    assert_int_equal(store_item_insert(st, &wi), 0);
    assert_int_equal(store_item_get(st, "i-rows", &w2), 0);
    assert_string_equal(w2->id, "i-rows");
    assert_string_equal(w2->goal_id, "g-rows");
    assert_string_equal(w2->key, "k");
    assert_string_equal(w2->title, "it");
    assert_string_equal(w2->description, "id");
    assert_string_equal(w2->type, "test");
    assert_string_equal(w2->status, "ready");
    assert_int_equal(w2->priority, 8);
    assert_string_equal(w2->effort, "XL");
    assert_int_equal(w2->critical, 1);
    assert_int_equal(w2->attempts, 2);
    assert_int_equal(w2->tier, 3);
    assert_int_equal(w2->max_retries, 4);
    assert_int_equal(w2->model_index, 5);
    assert_int_equal(w2->next_attempt_at, 17);
    assert_int_equal(w2->timeout_s, 18);
    assert_string_equal(w2->strategy, "st");
    assert_string_equal(w2->human_input, "hi");
    assert_string_equal(w2->question, "q");
    assert_string_equal(w2->summary, "su");
    assert_int_equal(w2->verified, 1);
    assert_string_equal(w2->commit_sha, "cs");
    assert_int_equal(w2->created_at, wi.created_at);
    assert_int_equal(w2->updated_at, wi.updated_at);
    assert_int_equal(w2->started_at, -1); /* not yet, whatever the struct said */
    assert_int_equal(w2->ended_at, -1);
    assert_string_equal(w2->criteria, "[0]");

    assert_int_equal(store_run_insert(st, &rn), 0);
    assert_int_equal(store_run_get(st, "r-rows", &r2), 0);
    assert_string_equal(r2.id, "r-rows");
    assert_string_equal(r2.goal_id, "g-rows");
    assert_string_equal(r2.item_id, "i-rows");
    assert_string_equal(r2.kind, "execute");
    assert_string_equal(r2.lane, "work");
    assert_string_equal(r2.status, "running");
    assert_int_equal(r2.attempt, 2);
    assert_int_equal(r2.timeout_s, 19);
    assert_int_equal(r2.pid, 0);
    assert_int_equal(r2.lease_until, 20);
    assert_int_equal(r2.started_at, 21);
    assert_string_equal(r2.failure_reason, "");
    assert_string_equal(r2.node_id, "n");

    store_item_free(w2);
    store_goal_free(g2);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_database),
        cmocka_unit_test(test_reopen_applies_nothing),
        cmocka_unit_test(test_pg_migrations_embedded),
        cmocka_unit_test(test_newer_database_refused),
        cmocka_unit_test(test_nested_transactions),
        cmocka_unit_test(test_commit_after_failed_statement),
        cmocka_unit_test(test_heartbeat_per_node),
        cmocka_unit_test(test_wake_between_connections),
        cmocka_unit_test(test_events_by_item_indexed),
        cmocka_unit_test(test_failed_read_is_not_absence),
        cmocka_unit_test(test_rows_round_trip),
        cmocka_unit_test(test_gate_tree_first_run),
    };
    testutil_setup("store");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
