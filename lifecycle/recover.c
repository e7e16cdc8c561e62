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
#include "util/config.h"
#include "util/err.h"
#include "util/timeutil.h"

const char *recover_action_name(enum recover_action a)
{
    switch (a) {
    case RECOVER_RETRY: return "retry";
    case RECOVER_FAILOVER: return "failover";
    case RECOVER_PLAN_B: return "plan_b";
    case RECOVER_ESCALATE: return "escalated";
    case RECOVER_SKIP: return "skipped";
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
    if (f->tier <= 1 && strcmp(cls, "context_length") != 0 && f->same_signature < 3 &&
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

/* Failed runs of the item at its current tier, and the run of identical
 * signatures ending with the last one. */
static int item_facts(store *st, const char *item_id, int tier, int *failures, int *same)
{
    /* runs before a human's resolution (recovery_epoch) do not count */
    static const char q1[] = "SELECT count(*) FROM runs r WHERE item_id = ?1 AND kind = 'execute'"
                             " AND tier = ?2 AND status IN ('failed','timeout','aborted')"
                             " AND created_at >= (SELECT recovery_epoch FROM work_items"
                             " WHERE id = ?1)";
    static const char q2[] = "SELECT ifnull(error_signature, '') FROM runs WHERE item_id = ?1"
                             " AND kind = 'execute' AND status <> 'running'"
                             " AND created_at >= (SELECT recovery_epoch FROM work_items"
                             " WHERE id = ?1)"
                             " ORDER BY created_at DESC, rowid DESC LIMIT 10";
    sqlite3_stmt *s;
    char first[65] = "";
    int rc = store_prepare(st, &s, q1), n = 0;

    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    sqlite3_bind_int(s, 2, tier);
    *failures = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 1;
    store_done(s);
    if ((rc = store_prepare(st, &s, q2)) != 0)
        return rc;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *sig = (const char *)sqlite3_column_text(s, 0);
        if (n == 0)
            snprintf(first, sizeof(first), "%s", sig);
        if (!sig[0] || strcmp(sig, first) != 0)
            break;
        n++;
    }
    store_done(s);
    *same = n;
    return 0;
}

static int set_item(store *st, const char *item_id, int tier, int model_index,
                    int64_t next_attempt_at, const char *strategy)
{
    static const char sql[] = "UPDATE work_items SET tier = ?, model_index = ?,"
                              " next_attempt_at = ?, strategy = ifnull(?, strategy),"
                              " updated_at = ? WHERE id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    sqlite3_bind_int(s, 1, tier);
    sqlite3_bind_int(s, 2, model_index);
    sqlite3_bind_int64(s, 3, next_attempt_at);
    store_bind_text(s, 4, strategy);
    sqlite3_bind_int64(s, 5, time_now_ms());
    store_bind_text(s, 6, item_id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "recover");
    store_done(s);
    return rc;
}

static cJSON *decision_payload(const struct recover_facts *f, const struct recover_decision *d)
{
    cJSON *p = cJSON_CreateObject();

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

/* Tier 3: ask the model for another strategy (stage plan_b). */
static int ask_plan_b(struct job_ctx *j, char **strategy)
{
    strbuf user;
    cJSON *answer = NULL;
    const cJSON *s;
    int rc;

    *strategy = NULL;
    strbuf_init(&user, 1 << 20);
    strbuf_addf(&user, "Goal: %s\nWork item: %s\n%s\n", j->goal->title, j->item->title,
                j->item->description ? j->item->description : "");
    if (j->item->strategy)
        strbuf_addf(&user, "Strategy so far: %s\n", j->item->strategy);
    strbuf_addf(&user, "It failed (%s): %s\n", j->error_class, strbuf_cstr(&j->failure));
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
            *strategy = strdup(s->valuestring);
        else
            rc = ERR_FAIL;
    }
    cJSON_Delete(answer);
    strbuf_release(&user);
    return rc;
}

static int recover_goal(struct job_ctx *j, char *next, size_t next_n)
{
    int max = (int)config_int(CFG_CONTROL_MAX_RETRIES);
    int attempts = j->claim.attempt;
    int64_t now = time_now_ms();
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(p, "kind", j->claim.kind);
    cJSON_AddStringToObject(p, "error_class", j->error_class);
    cJSON_AddNumberToObject(p, "attempt", attempts);
    if (!needs_human(j->error_class) && attempts <= max) {
        int64_t backoff = control_backoff_ms(attempts);
        if (j->retry_not_before_ms > now + backoff)
            backoff = j->retry_not_before_ms - now;
        static const char sql[] = "UPDATE goals SET next_attempt_at = ? WHERE id = ?";
        sqlite3_stmt *s;
        cJSON_AddNumberToObject(p, "backoff_ms", (double)backoff);
        if ((rc = store_prepare(j->st, &s, sql)) == 0) {
            sqlite3_bind_int64(s, 1, now + backoff);
            store_bind_text(s, 2, j->goal->id);
            rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "recover");
            store_done(s);
        }
        if (rc == 0)
            rc = store_event_add(j->st, j->goal->id, NULL, j->claim.run_id, "retry.scheduled", p,
                                 NULL);
        snprintf(next, next_n, "retry");
    } else {
        if (!needs_human(j->error_class))
            store_event_add(j->st, j->goal->id, NULL, j->claim.run_id, "retry.exhausted", p, NULL);
        rc = escalate_open(j, j->error_class);
        snprintf(next, next_n, "escalated");
    }
    cJSON_Delete(p);
    return rc;
}

int recover_after_failure(struct job_ctx *j, const char *signature, char *next, size_t next_n)
{
    struct recover_facts f;
    struct recover_decision d;
    cJSON *p = NULL;
    char *strategy = NULL;
    char cls[32];
    int rc;

    (void)signature;
    if (!j->item)
        return recover_goal(j, next, next_n);
    /* Plan B's own call may fail and overwrite the job's error: keep ours */
    snprintf(cls, sizeof(cls), "%s", j->error_class);
    memset(&f, 0, sizeof(f));
    f.error_class = cls;
    f.tier = j->item->tier;
    f.max_retries = (int)config_int(CFG_CONTROL_MAX_RETRIES);
    f.model_index = j->model_index;
    f.nmodels = j->llm ? (int)llm_client_nmodels(j->llm) : 1;
    f.critical = j->item->critical;
    if ((rc = item_facts(j->st, j->item->id, f.tier, &f.failures_at_tier, &f.same_signature)))
        return rc;
    recover_decide(&f, &d);
    snprintf(next, next_n, "%s", recover_action_name(d.action));

    /* without a model (the daemon recovering a dead run) there is no Plan B */
    if (d.action == RECOVER_PLAN_B && (!j->llm || ask_plan_b(j, &strategy) != 0)) {
        /* no strategy to try: the next tier */
        d.action = j->item->critical ? RECOVER_ESCALATE : RECOVER_SKIP;
        d.tier = 4;
        d.why = "tier 3: Plan B failed, recovery exhausted";
        snprintf(next, next_n, "%s", recover_action_name(d.action));
    }
    p = decision_payload(&f, &d);
    if (strategy)
        cJSON_AddStringToObject(p, "strategy", strategy);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "failed", NULL, NULL)))
        goto fail;
    switch (d.action) {
    case RECOVER_RETRY:
    case RECOVER_FAILOVER:
    case RECOVER_PLAN_B:
        if ((rc = set_item(j->st, j->item->id, d.tier, d.model_index,
                           time_now_ms() + d.backoff_ms, strategy)) ||
            (rc = store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id,
                                  d.action == RECOVER_RETRY ? "retry.scheduled"
                                  : d.action == RECOVER_FAILOVER ? "recovery.failover"
                                                                 : "recovery.plan_b",
                                  p, NULL)) ||
            (rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "ready", "failed", NULL)))
            goto fail;
        break;
    case RECOVER_SKIP:
        if ((rc = set_item(j->st, j->item->id, 4, d.model_index, 0, NULL)) ||
            (rc = store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id,
                                  "retry.exhausted", p, NULL)) ||
            (rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "skipped", "failed", NULL)) ||
            (rc = plan_promote_ready(j->st, j->goal->id, NULL)))
            goto fail;
        break;
    case RECOVER_ESCALATE:
        if ((rc = set_item(j->st, j->item->id, 4, d.model_index, 0, NULL)) ||
            (rc = store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id,
                                  needs_human(f.error_class) ? "recovery.needs_human"
                                                             : "retry.exhausted",
                                  p, NULL)))
            goto fail;
        break;
    }
    if ((rc = store_tx_commit(j->st)) != 0)
        goto out;
    if (d.action == RECOVER_ESCALATE) {
        snprintf(j->error_class, sizeof(j->error_class), "%s", cls);
        rc = escalate_open(j, needs_human(cls) ? cls : "recovery_exhausted");
    }
    goto out;
fail:
    store_tx_rollback(j->st);
out:
    free(strategy);
    cJSON_Delete(p);
    return rc;
}
