#include "lifecycle/escalate.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/job.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"

static const char *const budget_actions[] = {"increase_budget", "complete_partial", "pause", NULL};
static const char *const human_actions[] = {"retry", "alternative", "skip", "complete_partial",
                                            "pause", NULL};
/* a blocked item (ask_human) cannot be skipped (DESIGN.md §2): answer it */
static const char *const ask_actions[] = {"retry", "alternative", "complete_partial", "pause",
                                          NULL};
static const char *const general_actions[] = {"retry", "alternative", "skip", "increase_budget",
                                              "complete_partial", "pause", NULL};

const char *const *escalate_actions(const char *type)
{
    if (!strcmp(type, "budget"))
        return budget_actions;
    if (!strcmp(type, "ask_human"))
        return ask_actions;
    if (!strcmp(type, "auth") || !strcmp(type, "config"))
        return human_actions;
    return general_actions;
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

/* The deterministic analysis, for when the model cannot be asked. */
static cJSON *fallback_analysis(const struct job_ctx *j, const char *type)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *opts = cJSON_AddArrayToObject(a, "options");
    struct option_row rows[3];
    int n = 0;

    cJSON_AddStringToObject(a, "root_cause",
                            j->failure.len ? strbuf_cstr(&j->failure) : "recovery exhausted");
    if (!strcmp(type, "budget")) {
        rows[n++] = (struct option_row){"increase_budget", "raise the goal's budget and go on",
                                      "the work continues", "costs more", "a minute"};
        rows[n++] = (struct option_row){"complete_partial", "complete the goal with what is done",
                                      "no more spend", "the goal is partial", "none"};
        rows[n++] = (struct option_row){"pause", "leave the goal blocked for now",
                                      "nothing changes", "nothing progresses", "none"};
        cJSON_AddStringToObject(a, "minimal_question",
                                "Raise the budget, complete with what is done, or pause?");
    } else if (!strcmp(type, "auth") || !strcmp(type, "config")) {
        rows[n++] = (struct option_row){"retry", "fix the model's key or configuration, then retry",
                                      "the work continues as planned", "needs access to the key",
                                      "minutes"};
        rows[n++] = (struct option_row){"skip", "skip this item", "the rest goes on",
                                      "the item is not done", "none"};
        rows[n++] = (struct option_row){"pause", "leave it blocked", "nothing changes",
                                      "nothing progresses", "none"};
        cJSON_AddStringToObject(a, "minimal_question",
                                "The model refused the credentials: fix the key and retry?");
    } else {
        rows[n++] = (struct option_row){"retry", "retry with your hint as input",
                                      "keeps the plan", "may fail the same way", "small"};
        rows[n++] = (struct option_row){"alternative", "describe another approach",
                                      "avoids what failed", "needs your design", "medium"};
        if (!strcmp(type, "ask_human"))
            rows[n++] = (struct option_row){"pause", "leave the item waiting", "nothing changes",
                                          "nothing progresses", "none"};
        else
            rows[n++] = (struct option_row){"skip", "skip this item", "the rest goes on",
                                          "the item is not done", "none"};
        /* the agent's own question, when it asked one, is the question */
        cJSON_AddStringToObject(a, "minimal_question",
                                !strcmp(type, "ask_human") && j->item && j->item->question
                                    ? j->item->question
                                    : "What should the agent do differently for this item?");
    }
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "option", rows[i].option);
        cJSON_AddStringToObject(o, "description", rows[i].description);
        cJSON_AddStringToObject(o, "pros", rows[i].pros);
        cJSON_AddStringToObject(o, "cons", rows[i].cons);
        cJSON_AddStringToObject(o, "effort", rows[i].effort);
        cJSON_AddItemToArray(opts, o);
    }
    cJSON_AddStringToObject(a, "source", "goald");
    return a;
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
    const char *const *actions = escalate_actions(type);
    int critical = j->item ? j->item->critical : 1;
    int model_down = !strcmp(type, "auth") || !strcmp(type, "config") || !strcmp(type, "budget");
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
    cJSON_AddStringToObject(packet, "error_class", j->error_class);
    attempts = attempts_json(j->st, j->goal->id, j->item ? j->item->id : NULL);
    cJSON_AddItemToObject(packet, "attempts", attempts);
    cJSON_AddItemToObject(packet, "state", state_json(j->st, j));
    if (!model_down && j->llm)
        analysis = model_analysis(j, attempts);
    if (!analysis)
        analysis = fallback_analysis(j, type);
    cJSON_AddItemToObject(packet, "analysis", analysis);
    cJSON_AddStringToObject(packet, "minimal_question",
                            cJSON_GetObjectItemCaseSensitive(analysis, "minimal_question")
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
        if (!strcmp(gs, "active") &&
            (rc = transition_apply(j->st, ENTITY_GOAL, j->goal->id, "blocked", "active", p)))
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
