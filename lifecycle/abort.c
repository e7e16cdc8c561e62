/*
 * abort.c - ending a run whose process did not (see abort.h).  No job
 * context is made up here: the run's row, its goal and its item are the
 * facts recovery is given (recover_run()), without a model.
 */
#include "lifecycle/abort.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/context.h"
#include "lifecycle/job.h"
#include "lifecycle/recover.h"
#include "lifecycle/transitions.h"
#include "llm/llm.h"
#include "store/context_pack.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "store/status.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* The length of the model chain this configuration gives (1 when it gives
 * none): recovery's failover needs it, and the daemon has no client. */
static int chain_length(void)
{
    llm_client *c = NULL;
    int n = 1;

    if (llm_client_open(&c, NULL) == 0 && llm_client_nmodels(c) > 0)
        n = (int)llm_client_nmodels(c);
    llm_client_free(c);
    return n;
}

/* Record run_id's end: its failure, status and event; a timed-out item's
 * next run gets twice the time (item->timeout_s too). */
static int record_end(store *st, const char *run_id, const struct store_run_facts *r,
                      struct work_item *item, const char *status, const char *cls, const char *sig,
                      const char *reason)
{
    cJSON *p;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    p = cJSON_CreateObject();
    if ((rc = store_run_set_failure_if_running(st, run_id, cls, sig, reason)) != 0)
        goto out;
    cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddStringToObject(p, "kind", r->kind);
    if ((rc = transition_apply(st, ENTITY_RUN, run_id, status, "running", p)) != 0)
        goto out;
    if (run_status_of(status) == RUN_TIMEOUT && item) {
        /* the retry gets twice the time */
        int doubled = (r->timeout_s > 0 ? r->timeout_s : 600) * 2;
        if ((rc = store_item_set_timeout(st, item->id, doubled)) != 0)
            goto out;
        item->timeout_s = doubled;
    }
out:
    rc = store_tx_end(st, rc);
    cJSON_Delete(p);
    return rc;
}

/* Where the item's runs left off, after run_id. */
static int pack_write(store *st, const struct goal *g, const struct work_item *item,
                      const char *run_id)
{
    cJSON *pack = NULL;
    char *text;
    int rc;

    if ((rc = context_pack_build(st, item->id, NULL, &pack)) != 0)
        return rc;
    text = cJSON_PrintUnformatted(pack);
    rc = store_context_pack_insert(st, g->id, item->id, run_id, text, time_now_ms());
    cJSON_free(text);
    cJSON_Delete(pack);
    return rc;
}

/* What recovery is given of a run that did not end on its own: its row's
 * facts, goal and item, class cls and failure text. */
static void input_of(struct recover_input *in, const struct goal *g, const struct work_item *item,
                     const char *run_id, const struct store_run_facts *r, const char *cls,
                     const char *failure)
{
    memset(in, 0, sizeof(*in));
    in->goal = g;
    in->item = item;
    in->run_id = run_id;
    in->run_kind = r->kind;
    in->attempt = r->attempt;
    in->model_index = r->model_index;
    in->nmodels = chain_length();
    in->error_class = cls;
    in->failure = failure;
}

/* Is an item of this state held by a run? */
static int item_held(const struct work_item *item)
{
    enum item_status s = item_status_of(item->status);

    return s == ITEM_IN_PROGRESS || s == ITEM_VERIFY;
}

int lifecycle_abort_run(store *st, const char *run_id, const char *status, const char *reason)
{
    const char *cls = run_status_of(status) == RUN_TIMEOUT ? "timeout" : "aborted";
    struct store_run_facts r;
    struct recover_input in;
    struct goal *g = NULL;
    struct work_item *item = NULL;
    char sig[65], next[32] = "";
    int rc;

    /* the claim, even though the run is not running any more for us */
    if ((rc = store_run_facts_get(st, run_id, &r)) != 0)
        goto out;
    if (run_status_of(r.status) != RUN_RUNNING) {
        rc = err_set(ERR_TRANSITION, "run %s is no longer running", run_id);
        goto out;
    }
    if ((rc = store_goal_get(st, r.goal_id, &g)) != 0)
        goto out;
    if (r.item_id[0] && (rc = store_item_get(st, r.item_id, &item)) != 0)
        goto out;
    job_error_signature(sig, cls, reason);
    if ((rc = record_end(st, run_id, &r, item, status, cls, sig, reason)) != 0)
        goto out;

    input_of(&in, g, item, run_id, &r, cls, reason);
    /* an item the run held goes through recovery; a plan-lane unit is
     * simply claimable again after its backoff */
    if (item && item_held(item)) {
        rc = recover_run(st, &in, NULL, next, sizeof(next));
        pack_write(st, g, item, run_id);
    } else if (!item) {
        rc = recover_run(st, &in, NULL, next, sizeof(next));
    }
    log_info("run %.8s %s (%s): recovery %s", run_id, status, reason, next[0] ? next : "none");
out:
    store_goal_free(g);
    store_item_free(item);
    return rc;
}

int lifecycle_recover_stranded(store *st, const char *run_id, const char *reason)
{
    struct store_run_facts r;
    struct store_run_live *live = NULL;
    struct recover_input in;
    struct goal *g = NULL;
    struct work_item *item = NULL;
    char why[512], next[32] = "";
    size_t nlive = 0;
    int rc;

    /* one write transaction from the look to the recovery: two daemons
     * that find the same item held (this node's at its start, another
     * node's that took this one for dead) recover it once, and never an
     * item claimed again in between */
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_run_facts_get(st, run_id, &r)) != 0)
        goto out;
    if (run_status_of(r.status) == RUN_RUNNING) {
        rc = err_set(ERR_TRANSITION, "run %s is still running", run_id);
        goto out;
    }
    /* a goal-level unit (elaborate, plan, publish) is claimable again from
     * the goal's state alone; only an item can be left held */
    if (!r.item_id[0]) {
        rc = err_set(ERR_NOTFOUND, "run %s: a goal-level unit holds nothing", run_id);
        goto out;
    }
    if ((rc = store_item_get(st, r.item_id, &item)) != 0 ||
        (rc = store_run_running_of_goal(st, r.goal_id, &live, &nlive)) != 0)
        goto out;
    if (!item_held(item) || nlive > 0) {
        rc = err_set(ERR_NOTFOUND, "run %s: its item is not left held", run_id);
        goto out;
    }
    if ((rc = store_goal_get(st, r.goal_id, &g)) != 0)
        goto out;
    /* truncation: ok, a message */
    snprintf(why, sizeof(why), "%s after its run ended, before the run's recovery", reason);
    input_of(&in, g, item, run_id, &r, "aborted", why);
    if ((rc = recover_run(st, &in, NULL, next, sizeof(next))) != 0)
        goto out;
    if (pack_write(st, g, item, run_id) != 0)
        log_warn("run %.8s: context pack not written: %s", run_id, err_last());
    log_info("run %.8s: its item was left held (%s): recovery %s", run_id, why, next);
out:
    rc = store_tx_end(st, rc);
    free(live);
    store_goal_free(g);
    store_item_free(item);
    return rc;
}
