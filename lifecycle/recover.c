#include "lifecycle/recover.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/control.h"
#include "lifecycle/escalate.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "llm/llm.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

const char *recover_action_name(enum recover_action a)
{
    switch (a) {
    case RECOVER_RETRY:
        return "retry";
    case RECOVER_FAILOVER:
        return "failover";
    case RECOVER_PLAN_B:
        return "plan_b";
    case RECOVER_ESCALATE:
        return "escalated";
    case RECOVER_SKIP:
        return "skipped";
    }
    return "?";
}

static int needs_human(const char *cls)
{
    return !strcmp(cls, "auth") || !strcmp(cls, "budget") || !strcmp(cls, "config");
}

void recover_decide(const struct recover_facts *f, struct recover_decision *d)
{
    const char *cls = f->error_class ? f->error_class : "";

    memset(d, 0, sizeof(*d));
    d->model_index = f->model_index;
    if (needs_human(cls)) {
        d->action = RECOVER_ESCALATE;
        d->tier = 4;
        d->why = "needs a human: another attempt cannot help";
        return;
    }
    /* a human answered and the run failed the same way again: the answer
     * did not help, and another attempt would spend for nothing */
    if (f->repeats_answered && strcmp(cls, "aborted") != 0) {
        d->action = RECOVER_ESCALATE;
        d->tier = 4;
        d->why = "the same failure as before the human's answer: a human decides again";
        return;
    }
    /* another item of the goal landed first and changed the same lines:
     * nothing failed but the timing.  The item runs again on the goal's
     * head at once, and the run does not count as a failure (each
     * conflict means another item landed: the goal goes on) */
    if (!strcmp(cls, "conflict")) {
        d->action = RECOVER_RETRY;
        d->tier = f->tier > 0 ? f->tier : 1;
        d->why = "another item landed first: run again on the goal's head";
        return;
    }
    /* three identical failures in a row say the approach or the model
     * fails; a run that died (aborted: its process, its daemon or its
     * node was killed) says nothing about either, and only
     * control.max_retries bounds its retries */
    if (f->tier <= 1 && strcmp(cls, "context_length") != 0 &&
        (f->same_signature < 3 || !strcmp(cls, "aborted")) &&
        f->failures_at_tier <= f->max_retries) {
        d->action = RECOVER_RETRY;
        d->tier = 1;
        d->backoff_ms = control_backoff_ms(f->failures_at_tier);
        d->why = "tier 1: retry with backoff";
        return;
    }
    if (f->tier <= 2 && f->model_index + 1 < f->nmodels) {
        d->action = RECOVER_FAILOVER;
        d->tier = 2;
        d->model_index = f->model_index + 1;
        d->why = f->tier <= 1 && f->same_signature >= 3
                     ? "tier 2: the same error three times in a row, next model"
                     : "tier 2: next model of the chain";
        return;
    }
    if (f->tier <= 2) {
        d->action = RECOVER_PLAN_B;
        d->tier = 3;
        d->why = "tier 3: ask for a different strategy";
        return;
    }
    d->tier = 4;
    if (f->critical) {
        d->action = RECOVER_ESCALATE;
        d->why = "tier 4: recovery exhausted, a human decides";
    } else {
        d->action = RECOVER_SKIP;
        d->why = "tier 4: recovery exhausted, the item is not critical";
    }
}

static cJSON *decision_payload(const struct recover_facts *f, const struct recover_decision *d)
{
    cJSON *p = cJSON_CreateObject();

    xcheck(p);
    cJSON_AddStringToObject(p, "action", recover_action_name(d->action));
    cJSON_AddStringToObject(p, "why", d->why);
    cJSON_AddStringToObject(p, "error_class", f->error_class);
    cJSON_AddNumberToObject(p, "tier", d->tier);
    cJSON_AddNumberToObject(p, "from_tier", f->tier);
    cJSON_AddNumberToObject(p, "attempt", f->failures_at_tier);
    cJSON_AddNumberToObject(p, "same_signature", f->same_signature);
    cJSON_AddNumberToObject(p, "backoff_ms", (double)d->backoff_ms);
    cJSON_AddNumberToObject(p, "model_index", d->model_index);
    return p;
}

/* Tier 3: ask j's model for another strategy (stage plan_b) for item,
 * which failed with cls and failure. */
static int ask_plan_b(struct job_ctx *j, const struct goal *goal, const struct work_item *item,
                      const char *cls, const char *failure, char **strategy)
{
    strbuf user;
    cJSON *answer = NULL;
    const cJSON *s;
    int rc;

    *strategy = NULL;
    strbuf_init(&user, 1 << 20);
    strbuf_addf_cut(&user, "Goal: %s\nWork item: %s\n%s\n", goal->title, item->title,
                    item->description ? item->description : "");
    if (item->strategy)
        strbuf_addf_cut(&user, "Strategy so far: %s\n", item->strategy);
    strbuf_addf_cut(&user, "It failed (%s): %s\n", cls, failure);
    /* the stage asks on its own account: the run's limits do not apply
     * (a run stopped by max_tokens or max_wall_time must still get its
     * Plan B); the run's totals are already written */
    j->usage.turns = 0;
    j->usage.tokens = 0;
    j->usage.started_ms = time_mono_ms();
    rc = job_ask_json(j, "plan_b", prompt_plan_b, strbuf_cstr(&user), schema_plan_b, &answer);
    if (rc == 0) {
        s = cJSON_GetObjectItemCaseSensitive(answer, "strategy");
        if (cJSON_IsString(s) && s->valuestring[0])
            *strategy = xstrdup(s->valuestring);
        else
            rc = ERR_FAIL;
    }
    cJSON_Delete(answer);
    strbuf_release(&user);
    return rc;
}

/* The escalation recovery opens about in's run. */
static int escalate_run(store *st, const struct recover_input *in, struct job_ctx *model,
                        const char *type)
{
    struct escalate_facts f = {
        .goal = in->goal,
        .item = in->item,
        .run_id = in->run_id,
        .run_kind = in->run_kind,
        .error_class = in->error_class,
        /* a job's failure is what it holds now (a failed Plan B's call
         * rewrote it) */
        .failure = model ? strbuf_cstr(&model->failure) : in->failure,
    };

    return escalate_open_facts(st, &f, model, type);
}

/* A goal-level unit (elaborate, plan, publish) failed: retry it after its
 * backoff, or escalate. */
static int recover_goal(store *st, const struct recover_input *in, struct job_ctx *model,
                        char *next, size_t next_n)
{
    int max = (int)config_int(CFG_CONTROL_MAX_RETRIES);
    int attempts = in->attempt;
    int64_t now = time_now_ms();
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddStringToObject(p, "kind", in->run_kind);
    cJSON_AddStringToObject(p, "error_class", in->error_class);
    cJSON_AddNumberToObject(p, "attempt", attempts);
    if (!needs_human(in->error_class) && attempts <= max) {
        int64_t backoff = control_backoff_ms(attempts);
        if (in->retry_not_before_ms > now + backoff)
            backoff = in->retry_not_before_ms - now;
        cJSON_AddNumberToObject(p, "backoff_ms", (double)backoff);
        rc = store_goal_set_next_attempt(st, in->goal->id, now + backoff);
        if (rc == 0)
            rc = store_event_add(st, in->goal->id, NULL, in->run_id, "retry.scheduled", p, NULL);
        snprintf(next, next_n, "retry"); /* truncation: ok, a constant that fits */
    } else {
        if (!needs_human(in->error_class) &&
            store_event_add(st, in->goal->id, NULL, in->run_id, "retry.exhausted", p, NULL) != 0)
            log_warn("event retry.exhausted not recorded: %s", err_last());
        rc = escalate_run(st, in, model, in->error_class);
        snprintf(next, next_n, "escalated"); /* truncation: ok, a constant that fits */
    }
    cJSON_Delete(p);
    return rc;
}

/* The facts of the policy for in's item. */
static int item_facts(store *st, const struct recover_input *in, struct recover_facts *f)
{
    memset(f, 0, sizeof(*f));
    f->error_class = in->error_class;
    f->tier = in->item->tier;
    f->max_retries = (int)config_int(CFG_CONTROL_MAX_RETRIES);
    f->model_index = in->model_index;
    f->nmodels = in->nmodels > 0 ? in->nmodels : 1;
    f->critical = in->item->critical;
    int rc = store_item_recovery_counts(st, in->item->id, f->tier, &f->failures_at_tier,
                                        &f->same_signature);

    return rc ? rc : store_item_repeats_answered(st, in->item->id, &f->repeats_answered);
}

/* Write decision d for in's item (already failed): its tier, chain
 * position and strategy, the event, and where the item goes.  In st's
 * transaction. */
static int apply_decision(store *st, const struct recover_input *in,
                          const struct recover_decision *d, const char *strategy, cJSON *p)
{
    const char *item = in->item->id, *goal = in->goal->id;
    const char *type;
    int rc;

    switch (d->action) {
    case RECOVER_RETRY:
    case RECOVER_FAILOVER:
    case RECOVER_PLAN_B:
        type = d->action == RECOVER_RETRY      ? "retry.scheduled"
               : d->action == RECOVER_FAILOVER ? "recovery.failover"
                                               : "recovery.plan_b";
        if ((rc = store_item_set_recovery(st, item, d->tier, d->model_index,
                                          time_now_ms() + d->backoff_ms, strategy)) ||
            (rc = store_event_add(st, goal, item, in->run_id, type, p, NULL)))
            return rc;
        return transition_apply(st, ENTITY_ITEM, item, "ready", "failed", NULL);
    case RECOVER_SKIP:
        if ((rc = store_item_set_recovery(st, item, 4, d->model_index, 0, NULL)) ||
            (rc = store_event_add(st, goal, item, in->run_id, "retry.exhausted", p, NULL)) ||
            (rc = transition_apply(st, ENTITY_ITEM, item, "skipped", "failed", NULL)))
            return rc;
        return plan_promote_ready(st, goal, NULL);
    case RECOVER_ESCALATE:
        if ((rc = store_item_set_recovery(st, item, 4, d->model_index, 0, NULL)) != 0)
            return rc;
        type = needs_human(in->error_class) ? "recovery.needs_human" : "retry.exhausted";
        return store_event_add(st, goal, item, in->run_id, type, p, NULL);
    }
    return 0;
}

/* Tier 3 for in's item: Plan B from model, into *strategy.  Without a
 * model it is owed (the payload says pending, with the failure it is to
 * answer); when the model gives none, the next tier. */
static void plan_b(const struct recover_input *in, struct job_ctx *model,
                   struct recover_decision *d, char **strategy, int *pending)
{
    *strategy = NULL;
    *pending = 0;
    if (!model) {
        *pending = 1;
        d->backoff_ms = 0;
        d->why = "tier 3: ask for a different strategy (the run died: its next run asks)";
        return;
    }
    if (model->llm &&
        ask_plan_b(model, in->goal, in->item, in->error_class, in->failure, strategy) == 0)
        return;
    /* no strategy to try: the next tier */
    d->action = in->item->critical ? RECOVER_ESCALATE : RECOVER_SKIP;
    d->tier = 4;
    d->why = "tier 3: Plan B failed, recovery exhausted";
}

/* Is the item still the run's?  Not when a later run claimed it: the
 * run's recovery came late (its job frozen past its node's death, while
 * another node recovered the item and claimed it again) and must not fail
 * the later run's item.  Read inside recovery's write transaction. */
static int still_its_item(store *st, const struct recover_input *in)
{
    char latest[ID_SIZE] = "";
    int rc;

    if (!in->run_id)
        return 0;
    if ((rc = store_run_latest_of_item(st, in->item->id, latest)) != 0)
        return rc;
    if (latest[0] && strcmp(latest, in->run_id) != 0)
        return err_set(ERR_TRANSITION,
                       "item %s: run %.8s's recovery is late: run %.8s holds it now", in->item->key,
                       in->run_id, latest);
    return 0;
}

/* The escalation a run that exhausted recovery opens: its class when a
 * human must act on it (auth, config, ...), tests_changed when the item
 * was refused for weakened or removed tests (a human may accept named
 * changes), else recovery_exhausted. */
static const char *escalation_type(const struct recover_input *in)
{
    if (needs_human(in->error_class))
        return in->error_class;
    if (in->failure && (!strncmp(in->failure, "tests weakened", 14) ||
                        !strncmp(in->failure, "tests removed", 13)))
        return "tests_changed";
    return "recovery_exhausted";
}

int recover_run(store *st, const struct recover_input *in, struct job_ctx *model, char *next,
                size_t next_n)
{
    struct recover_facts f;
    struct recover_decision d;
    cJSON *p = NULL;
    char *strategy = NULL;
    int pending = 0, rc;

    if (!in->item)
        return recover_goal(st, in, model, next, next_n);
    if ((rc = item_facts(st, in, &f)) != 0)
        return rc;
    recover_decide(&f, &d);
    if (d.action == RECOVER_PLAN_B)
        plan_b(in, model, &d, &strategy, &pending);
    /* truncation: ok, an action's name, shown */
    snprintf(next, next_n, "%s", recover_action_name(d.action));
    p = decision_payload(&f, &d);
    if (strategy)
        cJSON_AddStringToObject(p, "strategy", strategy);
    if (pending) {
        cJSON_AddBoolToObject(p, "pending", 1);
        cJSON_AddStringToObject(p, "cause", in->failure ? in->failure : "");
    }
    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    if ((rc = still_its_item(st, in)) == 0 &&
        (rc = transition_apply(st, ENTITY_ITEM, in->item->id, "failed", NULL, NULL)) == 0)
        rc = apply_decision(st, in, &d, strategy, p);
    if ((rc = store_tx_end(st, rc)) != 0)
        goto out;
    if (d.action == RECOVER_ESCALATE)
        rc = escalate_run(st, in, model, escalation_type(in));
out:
    free(strategy);
    cJSON_Delete(p);
    return rc;
}

int recover_after_failure(struct job_ctx *j, const char *signature, char *next, size_t next_n)
{
    struct recover_input in = {
        .goal = j->goal,
        .item = j->item,
        .run_id = j->claim.run_id,
        .run_kind = j->claim.kind,
        .attempt = j->claim.attempt,
        .model_index = j->model_index,
        .nmodels = j->llm ? (int)llm_client_nmodels(j->llm) : 1,
        .retry_not_before_ms = j->retry_not_before_ms,
    };
    /* Plan B's own call may fail and rewrite the job's error: keep ours */
    char cls[32];
    char *failure = xstrdup(strbuf_cstr(&j->failure));
    int rc;

    (void)signature;
    /* truncation: ok, an error class, 32 bytes both */
    snprintf(cls, sizeof(cls), "%s", j->error_class);
    in.error_class = cls;
    in.failure = failure;
    rc = recover_run(j->st, &in, j, next, next_n);
    /* the escalation (and the caller) see the job's own class again */
    if (!strcmp(next, "escalated"))
        /* truncation: ok, an error class, 32 bytes both */
        snprintf(j->error_class, sizeof(j->error_class), "%s", cls);
    free(failure);
    return rc;
}

int recover_plan_b_owed(struct job_ctx *j)
{
    struct run_usage saved = j->usage;
    char cls[32] = "", *cause = NULL, *strategy = NULL;
    const struct work_item *wi = j->item;
    cJSON *p = NULL;
    int owed = 0, rc;

    if (!wi || !j->llm || wi->tier != 3)
        return 0;
    if ((rc = store_item_plan_b_owed(j->st, wi->id, &owed, cls, sizeof(cls), &cause)) != 0 || !owed)
        goto out;
    rc = ask_plan_b(j, j->goal, wi, cls, cause ? cause : "", &strategy);
    /* on its own account: the run's limits start after it */
    j->usage = saved;
    if (rc != 0)
        goto out;
    p = cJSON_CreateObject();
    xcheck(p);
    cJSON_AddStringToObject(p, "action", "plan_b");
    cJSON_AddStringToObject(p, "why",
                            "tier 3: the Plan B a dead run left owed, asked by its "
                            "next run");
    cJSON_AddStringToObject(p, "error_class", cls);
    cJSON_AddNumberToObject(p, "tier", 3);
    cJSON_AddStringToObject(p, "strategy", strategy);
    cJSON_AddBoolToObject(p, "asked_in_run", 1);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_item_set_recovery(j->st, wi->id, wi->tier, wi->model_index, wi->next_attempt_at,
                                      strategy)) == 0)
        rc = store_event_add(j->st, j->goal->id, wi->id, j->claim.run_id, "recovery.plan_b", p,
                             NULL);
    if ((rc = store_tx_end(j->st, rc)) != 0)
        goto out;
    free(j->item->strategy);
    j->item->strategy = strategy;
    strategy = NULL;
out:
    /* the run fails with a class: the model's (job_ask_json() set it), or
     * what else went wrong */
    if (rc && !j->error_class[0])
        rc = rc == ERR_FAIL
                 ? job_fail(j, "invalid_response", "plan_b: the answer holds no strategy")
                 : job_fail(j, "internal", "plan_b: %s", err_last());
    cJSON_Delete(p);
    free(cause);
    free(strategy);
    return rc;
}
