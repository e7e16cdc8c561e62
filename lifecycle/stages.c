/*
 * stages.c - the lifecycle as a table, and the job that runs one unit of
 * it (`goald job RUN_ID`, a child of the daemon).
 *
 * Top to bottom: the table of unit kinds (the lane that claims each, and
 * whether it needs a model: publish does not, though its evaluation may
 * open one itself); the run's start (pid and lease, run.started); its end
 * (the run's terminal state, the goal's wall time, in one transaction);
 * and job_run: the claim loaded, the goal's criteria and elaboration
 * parsed, where the goal's code is, the model client, the stage by the
 * table, then the end, recovery after a failure
 * and the item's context pack.  The services the stages share (failing,
 * asking for JSON, events, the lease) are job.c's.
 */
#include "lifecycle/stages.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lifecycle/breaker.h"
#include "lifecycle/context.h"
#include "lifecycle/control.h"
#include "lifecycle/elaborate.h"
#include "lifecycle/execute.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/plan_stage.h"
#include "lifecycle/publish.h"
#include "lifecycle/recover.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "llm/llm.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

const struct stage_def stage_defs[] = {
    {"elaborate", "plan", 1, stage_elaborate},
    {"plan", "plan", 1, stage_plan},
    {"execute", "work", 1, stage_execute},
    {"publish", "work", 0, stage_publish},
    {NULL, NULL, 0, NULL},
};

const struct stage_def *stage_find(const char *kind)
{
    for (const struct stage_def *d = stage_defs; d->kind; d++)
        if (!strcmp(d->kind, kind))
            return d;
    return NULL;
}

/* The unit's stage by the table, after what every unit needs: where the
 * goal's code is on this node, and a model client when the stage needs
 * one (with the goal's prices checked).  Its result, after job_fail()
 * when it failed. */
static int dispatch(struct job_ctx *j, const char *run_id)
{
    const struct stage_def *d = stage_find(j->claim.kind);

    if (!d)
        return job_fail(j, "internal", "unknown run kind %s", j->claim.kind);
    if (workspace_locate(j->st, j->goal, &j->repo, &j->worktree, &j->clone) != 0)
        /* where this node keeps the goal's code cannot be told (no HOME) */
        return job_fail(j, "config", "%s", err_last());
    if (d->needs_model && llm_client_open(&j->llm, j->st) != 0) {
        /* no model can be called with this configuration: every unit that
         * needs one waits (breaker) until it changes or a human answers */
        int rc = job_fail(j, "config", "%s", err_last());
        breaker_trip(j->st, "config", run_id, strbuf_cstr(&j->failure), time_now_ms());
        return rc;
    }
    if (control_check_prices(j->goal, j->llm) != 0)
        /* this goal's USD cap cannot be kept with this chain: its human
         * sets the prices (other goals go on: no breaker) */
        return job_fail(j, "config", "%s", err_last());
    return d->run(j);
}

/* The goal's last model call, as the estimate of this run's first one: a
 * budget check with no estimate would let each new run overrun the goal's
 * budget by one call. */
static void seed_estimate(struct job_ctx *j)
{
    if (store_event_last_llm_usage(j->st, j->goal->id, &j->last_call_tokens,
                                   &j->last_call_cost) != 0)
        err_clear(); /* no call yet: no estimate */
}

/* The run is ours: pid and lease. */
static int run_start(struct job_ctx *j)
{
    int64_t now = time_now_ms();
    cJSON *p;
    int rc = store_run_mark_started(j->st, j->claim.run_id, (long)getpid(),
                                    now + (int64_t)j->claim.timeout_s * 1000 + 30000, now);

    if (rc)
        return rc;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "kind", j->claim.kind);
    cJSON_AddNumberToObject(p, "pid", (double)getpid());
    cJSON_AddNumberToObject(p, "attempt", j->claim.attempt);
    rc = store_event_add(j->st, j->claim.goal_id, j->claim.item_id[0] ? j->claim.item_id : NULL,
                         j->claim.run_id, "run.started", p, NULL);
    cJSON_Delete(p);
    return rc;
}

/* Write the run's end: success, or failed with class, signature and reason. */
static int run_finish(struct job_ctx *j, int ok, const char *signature)
{
    struct store_run_end e = {
        .turns = j->usage.turns,
        .model_index = j->model_index,
        .summary = j->summary.len ? strbuf_cstr(&j->summary) : NULL,
        .error_class = ok ? NULL : j->error_class,
        .error_signature = ok ? NULL : signature,
        .failure_reason = ok ? NULL : strbuf_cstr(&j->failure),
    };
    cJSON *p;
    int rc;

    if ((rc = store_tx_begin(j->st)) != 0)
        return rc;
    p = cJSON_CreateObject();
    /* the run's wall time counts against the goal's max_hours */
    if ((rc = store_run_write_end(j->st, j->claim.run_id, &e)) != 0 ||
        (rc = store_goal_spend_run_wall(j->st, j->claim.goal_id, j->claim.run_id,
                                        time_now_ms())) != 0)
        goto out;
    /* a goal-level stage (elaborate, plan, publish) is done: the next one
     * starts with its own retries, not with what is left of these */
    if (ok && !j->item && (rc = store_goal_attempts_reset(j->st, j->claim.goal_id)) != 0)
        goto out;
    cJSON_AddNumberToObject(p, "turns", j->usage.turns);
    cJSON_AddNumberToObject(p, "tokens", (double)j->usage.tokens);
    if (!ok) {
        cJSON_AddStringToObject(p, "error_class", j->error_class);
        cJSON_AddStringToObject(p, "reason", strbuf_cstr(&j->failure));
        cJSON_AddStringToObject(p, "signature", signature);
    } else if (j->summary.len) {
        cJSON_AddStringToObject(p, "summary", strbuf_cstr(&j->summary));
    }
    rc = transition_apply(j->st, ENTITY_RUN, j->claim.run_id, ok ? "success" : "failed",
                          "running", p);
out:
    rc = store_tx_end(j->st, rc);
    cJSON_Delete(p);
    return rc;
}

int job_run(store *st, const char *run_id, struct job_outcome *out)
{
    struct job_ctx j;
    struct criteria criteria = {0};
    struct elaboration elab = {0};
    char sig[65] = "";
    int rc, stage_rc;

    memset(&j, 0, sizeof(j));
    memset(out, 0, sizeof(*out));
    j.st = st;
    j.criteria = &criteria;
    j.elab = &elab;
    strbuf_init(&j.failure, 16384);
    strbuf_init(&j.summary, 16384);
    if ((rc = claim_load(st, run_id, &j.claim)) != 0)
        goto out;
    if ((rc = store_goal_get(st, j.claim.goal_id, &j.goal)) != 0)
        goto out;
    if (j.claim.item_id[0]) {
        if ((rc = store_item_get(st, j.claim.item_id, &j.item)) != 0)
            goto out;
        j.model_index = j.item->model_index;
    }
    if ((rc = run_start(&j)) != 0)
        goto out;
    seed_estimate(&j);
    j.usage.started_ms = time_mono_ms();

    if (goal_view_load(&criteria, &elab, j.goal) != 0)
        /* a hand-edited row: a human mends it, no stage guesses */
        stage_rc = job_fail(&j, "config", "%s", err_last());
    else
        stage_rc = dispatch(&j, run_id);
    if (stage_rc && j.claim.run_id[0] && job_check_live(&j) != 0) {
        /* cancelled under us: `goald cancel` recorded the run's end */
        log_info("run %.8s (%s) stopped: %s", run_id, j.claim.kind, strbuf_cstr(&j.failure));
        /* truncation: ok, a constant that fits */
        snprintf(out->status, sizeof(out->status), "aborted");
        /* truncation: ok, a constant that fits */
        snprintf(out->error_class, sizeof(out->error_class), "cancelled");
        goto out;
    }
    if (stage_rc)
        job_error_signature(sig, j.error_class, strbuf_cstr(&j.failure));
    if ((rc = run_finish(&j, stage_rc == 0, sig)) != 0)
        goto out;
    /* truncation: ok, a constant that fits */
    snprintf(out->status, sizeof(out->status), "%s", stage_rc == 0 ? "success" : "failed");
    if (stage_rc) {
        /* a crash between the run's end and its recovery (the daemon
         * recovers the item: lifecycle_recover_stranded) */
        fault_point("job.after_run_end");
        /* truncation: ok, an error class, 32 bytes both */
        snprintf(out->error_class, sizeof(out->error_class), "%s", j.error_class);
        log_info("run %.8s (%s) failed: %s: %s", run_id, j.claim.kind, j.error_class,
                 strbuf_cstr(&j.failure));
        rc = recover_after_failure(&j, sig, out->next, sizeof(out->next));
    }
    /* where the item's runs left off, for the next one (successful or not) */
    if (j.item && context_pack_write(&j, j.summary.len ? strbuf_cstr(&j.summary) : NULL) != 0)
        log_warn("run %.8s: context pack not written: %s", run_id, err_last());
out:
    llm_client_free(j.llm);
    store_goal_free(j.goal);
    criteria_release(&criteria);
    elaboration_release(&elab);
    free(j.repo);
    free(j.worktree);
    store_item_free(j.item);
    strbuf_release(&j.failure);
    strbuf_release(&j.summary);
    return rc;
}
