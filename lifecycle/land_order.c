/*
 * land_order.c - items running at the same time land in plan order
 * (land_order.h).
 */
#include "lifecycle/land_order.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"

#define AHEAD_MAX 16        /* runs ahead looked at */
#define POLL_MS 250         /* how often the store is asked again */
#define RENEW_EVERY_MS 5000 /* how often the lease is renewed meanwhile */

/* The first live run of rows (n) into *first; 0 when none is live. */
static int live_ahead(const struct store_run_ahead *rows, int n, const char *node,
                      int64_t now, const struct store_run_ahead **first)
{
    for (int i = 0; i < n; i++) {
        if (rows[i].lease_until && rows[i].lease_until < now)
            continue; /* its lease ran out: the sweep's, not ours */
        if (node[0] && !strcmp(rows[i].node_id, node) &&
            !job_process_is(rows[i].pid, rows[i].run_id))
            continue; /* its job on this node is gone */
        *first = &rows[i];
        return 1;
    }
    return 0;
}

/* The event of the wait: whom it waited for, how long, and whether it
 * gave up. */
static void wait_event(struct job_ctx *j, const char *key, int64_t waited_ms, int gave_up)
{
    cJSON *meta = cJSON_CreateObject();

    cJSON_AddStringToObject(meta, "waited_for", key);
    cJSON_AddNumberToObject(meta, "waited_ms", (double)waited_ms);
    cJSON_AddStringToObject(meta, "why",
                            gave_up ? "an item placed before it in the plan still runs: this "
                                      "one lands first, in the order it finished"
                                    : "an item placed before it in the plan was running: it "
                                      "landed first");
    job_event_or_warn(j, "item.land_order", meta);
    cJSON_Delete(meta);
}

/* How long the run may wait: a third of what is left of its timeout. */
static int64_t wait_cap_ms(struct job_ctx *j, int64_t now)
{
    struct store_run r;
    int64_t left;

    if (j->claim.timeout_s <= 0 || store_run_get(j->st, j->claim.run_id, &r) != 0 ||
        r.started_at <= 0) {
        err_clear();
        return 0;
    }
    left = r.started_at + (int64_t)j->claim.timeout_s * 1000 - now;
    return left > 0 ? left / 3 : 0;
}

int land_order_wait(struct job_ctx *j, const struct workspace *ws)
{
    struct store_run_ahead rows[AHEAD_MAX];
    const struct store_run_ahead *first = NULL;
    char node[STORE_NODE_ID_MAX] = "", key[64] = "";
    int64_t start = time_now_ms(), cap, renewed = start, now = start;
    int n = 0, rc;

    if (!ws->own || !j->item || j->item->position <= 0)
        return 0;
    if (store_node_id(node, sizeof(node), store_path(j->st)) != 0)
        err_clear(); /* no pid is looked at then: the lease decides */
    cap = wait_cap_ms(j, start);
    for (;;) {
        if (store_item_runs_ahead(j->st, j->goal->id, j->item->position, rows, AHEAD_MAX, &n) !=
            0) {
            log_warn("%s: the items ahead of it not read: %s", j->item->key, err_last());
            err_clear();
            break;
        }
        now = time_now_ms();
        if (!live_ahead(rows, n, node, now, &first))
            break;
        snprintf(key, sizeof(key), "%s", first->item_key); /* truncation: ok, a key is cut at 63 */
        if (now - start >= cap) {
            wait_event(j, key, now - start, 1);
            return 0;
        }
        if ((rc = job_check_live(j)) != 0)
            return rc;
        if (now - renewed >= RENEW_EVERY_MS) {
            if (job_renew_lease(j) != 0)
                err_clear(); /* the daemon's lease sweep decides */
            renewed = now;
        }
        time_sleep_ms(POLL_MS);
    }
    if (key[0])
        wait_event(j, key, now - start, 0);
    return 0;
}
