#include "lifecycle/escalate.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/control.h"
#include "lifecycle/job.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"

/* What each kind of escalation offers: every action listed here does what
 * its option says (resolve.c), and no other is accepted.  The scope is
 * "item" (a work item's), "publish" (the goal's publish step) or "goal"
 * (elaboration, planning, the monitor). */
static const char *const item_budget_actions[] = {"increase_budget", "complete_partial", "pause",
                                                  NULL};
static const char *const goal_budget_actions[] = {"increase_budget", "pause", NULL};
static const char *const item_actions[] = {"retry",           "alternative",      "skip",
                                           "increase_budget", "complete_partial", "pause",
                                           NULL};
/* a blocked item (ask_human) cannot be skipped (DESIGN.md §2): answer it */
static const char *const ask_actions[] = {"retry", "alternative", "complete_partial", "pause",
                                          NULL};
/* the model's key or configuration (alternative: retry with another
 * strategy once it is fixed) */
static const char *const item_config_actions[] = {"retry", "alternative", "skip",
                                                  "complete_partial", "pause", NULL};
static const char *const publish_actions[] = {"retry", "skip", "pause", NULL};
static const char *const goal_actions[] = {"retry", "pause", NULL};
static const char *const deadline_actions[] = {"retry", "complete_partial", "pause", NULL};

const char *const *escalate_actions(const char *type, const char *scope)
{
    int item = scope && !strcmp(scope, "item");

    if (!strcmp(type, "deadline"))
        return deadline_actions;
    if (!strcmp(type, "budget"))
        return item ? item_budget_actions : goal_budget_actions;
    if (scope && !strcmp(scope, "publish"))
        return publish_actions;
    if (!item)
        return goal_actions;
    if (!strcmp(type, "ask_human"))
        return ask_actions;
    if (!strcmp(type, "auth") || !strcmp(type, "config"))
        return item_config_actions;
    return item_actions;
}

const char *escalate_scope(const char *item_id, const char *run_kind)
{
    if (item_id && *item_id)
        return "item";
    return run_kind && !strcmp(run_kind, "publish") ? "publish" : "goal";
}

static cJSON *attempts_json(store *st, const char *goal_id, const char *item_id)
{
    /* an attempt's strategy: the last Plan B or human alternative given to
     * the item before the run was claimed */
    static const char q_item[] =
        "SELECT id, kind, attempt, tier, model_index, ifnull(model, ''), status,"
        " ifnull(summary, ''), ifnull(failure_reason, ''), ifnull(error_class, ''),"
        " ifnull(error_signature, ''),"
        " (SELECT CASE e.type WHEN 'recovery.plan_b' THEN json_extract(e.payload, '$.strategy')"
        "  ELSE json_extract(e.payload, '$.input') END FROM events e WHERE e.item_id = r.item_id"
        "  AND (e.type = 'recovery.plan_b' OR (e.type = 'escalation.resolved'"
        "  AND json_extract(e.payload, '$.action') = 'alternative'))"
        "  AND e.id < (SELECT min(c.id) FROM events c WHERE c.run_id = r.id)"
        "  ORDER BY e.id DESC LIMIT 1)"
        " FROM runs r WHERE item_id = ? ORDER BY created_at, rowid";
    static const char q_goal[] =
        "SELECT id, kind, attempt, tier, model_index, ifnull(model, ''), status,"
        " ifnull(summary, ''), ifnull(failure_reason, ''), ifnull(error_class, ''),"
        " ifnull(error_signature, ''), NULL FROM runs WHERE goal_id = ? AND item_id IS NULL"
        " ORDER BY created_at, rowid";
    cJSON *arr = cJSON_CreateArray();
    sqlite3_stmt *s;

    if (store_prepare(st, &s, item_id ? q_item : q_goal) != 0)
        return arr;
    store_bind_text(s, 1, item_id ? item_id : goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run_id", (const char *)sqlite3_column_text(s, 0));
        cJSON_AddStringToObject(o, "kind", (const char *)sqlite3_column_text(s, 1));
        cJSON_AddNumberToObject(o, "attempt", sqlite3_column_int(s, 2));
        cJSON_AddNumberToObject(o, "tier", sqlite3_column_int(s, 3));
        cJSON_AddNumberToObject(o, "model_index", sqlite3_column_int(s, 4));
        cJSON_AddStringToObject(o, "model", (const char *)sqlite3_column_text(s, 5));
        cJSON_AddStringToObject(o, "status", (const char *)sqlite3_column_text(s, 6));
        cJSON_AddStringToObject(o, "strategy", sqlite3_column_type(s, 11) == SQLITE_NULL
                                                   ? "as planned"
                                                   : (const char *)sqlite3_column_text(s, 11));
        cJSON_AddStringToObject(o, "tried", (const char *)sqlite3_column_text(s, 7));
        cJSON_AddStringToObject(o, "why_failed", (const char *)sqlite3_column_text(s, 8));
        cJSON_AddStringToObject(o, "error_class", (const char *)sqlite3_column_text(s, 9));
        cJSON_AddStringToObject(o, "signature", (const char *)sqlite3_column_text(s, 10));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return arr;
}

static cJSON *state_json(store *st, const struct job_ctx *j)
{
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1), ifnull(classification, '')"
        " FROM gate_results WHERE id IN (SELECT max(id) FROM gate_results WHERE item_id = ?"
        " GROUP BY name) ORDER BY name";
    static const char q_art[] =
        "SELECT type, ifnull(ref, ''), ifnull(path, ''), ifnull(hash, '') FROM artifacts"
        " WHERE goal_id = ? ORDER BY id";
    static const char q_goal[] =
        "SELECT budget_max_tokens, budget_max_cost_usd, spent_tokens, spent_cost_usd"
        " FROM goals WHERE id = ?";
    cJSON *o = cJSON_CreateObject();
    cJSON *pass = cJSON_AddArrayToObject(o, "gates_passing");
    cJSON *failg = cJSON_AddArrayToObject(o, "gates_failing");
    cJSON *art = cJSON_AddArrayToObject(o, "artifacts");
    cJSON *b = cJSON_AddObjectToObject(o, "budget_remaining");
    sqlite3_stmt *s;

    if (j->item && store_prepare(st, &s, q_gates) == 0) {
        store_bind_text(s, 1, j->item->id);
        while (sqlite3_step(s) == SQLITE_ROW) {
            cJSON *g = cJSON_CreateObject();
            cJSON_AddStringToObject(g, "name", (const char *)sqlite3_column_text(s, 0));
            cJSON_AddNumberToObject(g, "exit_code", sqlite3_column_int(s, 2));
            cJSON_AddStringToObject(g, "classification", (const char *)sqlite3_column_text(s, 3));
            cJSON_AddItemToArray(sqlite3_column_int(s, 1) ? pass : failg, g);
        }
        store_done(s);
    }
    if (store_prepare(st, &s, q_art) == 0) {
        store_bind_text(s, 1, j->goal->id);
        while (sqlite3_step(s) == SQLITE_ROW) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "type", (const char *)sqlite3_column_text(s, 0));
            cJSON_AddStringToObject(a, "ref", (const char *)sqlite3_column_text(s, 1));
            cJSON_AddStringToObject(a, "path", (const char *)sqlite3_column_text(s, 2));
            cJSON_AddStringToObject(a, "hash", (const char *)sqlite3_column_text(s, 3));
            cJSON_AddItemToArray(art, a);
        }
        store_done(s);
    }
    if (store_prepare(st, &s, q_goal) == 0) {
        store_bind_text(s, 1, j->goal->id);
        if (sqlite3_step(s) == SQLITE_ROW) {
            if (sqlite3_column_type(s, 0) == SQLITE_NULL)
                cJSON_AddNullToObject(b, "tokens");
            else
                cJSON_AddNumberToObject(b, "tokens", (double)(sqlite3_column_int64(s, 0) -
                                                              sqlite3_column_int64(s, 2)));
            if (sqlite3_column_type(s, 1) == SQLITE_NULL)
                cJSON_AddNullToObject(b, "cost_usd");
            else
                cJSON_AddNumberToObject(b, "cost_usd",
                                        sqlite3_column_double(s, 1) - sqlite3_column_double(s, 3));
        }
        store_done(s);
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
    return (struct option_row){"pause", "leave it waiting for now", "nothing changes",
                               "nothing progresses", "none"};
}

/* The deterministic analysis, for when the model cannot (or need not) be
 * asked: the root cause is the failure itself, the options are the
 * actions offered, the question names the cause. */
static cJSON *fallback_analysis(const struct job_ctx *j, const char *type, const char *scope,
                                const char *const *actions)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *opts = cJSON_AddArrayToObject(a, "options");
    const char *cause = j->failure.len ? strbuf_cstr(&j->failure) : "recovery exhausted";
    /* the question holds the cause cut to leave room in q for its words (a
     * failure may be 16 KiB; strbuf_addf over the cap adds nothing); the
     * root cause keeps it whole */
    char cut[3072];
    size_t n = strlen(cause);
    strbuf q;

    strbuf_init(&q, 4096);
    cJSON_AddStringToObject(a, "root_cause", cause);
    if (n >= sizeof(cut)) {
        n = sizeof(cut) - sizeof("\xe2\x80\xa6");
        while (n > 0 && ((unsigned char)cause[n] & 0xc0) == 0x80)
            n--; /* not inside a UTF-8 character */
        memcpy(cut, cause, n);
        memcpy(cut + n, "\xe2\x80\xa6", sizeof("\xe2\x80\xa6")); /* "…" */
        cause = cut;
    }
    if (!strcmp(type, "ask_human") && j->item && j->item->question) {
        /* the agent's own question, verbatim */
        strbuf_adds(&q, j->item->question);
    } else if (!strcmp(type, "budget")) {
        strbuf_addf(&q, "%s: raise the budget%s, or pause?", cause,
                    !strcmp(scope, "item") ? ", complete with what is done" : "");
    } else if (!strcmp(type, "auth") && strcmp(scope, "publish")) {
        strbuf_addf(&q, "%s. Fix the key, then retry (a restart of the daemon retries too: it "
                        "reads the environment again)?",
                    cause);
    } else if (!strcmp(type, "config") && strcmp(scope, "publish")) {
        strbuf_addf(&q, "%s. Fix it, then retry (a changed configuration retries by itself: "
                        "SIGHUP after editing the file, or a restart with other settings)?",
                    cause);
    } else if (!strcmp(type, "deadline")) {
        strbuf_addf(&q, "%s: carry on, or complete with what is done?", cause);
    } else if (!strcmp(scope, "publish")) {
        strbuf_addf(&q, "Publishing failed: %s. Fix it and retry, or complete without "
                        "publishing (skip)?",
                    cause);
    } else if (!strcmp(scope, "goal") && control_provider_down(type)) {
        strbuf_addf(&q, "%s (%s stage): the provider is not answering. goald closes this and "
                        "goes on once a model call succeeds again; retry now?",
                    cause, j->claim.kind[0] ? j->claim.kind : "goal");
    } else if (!strcmp(scope, "goal")) {
        strbuf_addf(&q, "%s (%s stage). Retry?", cause, j->claim.kind[0] ? j->claim.kind : "goal");
    } else {
        strbuf_addf(&q, "%s. What should the agent do differently for this item?", cause);
    }
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

/* The last tool calls of the run (oldest first), for an agent's question. */
static cJSON *last_tool_calls(store *st, const char *run_id)
{
    static const char q[] =
        "SELECT tool, args FROM (SELECT id, json_extract(payload, '$.tool') AS tool,"
        " substr(ifnull(json_extract(payload, '$.arguments'), ''), 1, 300) AS args FROM events"
        " WHERE run_id = ? AND type = 'tool_call.started'"
        " AND json_extract(payload, '$.tool') <> 'ask_human' ORDER BY id DESC LIMIT 5)"
        " ORDER BY id";
    cJSON *arr = cJSON_CreateArray();
    sqlite3_stmt *s;

    if (!run_id || !*run_id || store_prepare(st, &s, q) != 0)
        return arr;
    store_bind_text(s, 1, run_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "tool", (const char *)sqlite3_column_text(s, 0));
        cJSON_AddStringToObject(o, "args", (const char *)sqlite3_column_text(s, 1));
        cJSON_AddItemToArray(arr, o);
    }
    store_done(s);
    return arr;
}

/* Ask stage escalate; NULL when the model cannot answer. */
static cJSON *model_analysis(struct job_ctx *j, const cJSON *attempts)
{
    strbuf user;
    cJSON *answer = NULL;
    char *t = cJSON_PrintUnformatted(attempts);
    char saved_cls[32];
    struct run_usage saved_usage;
    strbuf saved;

    /* keep the failure being escalated if this call fails too */
    snprintf(saved_cls, sizeof(saved_cls), "%s", j->error_class);
    strbuf_init(&saved, 16384);
    strbuf_adds(&saved, strbuf_cstr(&j->failure));
    strbuf_init(&user, 1 << 20);
    strbuf_addf(&user, "Goal: %s\n", j->goal->title);
    if (j->item)
        strbuf_addf(&user, "Work item: %s\n%s\n", j->item->title,
                    j->item->description ? j->item->description : "");
    strbuf_addf(&user, "Attempts: %s\n", t ? t : "[]");
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
    snprintf(j->error_class, sizeof(j->error_class), "%s", saved_cls);
    strbuf_reset(&j->failure);
    strbuf_adds(&j->failure, strbuf_cstr(&saved));
    strbuf_release(&saved);
    strbuf_release(&user);
    return answer;
}

int escalate_open(struct job_ctx *j, const char *type)
{
    static const char ins[] =
        "INSERT OR IGNORE INTO escalations(id, goal_id, item_id, run_id, type, severity, urgency,"
        " status, packet, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?)";
    cJSON *packet = cJSON_CreateObject(), *attempts, *analysis = NULL, *acts, *p = NULL;
    const char *scope = escalate_scope(j->item ? j->item->id : NULL, j->claim.kind);
    const char *const *actions = escalate_actions(type, scope);
    int critical = j->item ? j->item->critical : 1;
    int ask = !strcmp(type, "ask_human");
    /* the model is not asked about itself */
    int model_down = !strcmp(type, "auth") || !strcmp(type, "config") || !strcmp(type, "budget") ||
                     control_provider_down(type);
    const char *urgency = "normal";
    char id[ID_SIZE];
    char *text = NULL;
    sqlite3_stmt *s;
    int rc, inserted;

    if (j->goal->deadline_at >= 0 && j->goal->deadline_at - time_now_ms() < 24 * 3600 * 1000LL)
        urgency = "high";
    else if (!critical)
        urgency = "low";
    if ((rc = id_new(id)) != 0)
        goto out;
    if (j->item) {
        cJSON *wi = cJSON_AddObjectToObject(packet, "work_item");
        cJSON_AddStringToObject(wi, "id", j->item->id);
        cJSON_AddStringToObject(wi, "key", j->item->key);
        cJSON_AddStringToObject(wi, "title", j->item->title);
        cJSON_AddStringToObject(wi, "description", j->item->description ? j->item->description : "");
        cJSON_AddBoolToObject(wi, "critical", j->item->critical);
        if (j->item->strategy)
            cJSON_AddStringToObject(wi, "strategy", j->item->strategy);
    }
    cJSON_AddStringToObject(packet, "reason", type);
    cJSON_AddStringToObject(packet, "scope", scope);
    if (j->failure.len && !ask)
        cJSON_AddStringToObject(packet, "cause", strbuf_cstr(&j->failure));
    if (ask && j->item && j->item->question) {
        cJSON_AddStringToObject(packet, "question", j->item->question);
        cJSON_AddItemToObject(packet, "last_tool_calls", last_tool_calls(j->st, j->claim.run_id));
    }
    cJSON_AddStringToObject(packet, "error_class", j->error_class);
    attempts = attempts_json(j->st, j->goal->id, j->item ? j->item->id : NULL);
    cJSON_AddItemToObject(packet, "attempts", attempts);
    cJSON_AddItemToObject(packet, "state", state_json(j->st, j));
    if (!model_down && j->llm)
        analysis = model_analysis(j, attempts);
    if (!analysis)
        analysis = fallback_analysis(j, type, scope, actions);
    cJSON_AddItemToObject(packet, "analysis", analysis);
    /* the agent's own question is the question, verbatim (the analysis
     * may paraphrase it) */
    cJSON_AddStringToObject(packet, "minimal_question",
                            ask && j->item && j->item->question
                                ? j->item->question
                                : cJSON_GetObjectItemCaseSensitive(analysis, "minimal_question")
                                      ->valuestring);
    acts = cJSON_AddArrayToObject(packet, "actions");
    for (int i = 0; actions[i]; i++)
        cJSON_AddItemToArray(acts, cJSON_CreateString(actions[i]));
    cJSON_AddStringToObject(packet, "urgency", urgency);
    text = cJSON_PrintUnformatted(packet);

    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_prepare(j->st, &s, ins)) != 0)
        goto fail;
    store_bind_text(s, 1, id);
    store_bind_text(s, 2, j->goal->id);
    store_bind_text(s, 3, j->item ? j->item->id : NULL);
    store_bind_text(s, 4, j->claim.run_id[0] ? j->claim.run_id : NULL);
    store_bind_text(s, 5, type);
    store_bind_text(s, 6, critical ? "critical" : "warning");
    store_bind_text(s, 7, urgency);
    store_bind_text(s, 8, text);
    sqlite3_bind_int64(s, 9, time_now_ms());
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "escalation");
    inserted = sqlite3_changes(store_db(j->st)) == 1;
    store_done(s);
    if (rc)
        goto fail;
    if (!inserted) { /* already open: idempotent */
        rc = store_tx_commit(j->st);
        goto out;
    }
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "escalation_id", id);
    cJSON_AddStringToObject(p, "type", type);
    cJSON_AddStringToObject(p, "urgency", urgency);
    cJSON_AddStringToObject(p, "question",
                            cJSON_GetObjectItemCaseSensitive(packet, "minimal_question")->valuestring);
    if ((rc = store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id[0] ? j->claim.run_id : NULL,
                              "escalation.opened", p, NULL)) != 0)
        goto fail;
    if (j->item && !strcmp(type, "ask_human")) {
        /* the item is blocked (react did it); nothing more */
    } else if (j->item) {
        if ((rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "escalated", "failed", NULL)))
            goto fail;
    }
    if (critical && strcmp(type, "deadline") != 0) {
        /* a critical item waits for a human: so does its goal (a missed
         * deadline is news, not a stop) */
        char gs[16] = "";
        sqlite3_stmt *q;
        if (store_prepare(j->st, &q, "SELECT status FROM goals WHERE id = ?") == 0) {
            store_bind_text(q, 1, j->goal->id);
            if (sqlite3_step(q) == SQLITE_ROW)
                snprintf(gs, sizeof(gs), "%s", sqlite3_column_text(q, 0));
            store_done(q);
        }
        /* a goal not yet elaborated (a configuration error at its first
         * run) waits too: it goes back to queued when unblocked */
        if ((!strcmp(gs, "active") || !strcmp(gs, "queued")) &&
            (rc = transition_apply(j->st, ENTITY_GOAL, j->goal->id, "blocked", gs, p)))
            goto fail;
    }
    rc = store_tx_commit(j->st);
    goto out;
fail:
    store_tx_rollback(j->st);
out:
    cJSON_free(text);
    cJSON_Delete(p);
    cJSON_Delete(packet);
    return rc;
}
