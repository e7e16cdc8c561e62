#include "lifecycle/escalate.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/context.h"
#include "lifecycle/control.h"
#include "lifecycle/digest.h"
#include "lifecycle/escalate_actions.h"
#include "lifecycle/job.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/status.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* The packet's current state: the item's gates, the goal's artifacts and
 * what is left of its budget.  A read that fails leaves its part empty
 * (the packet is written anyway). */
static cJSON *state_json(store *st, const struct escalate_facts *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pass, *failg, *art, *b;
    struct budget_facts bf;

    xcheck(o);
    pass = cJSON_AddArrayToObject(o, "gates_passing");
    failg = cJSON_AddArrayToObject(o, "gates_failing");
    art = cJSON_AddArrayToObject(o, "artifacts");
    b = cJSON_AddObjectToObject(o, "budget_remaining");
    if (f->item)
        (void)store_escalation_packet_gates(st, f->item->id, pass, failg);
    (void)store_escalation_packet_artifacts(st, f->goal->id, art);
    if (store_goal_budget_get(st, f->goal->id, &bf) == 0) {
        if (!bf.has_max_tokens)
            cJSON_AddNullToObject(b, "tokens");
        else
            cJSON_AddNumberToObject(b, "tokens", (double)(bf.max_tokens - bf.spent_tokens));
        if (!bf.has_max_cost)
            cJSON_AddNullToObject(b, "cost_usd");
        else
            cJSON_AddNumberToObject(b, "cost_usd", bf.max_cost_usd - bf.spent_cost_usd);
    }
    return o;
}

struct option_row {
    const char *option, *description, *pros, *cons, *effort;
};

/* The option an offered action stands for, in words for this kind. */
static struct option_row option_for(const char *action, const char *type, const char *scope)
{
    int publish = !strcmp(scope, "publish");
    int model = !publish && (!strcmp(type, "auth") || !strcmp(type, "config"));

    if (!strcmp(action, "retry") && !strcmp(type, "deadline"))
        return (struct option_row){"retry", "carry on past the deadline", "the work goes on",
                                   "it ends later than asked", "none"};
    if (!strcmp(action, "retry") && model)
        return (struct option_row){"retry", "fix the model's configuration or key, then retry",
                                   "the work continues as planned", "needs access to the "
                                   "configuration", "minutes"};
    if (!strcmp(action, "retry") && publish)
        return (struct option_row){"retry", "fix the cause, then publish again",
                                   "the branch is pushed as asked", "needs the cause fixed",
                                   "minutes"};
    if (!strcmp(action, "retry"))
        return (struct option_row){"retry", "retry with your hint as input", "keeps the plan",
                                   "may fail the same way", "small"};
    if (!strcmp(action, "alternative"))
        return (struct option_row){"alternative", "describe another approach",
                                   "avoids what failed", "needs your design", "medium"};
    if (!strcmp(action, "skip") && publish)
        return (struct option_row){"skip", "complete the goal without pushing or opening a pull "
                                           "request: the commits stay on the local branch",
                                   "the goal completes now", "nothing is published", "none"};
    if (!strcmp(action, "skip"))
        return (struct option_row){"skip", "skip this item", "the rest goes on",
                                   "the item is not done", "none"};
    if (!strcmp(action, "increase_budget"))
        return (struct option_row){"increase_budget", "raise the goal's budget and go on",
                                   "the work continues", "costs more", "a minute"};
    if (!strcmp(action, "complete_partial"))
        return (struct option_row){"complete_partial", "complete the goal with what is done",
                                   "no more spend", "the goal is partial", "none"};
    if (!strcmp(action, "accept_best_attempt"))
        return (struct option_row){"accept_best_attempt",
                                   "accept the best attempt (the packet's best_attempt: its "
                                   "gates passed, its test changes were refused): goald applies "
                                   "it again, waives the test cases its check named, verifies "
                                   "and commits it",
                                   "no more model calls; the refused test changes are listed "
                                   "as accepted by a human",
                                   "you vouch for those test changes", "none"};
    if (!strcmp(action, "accept_test_changes"))
        return (struct option_row){"accept_test_changes",
                                   "accept the changed test cases the cause names (--input: "
                                   "their ids): the check waives exactly those",
                                   "an intended behaviour change lands",
                                   "you vouch for those tests", "a minute"};
    return (struct option_row){"pause", "leave it waiting for now", "nothing changes",
                               "nothing progresses", "none"};
}

/* The question of the deterministic analysis, naming cause (already cut
 * to leave room for its words). */
static void fallback_question(strbuf *q, const struct escalate_facts *f, const char *type,
                              const char *scope, const char *cause)
{
    const char *stage = f->run_kind && f->run_kind[0] ? f->run_kind : "goal";

    if (!strcmp(type, "ask_human") && f->item && f->item->question) {
        /* the agent's own question, verbatim */
        strbuf_adds_cut(q, f->item->question);
    } else if (!strcmp(type, "budget")) {
        strbuf_addf_cut(q, "%s: raise the budget%s, or pause?", cause,
                    !strcmp(scope, "item") ? ", complete with what is done" : "");
    } else if (!strcmp(type, "auth") && strcmp(scope, "publish")) {
        strbuf_addf_cut(q, "%s. Fix the key, then retry (a restart of the daemon retries too: it "
                       "reads the environment again)?",
                    cause);
    } else if (!strcmp(type, "config") && strcmp(scope, "publish")) {
        strbuf_addf_cut(q, "%s. Fix it, then retry (a changed configuration retries by itself: "
                       "SIGHUP after editing the file, or a restart with other settings)?",
                    cause);
    } else if (!strcmp(type, "criteria_unmet")) {
        strbuf_addf_cut(q, "%s. No gate or test proves it. Complete the goal as partial (the "
                           "pull request says what is unmet), or pause?",
                        cause);
    } else if (!strcmp(type, "deadline")) {
        strbuf_addf_cut(q, "%s: carry on, or complete with what is done?", cause);
    } else if (!strcmp(scope, "publish")) {
        strbuf_addf_cut(q, "Publishing failed: %s. Fix it and retry, or complete without "
                       "publishing (skip)?",
                    cause);
    } else if (!strcmp(scope, "goal") && control_provider_down(type)) {
        strbuf_addf_cut(q, "%s (%s stage): the provider is not answering. goald closes this and "
                       "goes on once a model call succeeds again; retry now?",
                    cause, stage);
    } else if (!strcmp(scope, "goal")) {
        strbuf_addf_cut(q, "%s (%s stage). Retry?", cause, stage);
    } else {
        strbuf_addf_cut(q, "%s. What should the agent do differently for this item?", cause);
    }
}

/* The deterministic analysis, for when the model cannot (or need not) be
 * asked: the root cause is the failure itself, the options are the
 * actions offered, the question names the cause. */
static cJSON *fallback_analysis(const struct escalate_facts *f, const char *type,
                                const char *scope, const char *const *actions)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *opts;
    const char *cause = f->failure && f->failure[0] ? f->failure : "recovery exhausted";
    /* the question holds the cause cut to leave room in q for its words (a
     * failure may be 16 KiB; strbuf_addf over the cap adds nothing); the
     * root cause keeps it whole */
    char cut[3072];
    size_t n = strlen(cause);
    strbuf q;

    xcheck(a);
    opts = cJSON_AddArrayToObject(a, "options");
    strbuf_init(&q, 4096);
    cJSON_AddStringToObject(a, "root_cause", cause);
    if (n >= sizeof(cut)) {
        n = utf8_cut_back(cause, sizeof(cut) - sizeof("\xe2\x80\xa6"));
        memcpy(cut, cause, n);
        memcpy(cut + n, "\xe2\x80\xa6", sizeof("\xe2\x80\xa6")); /* "…" */
        cause = cut;
    }
    fallback_question(&q, f, type, scope, cause);
    for (int i = 0; actions[i]; i++) {
        struct option_row r = option_for(actions[i], type, scope);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "option", r.option);
        cJSON_AddStringToObject(o, "description", r.description);
        cJSON_AddStringToObject(o, "pros", r.pros);
        cJSON_AddStringToObject(o, "cons", r.cons);
        cJSON_AddStringToObject(o, "effort", r.effort);
        cJSON_AddItemToArray(opts, o);
    }
    cJSON_AddStringToObject(a, "minimal_question", strbuf_cstr(&q));
    cJSON_AddStringToObject(a, "source", "goald");
    strbuf_release(&q);
    return a;
}

/* The attempts as the model reads them: no ids nor hashes, and not the
 * run still going (its question or failure is said before them). */
static void attempts_for_model(cJSON *attempts)
{
    static const char *const noise[] = {"run_id", "tier", "model_index", "signature"};

    for (int i = cJSON_GetArraySize(attempts) - 1; i >= 0; i--) {
        cJSON *a = cJSON_GetArrayItem(attempts, i);
        const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status"));
        if (status && run_status_of(status) == RUN_RUNNING) {
            cJSON_DeleteItemFromArray(attempts, i);
            continue;
        }
        for (size_t k = 0; k < sizeof(noise) / sizeof(noise[0]); k++)
            cJSON_DeleteItemFromObjectCaseSensitive(a, noise[k]);
    }
}

/* Ask stage escalate with the packet's item, the agent's own question
 * (ask_human) or the failure, and the attempts; NULL when the model cannot
 * answer. */
static cJSON *model_analysis(struct job_ctx *j, const cJSON *packet)
{
    cJSON *attempts = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(packet, "attempts"), 1);
    const char *question = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "question"));
    const char *cause = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "cause"));
    cJSON *a;
    strbuf user;
    cJSON *answer = NULL;
    char *t;
    char saved_cls[32];
    struct run_usage saved_usage;
    strbuf saved;

    attempts_for_model(attempts);
    /* each attempt's failure digested (a gate's output cut between lines,
     * pytest's failures kept and its warnings dropped), the one being
     * escalated said once */
    cJSON_ArrayForEach(a, attempts)
    {
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "why_failed"));
        strbuf d;
        if (!why || !*why)
            continue;
        strbuf_init(&d, 1 << 16);
        if (cause && !strcmp(why, cause))
            strbuf_adds_cut(&d, "(the failure shown above)");
        else
            digest_reason(&d, why, 2000);
        cJSON_ReplaceItemInObjectCaseSensitive(a, "why_failed",
                                               cJSON_CreateString(strbuf_cstr(&d)));
        strbuf_release(&d);
    }
    t = cJSON_PrintUnformatted(attempts);
    cJSON_Delete(attempts);
    /* keep the failure being escalated if this call fails too */
    /* truncation: ok, an error class, same size both */
    snprintf(saved_cls, sizeof(saved_cls), "%s", j->error_class);
    strbuf_init(&saved, 16384);
    strbuf_adds_cut(&saved, strbuf_cstr(&j->failure));
    strbuf_init(&user, 1 << 20);
    strbuf_addf_cut(&user, "Goal: %s\n", j->goal->title);
    if (j->item)
        strbuf_addf_cut(&user, "Work item: %s\n%s\n", j->item->title,
                    j->item->description ? j->item->description : "");
    if (question) {
        strbuf_addf_cut(&user, "The agent stopped and asked a human (its words): %s\n", question);
    } else if (cause) {
        strbuf_adds_cut(&user, "Why the item stopped:\n");
        if (j->item)
            digest_failure(&user, j->st, j->item->id,
                           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet,
                                                                                 "error_class")),
                           cause, 6000);
        else
            digest_reason(&user, cause, 6000);
    }
    if (j->item)
        context_human_answers(&user, j->st, j->item->id,
                              "What a human answered for this item so far (newest first; do "
                              "not offer again what was tried):");
    strbuf_addf_cut(&user, "Attempts: %s\n", t ? t : "[]");
    cJSON_free(t);
    /* its own account, like Plan B: not refused by the failed run's limits;
     * its call still adds to the run's totals (ask_human escalates before
     * the run is written) */
    saved_usage = j->usage;
    j->usage.turns = 0;
    j->usage.tokens = 0;
    j->usage.started_ms = time_mono_ms();
    if (job_ask_json(j, "escalate", prompt_escalate, strbuf_cstr(&user), schema_escalate,
                     &answer) != 0 ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(answer, "root_cause")) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(answer, "options")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(answer, "minimal_question"))) {
        cJSON_Delete(answer);
        answer = NULL;
    } else {
        cJSON_AddStringToObject(answer, "source", "model");
    }
    j->usage.turns += saved_usage.turns;
    j->usage.tokens += saved_usage.tokens;
    j->usage.started_ms = saved_usage.started_ms;
    /* truncation: ok, an error class, same size both */
    snprintf(j->error_class, sizeof(j->error_class), "%s", saved_cls);
    strbuf_reset(&j->failure);
    strbuf_adds_cut(&j->failure, strbuf_cstr(&saved));
    strbuf_release(&saved);
    strbuf_release(&user);
    return answer;
}

/* The item's best attempt (its gates passed; its test changes were
 * refused), when it has one: the packet's "best_attempt". */
static void packet_best_attempt(store *st, const char *item_id, cJSON *packet)
{
    struct store_best_attempt b;
    int found = 0;
    cJSON *o;

    if (store_decision_best_attempt(st, item_id, &b, &found) != 0 || !found) {
        err_clear();
        store_best_attempt_release(&b);
        return;
    }
    o = cJSON_AddObjectToObject(packet, "best_attempt");
    cJSON_AddStringToObject(o, "run_id", b.run_id);
    cJSON_AddStringToObject(o, "gates", "pass");
    cJSON_AddStringToObject(o, "rejected_because", b.reason);
    cJSON_AddStringToObject(o, "patch", b.patch);
    store_best_attempt_release(&b);
}

/* The packet's item, reason, cause, question and attempts (the part that
 * needs no model). */
static cJSON *packet_start(store *st, const struct escalate_facts *f, const char *type,
                           const char *scope)
{
    cJSON *packet = cJSON_CreateObject(), *attempts;
    int ask = !strcmp(type, "ask_human");

    xcheck(packet);
    if (f->item) {
        cJSON *wi = cJSON_AddObjectToObject(packet, "work_item");
        cJSON_AddStringToObject(wi, "id", f->item->id);
        cJSON_AddStringToObject(wi, "key", f->item->key);
        cJSON_AddStringToObject(wi, "title", f->item->title);
        cJSON_AddStringToObject(wi, "description", f->item->description ? f->item->description : "");
        cJSON_AddBoolToObject(wi, "critical", f->item->critical);
        if (f->item->strategy)
            cJSON_AddStringToObject(wi, "strategy", f->item->strategy);
    }
    cJSON_AddStringToObject(packet, "reason", type);
    cJSON_AddStringToObject(packet, "scope", scope);
    if (f->failure && f->failure[0] && !ask)
        cJSON_AddStringToObject(packet, "cause", f->failure);
    if (ask && f->item && f->item->question) {
        cJSON *calls;
        cJSON_AddStringToObject(packet, "question", f->item->question);
        calls = cJSON_AddArrayToObject(packet, "last_tool_calls");
        if (f->run_id && f->run_id[0])
            (void)store_escalation_packet_tool_calls(st, f->run_id, calls);
    }
    cJSON_AddStringToObject(packet, "error_class", f->error_class ? f->error_class : "");
    attempts = cJSON_AddArrayToObject(packet, "attempts");
    (void)store_escalation_packet_attempts(st, f->goal->id, f->item ? f->item->id : NULL,
                                           attempts);
    cJSON_AddItemToObject(packet, "state", state_json(st, f));
    if (f->item)
        packet_best_attempt(st, f->item->id, packet);
    return packet;
}

/* The question names the best attempt, when there is one: a human may
 * accept it instead of paying for another. */
static void best_attempt_note(cJSON *packet)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(packet, "best_attempt");
    const char *q =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "minimal_question"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "rejected_because"));
    strbuf t;

    if (!b || !q)
        return;
    strbuf_init(&t, 8192);
    strbuf_addf_cut(&t, "%s (Best attempt: run %.8s, gates pass, rejected because %s. "
                        "accept_best_attempt commits it after verifying it again.)",
                    q, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "run_id")),
                    why && *why ? why : "its test changes were refused");
    cJSON_ReplaceItemInObjectCaseSensitive(packet, "minimal_question",
                                           cJSON_CreateString(strbuf_cstr(&t)));
    strbuf_release(&t);
}

/* The packet's analysis (the model's, or goald's), its question, actions
 * and urgency. */
static void packet_finish(cJSON *packet, const struct escalate_facts *f, struct job_ctx *model,
                          const char *type, const char *scope, const char *urgency)
{
    const char *const *actions = escalate_actions(type, scope);
    int ask = !strcmp(type, "ask_human");
    /* the model is not asked about itself */
    int model_down = !strcmp(type, "auth") || !strcmp(type, "config") || !strcmp(type, "budget") ||
                     control_provider_down(type);
    cJSON *analysis = NULL, *acts;

    if (!model_down && model && model->llm)
        analysis = model_analysis(model, packet);
    if (!analysis)
        analysis = fallback_analysis(f, type, scope, actions);
    cJSON_AddItemToObject(packet, "analysis", analysis);
    /* the agent's own question is the question, verbatim (the analysis
     * may paraphrase it) */
    cJSON_AddStringToObject(packet, "minimal_question",
                            ask && f->item && f->item->question
                                ? f->item->question
                                : cJSON_GetObjectItemCaseSensitive(analysis, "minimal_question")
                                      ->valuestring);
    best_attempt_note(packet);
    acts = cJSON_AddArrayToObject(packet, "actions");
    /* an item's best attempt may be accepted whatever stopped the item */
    if (cJSON_GetObjectItemCaseSensitive(packet, "best_attempt") && !strcmp(scope, "item"))
        cJSON_AddItemToArray(acts, cJSON_CreateString("accept_best_attempt"));
    for (int i = 0; actions[i]; i++)
        cJSON_AddItemToArray(acts, cJSON_CreateString(actions[i]));
    cJSON_AddStringToObject(packet, "urgency", urgency);
}

/* After the escalation is written: its event, the item escalated, and the
 * goal blocked when a human must answer first.  In st's transaction. */
static int escalation_opened(store *st, const struct escalate_facts *f, const char *type,
                             const char *id, const char *urgency, const char *question,
                             int critical)
{
    const char *run_id = f->run_id && f->run_id[0] ? f->run_id : NULL;
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddStringToObject(p, "escalation_id", id);
    cJSON_AddStringToObject(p, "type", type);
    cJSON_AddStringToObject(p, "urgency", urgency);
    cJSON_AddStringToObject(p, "question", question);
    if ((rc = store_event_add(st, f->goal->id, f->item ? f->item->id : NULL, run_id,
                              "escalation.opened", p, NULL)) != 0)
        goto out;
    /* an item waiting on its question is blocked already (react did it) */
    if (f->item && strcmp(type, "ask_human") != 0 &&
        (rc = transition_apply(st, ENTITY_ITEM, f->item->id, "escalated", "failed", NULL)))
        goto out;
    if (critical && strcmp(type, "deadline") != 0) {
        /* a critical item waits for a human: so does its goal (a missed
         * deadline is news, not a stop); a goal not yet elaborated (a
         * configuration error at its first run) waits too: it goes back
         * to queued when unblocked */
        char gs[16];
        store_goal_status_fresh(st, f->goal->id, gs, sizeof(gs), NULL);
        if ((!strcmp(gs, "active") || !strcmp(gs, "queued")) &&
            (rc = transition_apply(st, ENTITY_GOAL, f->goal->id, "blocked", gs, p)))
            goto out;
    }
out:
    cJSON_Delete(p);
    return rc;
}

int escalate_open_facts(store *st, const struct escalate_facts *f, struct job_ctx *model,
                        const char *type)
{
    struct escalate_facts facts = *f;
    const char *scope = escalate_scope(f->item ? f->item->id : NULL, f->run_kind);
    int critical = f->item ? f->item->critical : 1;
    const char *urgency = "normal";
    struct store_escalation_new row;
    char id[ID_SIZE];
    char *text = NULL, *failure = NULL;
    cJSON *packet = NULL;
    int rc, inserted;

    /* the model's call may rewrite the job's failure under f->failure */
    failure = xstrdup(f->failure ? f->failure : "");
    facts.failure = failure;
    if (f->goal->deadline_at >= 0 && f->goal->deadline_at - time_now_ms() < 24 * 3600 * 1000LL)
        urgency = "high";
    else if (!critical)
        urgency = "low";
    if ((rc = id_new(id)) != 0)
        goto out;
    packet = packet_start(st, &facts, type, scope);
    packet_finish(packet, &facts, model, type, scope, urgency);
    text = cJSON_PrintUnformatted(packet);

    memset(&row, 0, sizeof(row));
    row.id = id;
    row.goal_id = f->goal->id;
    row.item_id = f->item ? f->item->id : NULL;
    row.run_id = f->run_id && f->run_id[0] ? f->run_id : NULL;
    row.type = type;
    row.severity = critical ? "critical" : "warning";
    row.urgency = urgency;
    row.packet = text;
    row.created_at = time_now_ms();
    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    if ((rc = store_escalation_insert(st, &row, &inserted)) == 0 && inserted)
        rc = escalation_opened(
            st, &facts, type, id, urgency,
            cJSON_GetObjectItemCaseSensitive(packet, "minimal_question")->valuestring, critical);
    /* not inserted: already open, nothing more (idempotent) */
    rc = store_tx_end(st, rc);
out:
    cJSON_free(text);
    cJSON_Delete(packet);
    free(failure);
    return rc;
}

int escalate_open(struct job_ctx *j, const char *type)
{
    struct escalate_facts f = {
        .goal = j->goal,
        .item = j->item,
        .run_id = j->claim.run_id,
        .run_kind = j->claim.kind,
        .error_class = j->error_class,
        .failure = strbuf_cstr(&j->failure),
    };
    char cls[32];

    /* the analysis's call keeps the job's class; copy it anyway, as f
     * borrows it */
    /* truncation: ok, an error class, same size both */
    snprintf(cls, sizeof(cls), "%s", j->error_class);
    f.error_class = cls;
    return escalate_open_facts(j->st, &f, j, type);
}
