/*
 * resolve.c - a human answers an escalation (`goald resolve`).
 *
 *   retry             the item (or goal) tries again; the input goes into
 *                     the next run's prompt; its recovery starts over
 *   alternative       the same, the input becomes the item's strategy
 *   skip              the item is skipped; its dependents go on (for a
 *                     publish escalation: the goal completes without push
 *                     or pull request, its commits on the local branch)
 *   increase_budget   the input raises the goal's budget, work goes on
 *   complete_partial  the goal completes with what is done (report and
 *                     pull request say partial); open items are cancelled
 *   pause             the escalation stays open, the goal stays as it is
 *   accept_test_changes  (an item refused for tests weakened or removed)
 *                     the input names test cases whose change the human
 *                     accepts: the check waives exactly those for the
 *                     item (recorded as a decision and in its evidence),
 *                     and the item tries again
 *   accept_best_attempt  (the same escalations) the item's best attempt
 *                     (its gates passed; its test changes were refused)
 *                     is applied again by its next run, verified with
 *                     that refusal waived, and committed: no model call
 *
 * Which of these an escalation offers depends on its kind
 * (escalate_actions()).  The system closes escalations too
 * (resolve_by_system()): the configuration they were about changed.  The
 * goal returns to active (queued when it was never elaborated) when
 * nothing blocks it any more.  Every change is written with its events in
 * one transaction.
 */
#include "lifecycle/resolve.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/breaker.h"
#include "lifecycle/escalate_actions.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/status.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* "max_cost_usd=5,max_tokens=100000" or {"max_cost_usd": 5}: the new
 * limits; each must be positive. */
static int parse_budget(const char *input, double *tokens, double *cost, double *hours)
{
    cJSON *j = input ? cJSON_Parse(input) : NULL;
    char buf[512];
    char *save = NULL;

    *tokens = *cost = *hours = -1;
    if (!input || !*input)
        return err_set(ERR_INVALID, "increase_budget: --input: give the new limits, e.g. "
                                    "max_cost_usd=5,max_tokens=1000000");
    if (cJSON_IsObject(j)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, j)
        {
            double *dst = !strcmp(it->string, "max_tokens")     ? tokens
                          : !strcmp(it->string, "max_cost_usd") ? cost
                          : !strcmp(it->string, "max_hours")    ? hours
                                                                : NULL;
            if (!dst || !cJSON_IsNumber(it) || !(it->valuedouble > 0)) {
                cJSON_Delete(j);
                return err_set(ERR_INVALID, "increase_budget: --input: %s: expected max_tokens, "
                                            "max_cost_usd or max_hours with a positive number",
                               it->string);
            }
            *dst = it->valuedouble;
        }
        cJSON_Delete(j);
        return 0;
    }
    cJSON_Delete(j);
    if ((size_t)snprintf(buf, sizeof(buf), "%s", input) >= sizeof(buf))
        return err_set(ERR_INVALID, "increase_budget: --input: too long");
    for (char *kv = strtok_r(buf, ", ", &save); kv; kv = strtok_r(NULL, ", ", &save)) {
        char *eq = strchr(kv, '='), *end;
        double v, *dst;
        if (!eq)
            return err_set(ERR_INVALID, "increase_budget: --input: \"%s\": expected KEY=VALUE", kv);
        *eq = '\0';
        dst = !strcmp(kv, "max_tokens") ? tokens : !strcmp(kv, "max_cost_usd") ? cost
              : !strcmp(kv, "max_hours")                                       ? hours
                                                                               : NULL;
        v = strtod(eq + 1, &end);
        if (!dst || *end || !(v > 0) || !isfinite(v))
            return err_set(ERR_INVALID, "increase_budget: --input: %s: expected max_tokens, "
                                        "max_cost_usd or max_hours with a positive number",
                           kv);
        *dst = v;
    }
    return 0;
}

static int is_action(const char *a)
{
    static const char *const all[] = {"retry",           "alternative",         "skip",
                                      "increase_budget", "complete_partial",    "pause",
                                      "accept_test_changes", "accept_best_attempt", NULL};
    for (int i = 0; all[i]; i++)
        if (!strcmp(all[i], a))
            return 1;
    return 0;
}

/* The event payload of a resolution. */
static cJSON *resolution_payload(const struct store_escalation_ref *e, const char *action,
                                 const char *input, const char *system)
{
    cJSON *p = cJSON_CreateObject();

    xcheck(p);
    cJSON_AddStringToObject(p, "escalation_id", e->id);
    cJSON_AddStringToObject(p, "type", e->type);
    cJSON_AddStringToObject(p, "action", action);
    if (input)
        cJSON_AddStringToObject(p, "input", input);
    if (system) {
        cJSON_AddStringToObject(p, "by", "system");
        cJSON_AddStringToObject(p, "reason", system);
    }
    return p;
}

/* complete_partial: the goal completes with what is done; its waiting
 * items are cancelled and every other open escalation of it ends too. */
static int do_complete_partial(store *st, const struct store_escalation_ref *e, cJSON *p,
                               int64_t now)
{
    char (*ids)[ID_SIZE] = NULL;
    size_t n = 0;
    int rc;

    if ((rc = store_goal_set_partial_rearm(st, e->goal_id)) != 0)
        return rc;
    if ((rc = store_item_ids_waiting(st, e->goal_id, &ids, &n)) != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = transition_apply(st, ENTITY_ITEM, ids[i], "cancelled", NULL, p);
    free(ids);
    if (rc)
        return rc;
    return store_escalation_resolve_others_partial(st, e->goal_id, e->id, now);
}

/* accept_test_changes: the cases named in input (comma, blank or line
 * separated) join the item's waiver, every case a human accepted so far
 * (a "test_changes_accepted" decision the verification reads). */
/* The test cases the item's latest refusal for weakened or removed tests
 * named (its verification decision), into names (a JSON array). */
static void refused_cases(store *st, const char *item_id, cJSON *names)
{
    static const char *const keys[] = {"introduced", "new_failing", "removed", "removed_failing",
                                       NULL};
    static const char *const where[] = {"gates", "restored_inputs_gates", NULL};
    cJSON *v = NULL;
    const cJSON *g, *id;

    if (store_decision_latest_of_item(st, item_id, "verification", &v) != 0)
        err_clear();
    for (int w = 0; where[w]; w++)
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(v, where[w]))
            for (int k = 0; keys[k]; k++)
                cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(g, keys[k]))
                    if (cJSON_IsString(id))
                        cJSON_AddItemToArray(names, cJSON_CreateString(id->valuestring));
    cJSON_Delete(v);
}

/* Is id among names?  Else ERR_INVALID naming what the refusal named. */
static int case_named(const cJSON *names, const char *id)
{
    const cJSON *n;
    char list[1024] = "";

    cJSON_ArrayForEach(n, names) if (!strcmp(n->valuestring, id)) return 0;
    cJSON_ArrayForEach(n, names)
        if (strlen(list) + strlen(n->valuestring) + 8 < sizeof(list))
            /* truncation: ok, a list shown */
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? ", " : "",
                     n->valuestring);
    if (!list[0])
        return err_set(ERR_INVALID, "--input: \"%s\": the refusal named no test case (the "
                                    "whole gate failed): accept_best_attempt accepts the "
                                    "attempt as it was",
                       id);
    return err_set(ERR_INVALID, "--input: \"%s\" is not a test case the refusal named (a file "
                                "is not a case); it named: %s",
                   id, list);
}

static int do_accept(store *st, const struct store_escalation_ref *e, const char *input)
{
    cJSON *prev = NULL, *d = cJSON_CreateObject(), *cases = cJSON_AddArrayToObject(d, "cases");
    cJSON *named = cJSON_CreateArray();
    const cJSON *it;
    char id[1024];
    int rc;

    refused_cases(st, e->item_id, named);

    if ((rc = store_decision_latest_waiver(st, e->item_id, &prev)) != 0)
        goto out;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(prev, "cases"))
        if (cJSON_IsString(it))
            cJSON_AddItemToArray(cases, cJSON_CreateString(it->valuestring));
    for (const char *p = input; p && *p;) {
        size_t n;
        p += strspn(p, ", \t\r\n");
        n = strcspn(p, ", \t\r\n");
        if (n && n < sizeof(id)) {
            memcpy(id, p, n);
            id[n] = '\0';
            if ((rc = case_named(named, id)) != 0)
                goto out;
            cJSON_AddItemToArray(cases, cJSON_CreateString(id));
        }
        p += n;
    }
    rc = store_decision_add(st,
                            &(struct store_decision_new){.goal_id = e->goal_id,
                                                         .item_id = e->item_id,
                                                         .kind = "test_changes_accepted",
                                                         .note = "by a human, through escalation",
                                                         .data = d});
out:
    cJSON_Delete(prev);
    cJSON_Delete(d);
    cJSON_Delete(named);
    return rc;
}

/* accept_best_attempt: the item's best attempt (its gates passed, its
 * test changes were refused; store_decision_best_attempt) is applied
 * again by the item's next run, verified with those changes waived, and
 * committed: a "best_attempt_accepted" decision the run reads. */
static int do_accept_best(store *st, const struct store_escalation_ref *e)
{
    struct store_best_attempt b;
    cJSON *d;
    int found = 0, rc;

    if ((rc = store_decision_best_attempt(st, e->item_id, &b, &found)) != 0)
        goto out;
    if (!found) {
        rc = err_set(ERR_INVALID, "escalation %s: the item has no best attempt (no run whose "
                                  "gates passed left a saved patch)",
                     e->id);
        goto out;
    }
    d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "run_id", b.run_id);
    cJSON_AddStringToObject(d, "patch", b.patch);
    cJSON_AddStringToObject(d, "escalation_id", e->id);
    cJSON_AddStringToObject(d, "rejected_because", b.reason);
    rc = store_decision_add(st,
                            &(struct store_decision_new){.goal_id = e->goal_id,
                                                         .item_id = e->item_id,
                                                         .kind = "best_attempt_accepted",
                                                         .note = "by a human, through escalation",
                                                         .data = d});
    cJSON_Delete(d);
out:
    store_best_attempt_release(&b);
    return rc;
}

/* An item's escalation: skip it (its dependents go on), or - retry,
 * alternative, increase_budget - it goes again, its recovery starting
 * over, with the human's words. */
static int do_item(store *st, const struct store_escalation_ref *e, const char *action,
                   const char *input, cJSON *p, int64_t now)
{
    int rc;

    if (!strcmp(action, "skip")) {
        if ((rc = transition_apply(st, ENTITY_ITEM, e->item_id, "skipped", NULL, p)) != 0)
            return rc;
        return plan_promote_ready(st, e->goal_id, NULL);
    }
    if (item_status_of(e->item_status) != ITEM_ESCALATED &&
        item_status_of(e->item_status) != ITEM_BLOCKED)
        return 0;
    if ((rc = store_item_recovery_restart(st, e->item_id, input && *input ? input : NULL,
                                          !strcmp(action, "alternative"), now)) != 0)
        return rc;
    return transition_apply(st, ENTITY_ITEM, e->item_id, "ready", NULL, p);
}

/* What the action does (pause aside), by scope. */
static int do_action(store *st, const struct store_escalation_ref *e, const char *scope,
                     const char *action, const char *input, cJSON *p, int64_t now)
{
    int rc;

    if (!strcmp(action, "increase_budget")) {
        double t, c, h;
        if ((rc = parse_budget(input, &t, &c, &h)) != 0 ||
            (rc = store_goal_budget_raise(st, e->goal_id, t, c, h)) != 0)
            return rc;
    }
    if (!strcmp(action, "complete_partial"))
        return do_complete_partial(st, e, p, now);
    if (!strcmp(scope, "publish") && !strcmp(action, "skip")) {
        /* publish without the step that failed: no push, no pull request */
        if ((rc = store_goal_publish_skip_push(st, e->goal_id)) != 0)
            return rc;
        return store_event_add(st, e->goal_id, NULL, NULL, "publish.skipped", p, NULL);
    }
    if (!strcmp(action, "accept_test_changes")) {
        if ((rc = do_accept(st, e, input)) != 0)
            return rc;
        return do_item(st, e, "retry", NULL, p, now);
    }
    if (!strcmp(action, "accept_best_attempt")) {
        if ((rc = do_accept_best(st, e)) != 0)
            return rc;
        return do_item(st, e, "retry", NULL, p, now);
    }
    if (e->item_id[0])
        return do_item(st, e, action, input, p, now);
    /* a goal-level escalation (elaborate, plan, publish, budget, deadline):
     * the goal's unit may be claimed again, with fresh attempts */
    return store_goal_attempts_rearm(st, e->goal_id);
}

/* The goal goes on when nothing holds it (or the goal completes as
 * partial); out->goal_status receives its status. */
static int goal_resume(store *st, const struct store_escalation_ref *e, const char *action,
                       cJSON *p, struct resolve_result *out)
{
    char gs[16];
    int blocked = 0, fresh = 0, rc;

    if ((rc = store_escalation_goal_held(st, e->goal_id, &blocked)) != 0)
        return rc;
    store_goal_status_fresh(st, e->goal_id, gs, sizeof(gs), &fresh);
    if (!strcmp(gs, "blocked") && (!blocked || !strcmp(action, "complete_partial"))) {
        const char *to = fresh ? "queued" : "active";
        if ((rc = transition_apply(st, ENTITY_GOAL, e->goal_id, to, "blocked", p)) != 0)
            return rc;
        snprintf(gs, sizeof(gs), "%s", to); /* truncation: ok, a status, short */
    }
    /* truncation: ok, a status, short */
    snprintf(out->goal_status, sizeof(out->goal_status), "%s", gs);
    return 0;
}

/* Do what action says for escalation e and close it: by a human (system
 * NULL), or by the system with the reason system.  In st's transaction. */
static int apply(store *st, const struct store_escalation_ref *e, const char *action,
                 const char *input, const char *system, struct resolve_result *out)
{
    const char *scope = escalate_scope(e->item_id, e->run_kind);
    int64_t now = time_now_ms();
    cJSON *p = resolution_payload(e, action, input, system);
    int rc;

    if (!strcmp(action, "pause")) {
        rc = store_escalation_set_paused(st, e->id, input);
        if (rc == 0)
            rc = store_event_add(st, e->goal_id, e->item_id[0] ? e->item_id : NULL, NULL,
                                 "escalation.paused", p, NULL);
        if (rc == 0)
            store_goal_status_fresh(st, e->goal_id, out->goal_status, sizeof(out->goal_status),
                                    NULL);
        goto out;
    }
    if ((rc = do_action(st, e, scope, action, input, p, now)) != 0)
        goto out;
    /* the model's configuration was the cause: its breaker lets the next
     * job try (when the system closes it, the breaker is closed already) */
    if (!system && strcmp(scope, "publish") != 0 &&
        (!strcmp(e->type, "config") || !strcmp(e->type, "auth")) &&
        (rc = breaker_close_config(st, e->type, "escalation resolved", now, NULL)) != 0)
        goto out;
    if ((rc = store_escalation_resolve(st, e->id, system ? "system" : action,
                                       system ? system : input, now)) != 0)
        goto out;
    if ((rc = store_event_add(st, e->goal_id, e->item_id[0] ? e->item_id : NULL, NULL,
                              system ? "escalation.closed" : "escalation.resolved", p, NULL)) != 0)
        goto out;
    rc = goal_resume(st, e, action, p, out);
out:
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(out->goal_id, sizeof(out->goal_id), "%s", e->goal_id);
    cJSON_Delete(p);
    return rc;
}

int lifecycle_resolve(store *st, const char *esc_id, const char *action, const char *input,
                      struct resolve_result *out)
{
    struct store_escalation_ref e;
    const char *const *allowed;
    int ok = 0, rc;

    memset(out, 0, sizeof(*out));
    if (!is_action(action))
        return err_set(ERR_INVALID, "--action: expected retry, skip, alternative, "
                                    "increase_budget, complete_partial, pause, "
                                    "accept_test_changes or accept_best_attempt, got \"%s\"",
                       action);
    if ((rc = store_escalation_ref_get(st, esc_id, &e)) != 0)
        return rc;
    if (strcmp(e.status, "open") != 0)
        return err_set(ERR_TRANSITION, "escalation %s is already resolved", esc_id);
    allowed = escalate_actions(e.type, escalate_scope(e.item_id, e.run_kind));
    for (int i = 0; allowed[i]; i++)
        if (!strcmp(allowed[i], action))
            ok = 1;
    /* any item escalation: do_accept_best() says when there is none */
    ok |= !strcmp(action, "accept_best_attempt") && e.item_id[0];
    if (!ok) {
        char list[256] = "";
        for (int i = 0; allowed[i]; i++)
            /* truncation: ok, a list shown */
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     allowed[i]);
        return err_set(ERR_INVALID, "escalation %s (%s) accepts %s, not %s", esc_id, e.type, list,
                       action);
    }
    if ((!strcmp(action, "alternative")) && (!input || !*input))
        return err_set(ERR_INVALID, "alternative: --input: describe the approach to take");
    if (!strcmp(action, "accept_test_changes") && (!input || !*input))
        return err_set(ERR_INVALID, "accept_test_changes: --input: name the test cases whose "
                                    "change you accept (as the escalation's cause lists them)");
    if (!strcmp(action, "skip") && item_status_of(e.item_status) == ITEM_BLOCKED)
        return err_set(ERR_INVALID, "escalation %s: the item is waiting for an answer; give it "
                                    "with --action retry --input TEXT (or complete_partial)",
                       esc_id);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    rc = apply(st, &e, action, input, NULL, out);
    return store_tx_end(st, rc);
}

int resolve_by_system(store *st, const char *goal_id, const char *type, int goal_only,
                      const char *reason)
{
    char (*ids)[ID_SIZE] = NULL;
    size_t n = 0;
    int rc;

    if ((rc = store_escalation_ids_system_closable(st, goal_id, type, goal_only, &ids, &n)))
        return rc;
    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct store_escalation_ref e;
        struct resolve_result r;
        if ((rc = store_escalation_ref_get(st, ids[i], &e)) == 0)
            rc = apply(st, &e, "retry", NULL, reason, &r);
    }
    rc = store_tx_end(st, rc);
out:
    free(ids);
    return rc;
}
