/* Unit tests: claiming units of work per lane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#include "lifecycle/claim.h"
#include "lifecycle/control.h"
#include "lifecycle/intake.h"
#include "lifecycle/plan.h"
#include "lifecycle/recover.h"
#include "lifecycle/transitions.h"
#include "store/goal.h"
#include "store/internal.h"
#include "store/item.h"
#include "store/run.h"
#include "tests/unit/testutil.h"
#include "util/config.h"
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
    store_stmt *s;
    int n;

    store_prepare_uncached(st, &s, "SELECT count(*) FROM runs WHERE status='running'");
    store_step(s);
    n = store_col_int(s, 0);
    store_finalize(s);
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
    assert_int_equal(claim_next(st, "plan", now, NULL, &c, NULL, 0), 0);
    assert_string_equal(c.goal_id, hi); /* priority first; templates never */
    assert_string_equal(c.kind, "elaborate");
    assert_string_equal(c.lane, "plan");
    assert_int_equal(c.attempt, 1);
    assert_string_equal(c.item_id, "");
    /* the goal with a running run is not claimed twice */
    assert_int_equal(claim_next(st, "plan", now, NULL, &c2, NULL, 0), 0);
    assert_string_equal(c2.goal_id, lo);
    assert_int_equal(claim_next(st, "plan", now, NULL, &c2, NULL, 0), ERR_NOTFOUND);
    assert_int_equal(runs_running(), 2);
    assert_int_equal(claim_load(st, c.run_id, &c2), 0);
    assert_string_equal(c2.kind, "elaborate");
    assert_string_equal(c2.goal_id, hi);
    /* elaborated: the next unit of the goal is its plan */
    assert_int_equal(transition_apply(st, ENTITY_RUN, c.run_id, "success", NULL, NULL), 0);
    assert_int_equal(claim_load(st, c.run_id, &c2), ERR_TRANSITION);
    assert_int_equal(transition_apply(st, ENTITY_GOAL, hi, "active", NULL, NULL), 0);
    assert_int_equal(store_exec(st, "UPDATE goals SET elaboration = '{}'"), 0);
    assert_int_equal(claim_next(st, "plan", now, NULL, &c, NULL, 0), 0);
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
    assert_int_equal(claim_next(st, "work", now, NULL, &c, NULL, 0), 0);
    assert_string_equal(c.kind, "execute");
    assert_string_equal(c.goal_id, g);
    assert_int_equal(c.attempt, 1);
    assert_true(c.item_id[0] != '\0');
    /* one item per goal at a time */
    assert_int_equal(claim_next(st, "work", now, NULL, &c2, NULL, 0), ERR_NOTFOUND);
    /* a breaker open stops claims */
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c.item_id, "failed", NULL, NULL), 0);
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c.item_id, "ready", NULL, NULL), 0);
    /* the other item has waited longer even when the host runs all this
     * within one millisecond (a tie would go to the smaller, random, id) */
    {
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "UPDATE work_items SET updated_at = updated_at - 1000"
                 " WHERE goal_id = '%s' AND id <> '%s'",
                 g, c.item_id);
        assert_int_equal(store_exec(st, sql), 0);
    }
    for (int i = 0; i < 5; i++)
        assert_int_equal(breaker_record(st, "rate_limit", "r", now), 0);
    assert_int_equal(claim_next(st, "work", now + 1, NULL, &c2, blocked, sizeof(blocked)),
                     ERR_NOTFOUND);
    assert_string_equal(blocked, "rate_limit");
    /* after the cooldown, one probe claim goes through: b, which has waited
     * longer than a (freshness), on its first attempt */
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, &c2, NULL, 0), 0);
    assert_string_not_equal(c2.item_id, c.item_id);
    assert_int_equal(c2.attempt, 1);
    /* while the probe runs, nothing else is claimed */
    assert_int_equal(transition_apply(st, ENTITY_ITEM, c2.item_id, "cancelled", NULL, NULL), 0);
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, &c, blocked, sizeof(blocked)),
                     ERR_NOTFOUND);
    assert_string_equal(blocked, "rate_limit");
    /* the probe's model call succeeds: closed; a's second claim counts its attempts */
    assert_int_equal(breaker_record(st, NULL, c2.run_id, now + 62000), 0);
    assert_int_equal(claim_next(st, "work", now + 61000, NULL, &c2, NULL, 0), 0);
    assert_int_equal(c2.attempt, 2);
}

/* A goal for the fixture: submitted, then put in status with extra SQL
 * run on it (?1 in extra is not bound: the id is spliced, it is ours). */
static void fixture_goal(char id[ID_SIZE], const char *title, const char *status, const char *set)
{
    char json[256], sql[512];

    snprintf(json, sizeof(json), "{\"title\":\"%s\"}", title);
    submit(id, json);
    snprintf(sql, sizeof(sql), "UPDATE goals SET status = '%s'%s%s WHERE id = '%s'", status,
             set ? ", " : "", set ? set : "", id);
    assert_int_equal(store_exec(st, sql), 0);
}

/* Items a (and b, c when n > 1) of goal g, with the given statuses. */
static void fixture_items(const char *g, int n, const char *const *statuses)
{
    static const char *const keys[] = {"a", "b", "c"};
    struct plan p;
    cJSON *j = cJSON_Parse("{\"work_items\":[{\"key\":\"a\",\"title\":\"A\",\"type\":\"code\","
                           "\"effort\":\"S\"},{\"key\":\"b\",\"title\":\"B\",\"type\":\"code\","
                           "\"effort\":\"S\"},{\"key\":\"c\",\"title\":\"C\",\"type\":\"code\","
                           "\"effort\":\"S\"}]}");

    while (cJSON_GetArraySize(cJSON_GetObjectItem(j, "work_items")) > n)
        cJSON_DeleteItemFromArray(cJSON_GetObjectItem(j, "work_items"), n);
    assert_int_equal(plan_parse(&p, j, 50), 0);
    cJSON_Delete(j);
    assert_int_equal(plan_store(st, g, &p), 0);
    plan_release(&p);
    for (int i = 0; i < n; i++) {
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "UPDATE work_items SET status = %s WHERE goal_id = '%s' AND"
                 " key = '%s'",
                 statuses[i], g, keys[i]);
        assert_int_equal(store_exec(st, sql), 0);
    }
}

extern const struct cli_command cmd_status;

/* `goald status --json`'s queues, from the command itself (its stdout
 * captured). */
static void status_queues(double *plan, double *work, double *waiting)
{
    struct cli_ctx c;
    char path[512], buf[65536];
    FILE *f;
    size_t n;
    int saved, fd;
    cJSON *o, *q;

    memset(&c, 0, sizeof(c));
    c.cmd = &cmd_status;
    c.st = st;
    c.val[0] = ""; /* --json */
    testutil_tmp_path(path, sizeof(path), "status.json");
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    cmd_status.run(&c); /* 3: no daemon; the output is printed either way */
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    o = cJSON_Parse(buf);
    q = cJSON_GetObjectItem(o, "queues");
    assert_non_null(q);
    *plan = cJSON_GetNumberValue(cJSON_GetObjectItem(q, "plan"));
    *work = cJSON_GetNumberValue(cJSON_GetObjectItem(q, "work"));
    *waiting = cJSON_GetNumberValue(cJSON_GetObjectItem(q, "waiting_on_dependencies"));
    cJSON_Delete(o);
}

/* How many units the lane's claims take, one after another, until nothing
 * is runnable. */
static int claims_until_empty(const char *lane, int64_t now)
{
    struct claim c;
    int n = 0, rc;

    while ((rc = claim_next(st, lane, now, NULL, &c, NULL, 0)) == 0)
        n++;
    assert_int_equal(rc, ERR_NOTFOUND);
    return n;
}

/* Nothing to claim and nothing running: every goal cancelled, every run
 * aborted, no breaker. */
static void fixture_clear(void)
{
    assert_int_equal(store_exec(st, "UPDATE goals SET status = 'cancelled'; "
                                    "UPDATE runs SET status = 'aborted'; DELETE FROM breakers"),
                     0);
}

/* n active, planned goals titled title, with one ready item each; id is
 * the last one's. */
static void fixture_ready_goals(char id[ID_SIZE], const char *title, int n)
{
    static const char *const ready[] = {"'ready'"};

    for (int i = 0; i < n; i++) {
        fixture_goal(id, title, "active", "elaboration = '{}'");
        fixture_items(id, 1, ready);
    }
}

/* `status` counts its queues by the claim rule itself.  Goals and
 * items in every state the rule tells apart; the counts status shows must
 * be what the claims then take (the old status counted a retry not yet
 * due, a goal with a running run, an unelaborated active goal, and a ready
 * item whose sibling is in progress). */
static void test_status_counts_are_the_claim_rule(void **state)
{
    static const char *const ready[] = {"'ready'"};
    static const char *const later[] = {"'ready'"};
    static const char *const busy[] = {"'in_progress'", "'ready'"};
    static const char *const done[] = {"'done'", "'skipped'"};
    static const char *const deps[] = {"'ready'", "'queued'", "'queued'"};
    char id[ID_SIZE], run[ID_SIZE], sql[512];
    double plan, work, waiting;
    int64_t now = time_now_ms();
    (void)state;

    fixture_clear();
    /* the plan lane */
    fixture_goal(id, "p queued", "queued", NULL);                          /* yes */
    fixture_goal(id, "p retry later", "queued", "next_attempt_at = 9e15"); /* no */
    fixture_goal(id, "p planned", "active", "elaboration = '{}'");         /* yes */
    fixture_goal(id, "p not elaborated", "active", NULL);                  /* no */
    fixture_goal(id, "p blocked", "blocked", NULL);                        /* no */
    fixture_goal(id, "p template", "queued", "is_template = 1");           /* no */
    fixture_goal(id, "p running", "queued", NULL);                         /* no */
    assert_int_equal(id_new(run), 0);
    snprintf(sql, sizeof(sql),
             "INSERT INTO runs(id, goal_id, kind, lane, status, created_at)"
             " VALUES ('%s', '%s', 'elaborate', 'plan', 'running', 1)",
             run, id);
    assert_int_equal(store_exec(st, sql), 0);
    /* the work lane */
    fixture_goal(id, "w ready", "active", "elaboration = '{}'");
    fixture_items(id, 1, ready); /* yes */
    fixture_goal(id, "w retry later", "active", "elaboration = '{}'");
    fixture_items(id, 1, later); /* no */
    snprintf(sql, sizeof(sql), "UPDATE work_items SET next_attempt_at = 9e15 WHERE goal_id = '%s'",
             id);
    assert_int_equal(store_exec(st, sql), 0);
    fixture_goal(id, "w sibling busy", "active", "elaboration = '{}'");
    fixture_items(id, 2, busy); /* no */
    fixture_goal(id, "w publish", "active", "elaboration = '{}'");
    fixture_items(id, 2, done); /* yes */
    fixture_goal(id, "w deps", "active", "elaboration = '{}'");
    fixture_items(id, 3, deps); /* a yes, 2 waiting */
    fixture_goal(id, "w blocked", "blocked", "elaboration = '{}'");
    fixture_items(id, 1, ready); /* no */

    status_queues(&plan, &work, &waiting);
    assert_int_equal((int)waiting, 2);
    /* what status counts is what the claims take */
    assert_int_equal((int)plan, 2);
    assert_int_equal(claims_until_empty("plan", now), (int)plan);
    assert_int_equal((int)work, 3);
    assert_int_equal(claims_until_empty("work", now), (int)work);
    /* and once taken, the queues are empty */
    status_queues(&plan, &work, &waiting);
    assert_int_equal((int)plan, 0);
    assert_int_equal((int)work, 0);
}

/* A claim records the node that took the run, and the lane's
 * global cap (running runs of every node, counted in the claim's
 * transaction) holds whichever node claims; 0 means no global cap. */
static void test_nodes_and_global_cap(void **state)
{
    const struct claim_scope a = {"node-a", NULL, 0, 0, NULL}, b = {"node-b", NULL, 0, 0, NULL};
    char id[ID_SIZE];
    struct claim c;
    struct store_run r;
    int64_t now = time_now_ms();
    (void)state;

    fixture_clear();
    fixture_ready_goals(id, "cap", 3);
    setenv("GOALD_DAEMON_GLOBAL_WORK_CAP", "2", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), 0);
    assert_int_equal(store_run_get(st, c.run_id, &r), 0);
    assert_string_equal(r.node_id, "node-a");
    assert_int_equal(claim_next(st, "work", now, &b, &c, NULL, 0), 0);
    assert_int_equal(store_run_get(st, c.run_id, &r), 0);
    assert_string_equal(r.node_id, "node-b");
    /* two running over the nodes: the third waits, for either node */
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), ERR_NOTFOUND);
    assert_non_null(strstr(err_last(), "global cap"));
    assert_int_equal(claim_next(st, "work", now, &b, &c, NULL, 0), ERR_NOTFOUND);
    assert_int_equal(runs_running(), 2);
    /* 0: no global cap */
    setenv("GOALD_DAEMON_GLOBAL_WORK_CAP", "0", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), 0);
    assert_int_equal(runs_running(), 3);
    unsetenv("GOALD_DAEMON_GLOBAL_WORK_CAP");
    assert_int_equal(config_load(NULL), 0);
}

/* A claimer's own lane cap counts what the database says runs on its
 * node (a run whose job died while its end could not be recorded still
 * holds its slot: the CI failure of pg.nodes_chaos, a node at 3 work runs
 * with a cap of 2), or on every node when cap_node is NULL. */
static void test_node_cap(void **state)
{
    const struct claim_scope a = {"node-a", NULL, 0, 2, "node-a"},
                             b = {"node-b", NULL, 0, 1, "node-b"},
                             any = {"node-c", NULL, 0, 3, NULL};
    char id[ID_SIZE];
    struct claim c;
    int64_t now = time_now_ms();
    (void)state;

    fixture_clear();
    fixture_ready_goals(id, "node cap", 5);
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), 0);
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), 0);
    /* a's two are running (nothing of a's daemon remembers them): full */
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), ERR_NOTFOUND);
    assert_non_null(strstr(err_last(), "lane's cap (2)"));
    /* another node's cap counts its own runs only */
    assert_int_equal(claim_next(st, "work", now, &b, &c, NULL, 0), 0);
    assert_int_equal(claim_next(st, "work", now, &b, &c, NULL, 0), ERR_NOTFOUND);
    /* NULL: every node's runs (3 running, cap 3) */
    assert_int_equal(claim_next(st, "work", now, &any, &c, NULL, 0), ERR_NOTFOUND);
    /* a run that ends frees its slot */
    assert_int_equal(store_exec(st, "UPDATE runs SET status = 'aborted' WHERE node_id = 'node-a'"),
                     0);
    assert_int_equal(claim_next(st, "work", now, &a, &c, NULL, 0), 0);
    assert_int_equal(runs_running(), 2);
}

/* A recovery that comes late (its job frozen past its node's death, the
 * item recovered by another node and claimed again) must not fail the
 * later run's item: it is refused, and the item stays the later run's. */
static void test_late_recovery_refused(void **state)
{
    char id[ID_SIZE], first[ID_SIZE], next[32];
    struct claim c;
    struct goal *g = NULL;
    struct work_item *item = NULL;
    struct recover_input in;
    int64_t now = time_now_ms();
    (void)state;

    fixture_clear();
    fixture_ready_goals(id, "late", 1);
    assert_int_equal(claim_next(st, "work", now, NULL, &c, NULL, 0), 0);
    snprintf(first, sizeof(first), "%s", c.run_id);
    /* the first run ended; its item was recovered elsewhere and claimed again */
    assert_int_equal(store_exec(st, "UPDATE runs SET status = 'failed'; "
                                    "UPDATE work_items SET status = 'ready', next_attempt_at = 0"),
                     0);
    assert_int_equal(claim_next(st, "work", now + 1, NULL, &c, NULL, 0), 0);
    assert_string_not_equal(c.run_id, first);
    assert_int_equal(store_goal_get(st, c.goal_id, &g), 0);
    assert_int_equal(store_item_get(st, c.item_id, &item), 0);
    memset(&in, 0, sizeof(in));
    in.goal = g;
    in.item = item;
    in.run_id = first;
    in.run_kind = "execute";
    in.attempt = 1;
    in.nmodels = 1;
    in.error_class = "provider_api";
    in.failure = "late";
    assert_int_equal(recover_run(st, &in, NULL, next, sizeof(next)), ERR_TRANSITION);
    assert_non_null(strstr(err_last(), "recovery is late"));
    store_item_free(item);
    item = NULL;
    assert_int_equal(store_item_get(st, c.item_id, &item), 0);
    assert_string_equal(item->status, "in_progress");
    /* the run that holds it is recovered as ever */
    in.item = item;
    in.run_id = c.run_id;
    assert_int_equal(recover_run(st, &in, NULL, next, sizeof(next)), 0);
    store_item_free(item);
    store_goal_free(g);
}

/* Rows where a count the claim picks read (goals.items, items_open,
 * work_items.dependents) differs from the count itself. */
static int facts_drift(void)
{
    store_stmt *s;
    int n;

    store_prepare_uncached(
        st, &s,
        "SELECT (SELECT count(*) FROM goals g WHERE items <> (SELECT count(*) FROM work_items w"
        " WHERE w.goal_id = g.id) OR items_open <> (SELECT count(*) FROM work_items w"
        " WHERE w.goal_id = g.id AND w.status NOT IN ('done', 'skipped')))"
        " + (SELECT count(*) FROM work_items w WHERE dependents <> (SELECT count(*)"
        " FROM work_item_deps d WHERE d.depends_on_id = w.id))");
    assert_int_equal(store_step(s), STORE_ROW);
    n = store_col_int(s, 0);
    store_finalize(s);
    return n;
}

/* The goal the publish (or plan) pick took before the counts: the rule
 * that probed each goal's items; "" when none. */
static void pick_by_probing(char out[ID_SIZE], const char *lane)
{
    static const char publish[] =
        "SELECT id FROM goals g WHERE status = 'active'"
        " AND (partial = 1 OR (EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id)"
        "      AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id"
        "                      AND w.status NOT IN ('done', 'skipped'))))"
        " ORDER BY priority DESC, created_at, id";
    static const char plan[] = "SELECT id FROM goals g WHERE status = 'active' AND is_template = 0"
                               " AND elaboration IS NOT NULL"
                               " AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id)"
                               " ORDER BY priority DESC, created_at, id";
    store_stmt *s;

    out[0] = '\0';
    store_prepare_uncached(st, &s, !strcmp(lane, "plan") ? plan : publish);
    if (store_step(s) == STORE_ROW)
        store_col_copy(out, ID_SIZE, s, 0);
    store_finalize(s);
}

/* The publish and plan picks take what the probing rule took. */
static void assert_picks_as_probing(int64_t now)
{
    struct store_run_pick p;
    char want[ID_SIZE];
    int rc;

    pick_by_probing(want, "work");
    rc = store_run_pick_publish(st, now, NULL, 0, &p);
    assert_int_equal(rc, want[0] ? 0 : ERR_NOTFOUND);
    if (want[0])
        assert_string_equal(p.goal_id, want);
    pick_by_probing(want, "plan");
    rc = store_run_pick_plan(st, now, NULL, 0, &p);
    assert_int_equal(rc, want[0] ? 0 : ERR_NOTFOUND);
    if (want[0]) {
        assert_string_equal(p.goal_id, want);
        assert_string_equal(p.kind, "plan");
    }
}

static void item_move(const char *g, const char *key, const char *from, const char *to)
{
    char id[ID_SIZE], sql[256];
    store_stmt *s;
    int changed = 0;

    snprintf(sql, sizeof(sql), "SELECT id FROM work_items WHERE goal_id = '%s' AND key = '%s'", g,
             key);
    store_prepare_uncached(st, &s, sql);
    assert_int_equal(store_step(s), STORE_ROW);
    store_col_copy(id, sizeof(id), s, 0);
    store_finalize(s);
    assert_int_equal(store_item_status_set(st, id, from, to, 0, time_now_ms(), &changed), 0);
    assert_int_equal(changed, 1);
}

static void plan_goal(const char *g, const char *json)
{
    struct plan p;
    cJSON *j = cJSON_Parse(json);

    assert_int_equal(plan_parse(&p, j, 50), 0);
    cJSON_Delete(j);
    assert_int_equal(plan_store(st, g, &p), 0);
    plan_release(&p);
}

/* The counts the picks read follow the items through plan, done, skip,
 * a hand edit, a further plan and cancel, and the picks take what the
 * rule that probed every goal's items took. */
static void test_queue_counts_follow_items(void **state)
{
    char g[ID_SIZE], other[ID_SIZE];
    struct store_run_pick p;
    int64_t now = time_now_ms();
    (void)state;

    fixture_clear();
    fixture_goal(other, "to plan, low", "active", "elaboration = '{}', priority = 10");
    fixture_goal(g, "to plan, high", "active", "elaboration = '{}', priority = 60");
    assert_int_equal(facts_drift(), 0);
    assert_picks_as_probing(now);
    assert_int_equal(store_run_pick_plan(st, now, NULL, 0, &p), 0);
    assert_string_equal(p.goal_id, g);
    plan_goal(g, "{\"work_items\":[{\"key\":\"a\",\"title\":\"A\",\"type\":\"code\",\"effort\":\"S\"},"
                 "{\"key\":\"b\",\"title\":\"B\",\"type\":\"code\",\"effort\":\"S\",\"depends_on\":[\"a\"]},"
                 "{\"key\":\"c\",\"title\":\"C\",\"type\":\"code\",\"effort\":\"S\","
                 "\"depends_on\":[\"a\",\"b\"]}]}");
    assert_int_equal(facts_drift(), 0);
    assert_picks_as_probing(now); /* planned: the plan pick moves to the other goal */
    assert_int_equal(store_run_pick_plan(st, now, NULL, 0, &p), 0);
    assert_string_equal(p.goal_id, other);
    item_move(g, "a", "ready", "in_progress");
    item_move(g, "a", "in_progress", "done");
    assert_int_equal(facts_drift(), 0);
    item_move(g, "b", "queued", "skipped");
    assert_int_equal(facts_drift(), 0);
    assert_int_equal(store_run_pick_publish(st, now, NULL, 0, &p), ERR_NOTFOUND);
    /* by hand, as an operator (or a test) may: the database keeps count */
    assert_int_equal(store_exec(st, "UPDATE work_items SET status = 'done' WHERE key = 'c'"), 0);
    assert_int_equal(facts_drift(), 0);
    assert_picks_as_probing(now);
    assert_int_equal(store_run_pick_publish(st, now, NULL, 0, &p), 0);
    assert_string_equal(p.goal_id, g);
    /* a further plan (replan) opens the goal again */
    plan_goal(g, "{\"work_items\":[{\"key\":\"d\",\"title\":\"D\",\"type\":\"code\",\"effort\":\"S\"},"
                 "{\"key\":\"e\",\"title\":\"E\",\"type\":\"code\",\"effort\":\"S\",\"depends_on\":[\"d\"]}]}");
    assert_int_equal(facts_drift(), 0);
    assert_picks_as_probing(now);
    assert_int_equal(store_run_pick_publish(st, now, NULL, 0, &p), ERR_NOTFOUND);
    item_move(g, "d", "ready", "cancelled");
    assert_int_equal(facts_drift(), 0);
    assert_picks_as_probing(now);
    /* a goal that publishes what it has */
    assert_int_equal(store_goal_set_partial(st, g), 0);
    assert_picks_as_probing(now);
    assert_int_equal(store_run_pick_publish(st, now, NULL, 0, &p), 0);
    assert_string_equal(p.goal_id, g);
    assert_int_equal(store_exec(st, "DELETE FROM work_item_deps"), 0);
    assert_int_equal(facts_drift(), 0);
}

int main(void)
{
    char path[512];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_lane),
        cmocka_unit_test(test_work_lane_and_breaker),
        cmocka_unit_test(test_status_counts_are_the_claim_rule),
        cmocka_unit_test(test_nodes_and_global_cap),
        cmocka_unit_test(test_node_cap),
        cmocka_unit_test(test_late_recovery_refused),
        cmocka_unit_test(test_queue_counts_follow_items),
    };
    int rc;

    testutil_setup("claim");
    testutil_db(path, sizeof(path), "c.db");
    if (store_open(&st, path) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    return rc;
}
