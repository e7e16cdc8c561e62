/*
 * bench_claim.c - the per-item claim latency of the work lane, on SQLite
 * and on PostgreSQL.
 *
 * usage: bench_claim TARGET [GOALS]
 *   TARGET: a SQLite file path (made fresh) or a postgres:// URL of an
 *   empty database or schema.  GOALS (default 200) goals of 3 independent
 *   items each are planned; then every item is claimed (claim_next, the
 *   daemon's own call: one write transaction choosing the best ready item,
 *   writing the run and moving the item), one after another, and each
 *   claim's wall time is recorded.  A claimed item's run ends at once
 *   (success), so its goal's next item can be claimed; a goal's publish
 *   unit, claimed once its items are done, ends with its goal (not
 *   counted).
 *
 * Prints the median, p90 and p99 claim time and the claims per second.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lifecycle/claim.h"
#include "lifecycle/intake.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "store/internal.h"
#include "store/store.h"
#include "util/err.h"
#include "util/timeutil.h"

static const char plan_json[] =
    "{\"work_items\":[{\"key\":\"a\",\"title\":\"A\",\"type\":\"code\",\"effort\":\"S\"},"
    "{\"key\":\"b\",\"title\":\"B\",\"type\":\"code\",\"effort\":\"S\"},"
    "{\"key\":\"c\",\"title\":\"C\",\"type\":\"code\",\"effort\":\"S\"}]}";

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* One planned goal of three ready items. */
static int make_goal(store *st, int i)
{
    char json[128], id[ID_SIZE];
    struct goal *g = NULL;
    struct plan p;
    cJSON *j;
    int rc;

    snprintf(json, sizeof(json), "{\"title\":\"bench goal %d\"}", i);
    if ((rc = intake_parse(&g, json, strlen(json), "bench.json")) != 0)
        return rc;
    rc = intake_submit(st, g, id);
    store_goal_free(g);
    if (rc == 0)
        rc = transition_apply(st, ENTITY_GOAL, id, "active", NULL, NULL);
    if (rc)
        return rc;
    j = cJSON_Parse(plan_json);
    rc = plan_parse(&p, j, 50);
    cJSON_Delete(j);
    if (rc == 0) {
        rc = plan_store(st, id, &p);
        plan_release(&p);
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *target = argc > 1 ? argv[1] : NULL;
    int goals = argc > 2 ? atoi(argv[2]) : 200;
    int64_t *t = NULL;
    store *st = NULL;
    int n = 0, rc;
    int64_t t0, all;

    if (!target || goals < 1) {
        fprintf(stderr, "usage: bench_claim TARGET [GOALS]\n");
        return 2;
    }
    if (!store_is_url(target))
        unlink(target);
    if ((rc = store_open(&st, target)) != 0)
        goto fail;
    for (int i = 0; i < goals; i++)
        if ((rc = make_goal(st, i)) != 0)
            goto fail;
    /* statistics for the planner, as autovacuum (PostgreSQL) would have
     * by the time a queue this size had built up; without them PostgreSQL
     * joins the claim query's goals by a filter (15 ms a claim at 200
     * goals, 1 ms with them) */
    if ((rc = store_exec(st, "ANALYZE")) != 0)
        goto fail;
    t = calloc((size_t)goals * 3, sizeof(*t));
    all = time_mono_ms();
    while (n < goals * 3) {
        struct claim c;

        t0 = time_mono_us();
        rc = claim_next(st, "work", time_now_ms(), NULL, &c, NULL, 0);
        t[n] = time_mono_us() - t0;
        if (rc)
            goto fail;
        if (!c.item_id[0]) {
            /* a goal whose items are all done: its publish unit, ended
             * here with the goal (not an item's claim: not counted) */
            if ((rc = transition_apply(st, ENTITY_RUN, c.run_id, "success", NULL, NULL)) != 0 ||
                (rc = transition_apply(st, ENTITY_GOAL, c.goal_id, "completed", NULL, NULL)) != 0)
                goto fail;
            continue;
        }
        n++;
        if ((rc = transition_apply(st, ENTITY_ITEM, c.item_id, "verify", NULL, NULL)) != 0 ||
            (rc = transition_apply(st, ENTITY_ITEM, c.item_id, "done", NULL, NULL)) != 0 ||
            (rc = transition_apply(st, ENTITY_RUN, c.run_id, "success", NULL, NULL)) != 0)
            goto fail;
    }
    all = time_mono_ms() - all;
    qsort(t, (size_t)n, sizeof(*t), cmp_i64);
    printf("%s: %d claims of the work lane (%d goals of 3 items)\n",
           store_is_url(target) ? "postgres" : "sqlite", n, goals);
    printf("claim: median %.3f ms, p90 %.3f ms, p99 %.3f ms\n", (double)t[n / 2] / 1000.0,
           (double)t[n * 9 / 10] / 1000.0, (double)t[n * 99 / 100] / 1000.0);
    printf("claim + the three transitions after it: %.0f per second\n",
           all > 0 ? (double)n * 1000.0 / (double)all : 0.0);
    free(t);
    store_close(st);
    return 0;
fail:
    fprintf(stderr, "bench_claim: %s\n", err_last());
    free(t);
    store_close(st);
    return 1;
}
