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
#include "lifecycle/escalate.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"

struct esc {
    char id[ID_SIZE], goal_id[ID_SIZE], item_id[ID_SIZE], type[32], status[16];
    char item_status[16], run_kind[16];
};

static int load(store *st, const char *id, struct esc *e)
{
    static const char sql[] =
        "SELECT e.goal_id, ifnull(e.item_id, ''), e.type, e.status, ifnull(w.status, ''),"
        " ifnull(r.kind, '') FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        " LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    memset(e, 0, sizeof(*e));
    store_bind_text(s, 1, id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(e->id, sizeof(e->id), "%s", id);
        snprintf(e->goal_id, sizeof(e->goal_id), "%s", sqlite3_column_text(s, 0));
        snprintf(e->item_id, sizeof(e->item_id), "%s", sqlite3_column_text(s, 1));
        snprintf(e->type, sizeof(e->type), "%s", sqlite3_column_text(s, 2));
        snprintf(e->status, sizeof(e->status), "%s", sqlite3_column_text(s, 3));
        snprintf(e->item_status, sizeof(e->item_status), "%s", sqlite3_column_text(s, 4));
        snprintf(e->run_kind, sizeof(e->run_kind), "%s", sqlite3_column_text(s, 5));
    } else {
        rc = err_set(ERR_NOTFOUND, "escalation %s: not found", id);
    }
    store_done(s);
    return rc;
}

/* Run sql binding a as ?1, b as ?2 and n as ?3, as far as it has them. */
static int exec1(store *st, const char *sql, const char *a, const char *b, int64_t n)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql), np;

    if (rc)
        return rc;
    np = sqlite3_bind_parameter_count(s);
    if (np >= 1)
        store_bind_text(s, 1, a);
    if (np >= 2)
        store_bind_text(s, 2, b);
    if (np >= 3)
        sqlite3_bind_int64(s, 3, n);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "resolve");
    store_done(s);
    return rc;
}

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
    snprintf(buf, sizeof(buf), "%s", input);
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

/* Does anything still hold the goal?  An open escalation (not paused) of
 * the goal or of a critical item, or a critical item waiting on a human. */
static int still_blocked(store *st, const char *goal_id, int *yes)
{
    static const char sql[] =
        "SELECT (SELECT count(*) FROM escalations e LEFT JOIN work_items w ON w.id = e.item_id"
        "        WHERE e.goal_id = ?1 AND e.status = 'open' AND e.type <> 'deadline'"
        "        AND (e.item_id IS NULL OR w.critical = 1))"
        " + (SELECT count(*) FROM work_items WHERE goal_id = ?1 AND critical = 1"
        "        AND status IN ('blocked', 'escalated'))";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    *yes = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) > 0;
    store_done(s);
    return 0;
}

static int is_action(const char *a)
{
    static const char *const all[] = {"retry", "alternative", "skip", "increase_budget",
                                      "complete_partial", "pause", NULL};
    for (int i = 0; all[i]; i++)
        if (!strcmp(all[i], a))
            return 1;
    return 0;
}

static int goal_status(store *st, const char *goal_id, char *out, size_t n)
{
    sqlite3_stmt *s;
    int rc;

    out[0] = '\0'; /* the caller reads it even when the query fails */
    if ((rc = store_prepare(st, &s, "SELECT status, elaboration IS NULL FROM goals WHERE id = ?")))
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        snprintf(out, n, "%s", sqlite3_column_text(s, 0));
    rc = sqlite3_column_int(s, 1); /* 1: never elaborated */
    store_done(s);
    return rc;
}

/* Do what action says for escalation e and close it: by a human (system
 * NULL), or by the system with the reason system.  In st's transaction. */
static int apply(store *st, const struct esc *e, const char *action, const char *input,
                 const char *system, struct resolve_result *out)
{
    const char *scope = escalate_scope(e->item_id, e->run_kind);
    int64_t now = time_now_ms();
    cJSON *p = cJSON_CreateObject();
    int blocked = 0, rc = 0;

    cJSON_AddStringToObject(p, "escalation_id", e->id);
    cJSON_AddStringToObject(p, "type", e->type);
    cJSON_AddStringToObject(p, "action", action);
    if (input)
        cJSON_AddStringToObject(p, "input", input);
    if (system) {
        cJSON_AddStringToObject(p, "by", "system");
        cJSON_AddStringToObject(p, "reason", system);
    }

    if (!strcmp(action, "pause")) {
        rc = exec1(st, "UPDATE escalations SET resolution = 'pause', resolution_input = ?1"
                       " WHERE id = ?2",
                   input, e->id, 0);
        if (rc == 0)
            rc = store_event_add(st, e->goal_id, e->item_id[0] ? e->item_id : NULL, NULL,
                                 "escalation.paused", p, NULL);
        if (rc == 0)
            goal_status(st, e->goal_id, out->goal_status, sizeof(out->goal_status));
        goto out;
    }

    /* what the action does */
    if (!strcmp(action, "increase_budget")) {
        double t, c, h;
        static const char sql[] =
            "UPDATE goals SET budget_max_tokens = CASE WHEN ?1 > 0 THEN CAST(?1 AS INTEGER)"
            " ELSE budget_max_tokens END, budget_max_cost_usd = CASE WHEN ?2 > 0 THEN ?2"
            " ELSE budget_max_cost_usd END, budget_max_hours = CASE WHEN ?3 > 0 THEN ?3"
            " ELSE budget_max_hours END WHERE id = ?4";
        sqlite3_stmt *s;
        if ((rc = parse_budget(input, &t, &c, &h)) != 0)
            goto out;
        if ((rc = store_prepare(st, &s, sql)) != 0)
            goto out;
        sqlite3_bind_double(s, 1, t);
        sqlite3_bind_double(s, 2, c);
        sqlite3_bind_double(s, 3, h);
        store_bind_text(s, 4, e->goal_id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "budget");
        store_done(s);
        if (rc)
            goto out;
    }
    if (!strcmp(action, "complete_partial")) {
        static const char q[] = "SELECT id FROM work_items WHERE goal_id = ? AND status IN"
                                " ('queued','ready','blocked','escalated')";
        char (*ids)[ID_SIZE] = NULL;
        size_t n = 0;
        if ((rc = exec1(st, "UPDATE goals SET partial = 1, attempts = 0, next_attempt_at = 0"
                            " WHERE id = ?1",
                        e->goal_id, NULL, 0)) != 0)
            goto out;
        if ((rc = store_ids(st, q, e->goal_id, &ids, &n)) != 0)
            goto out;
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = transition_apply(st, ENTITY_ITEM, ids[i], "cancelled", NULL, p);
        free(ids);
        if (rc)
            goto out;
        /* every other open escalation of the goal ends with it */
        if ((rc = exec1(st, "UPDATE escalations SET status = 'resolved', resolution ="
                            " 'complete_partial', resolved_at = ?3 WHERE goal_id = ?1"
                            " AND status = 'open' AND id <> ?2",
                        e->goal_id, e->id, now)) != 0)
            goto out;
    } else if (!strcmp(scope, "publish") && !strcmp(action, "skip")) {
        /* publish without the step that failed: no push, no pull request */
        if ((rc = exec1(st, "UPDATE goals SET publish = json_set(ifnull(publish, '{}'),"
                            " '$.push', json('false'), '$.pull_request', json('false')),"
                            " attempts = 0, next_attempt_at = 0 WHERE id = ?1",
                        e->goal_id, NULL, 0)) != 0 ||
            (rc = store_event_add(st, e->goal_id, NULL, NULL, "publish.skipped", p, NULL)) != 0)
            goto out;
    } else if (e->item_id[0]) {
        const char *item_st = e->item_status;
        if (!strcmp(action, "skip")) {
            if ((rc = transition_apply(st, ENTITY_ITEM, e->item_id, "skipped", NULL, p)) ||
                (rc = plan_promote_ready(st, e->goal_id, NULL)))
                goto out;
        } else if (!strcmp(item_st, "escalated") || !strcmp(item_st, "blocked")) {
            /* retry, alternative, increase_budget: the item goes again, its
             * recovery starting over, with the human's words */
            static const char sql[] =
                "UPDATE work_items SET tier = 1, recovery_epoch = ?3, next_attempt_at = 0,"
                " question = NULL, human_input = CASE WHEN ?4 = 'alternative' THEN human_input"
                " ELSE ifnull(?1, human_input) END, strategy = CASE WHEN ?4 = 'alternative'"
                " THEN ?1 ELSE strategy END WHERE id = ?2";
            sqlite3_stmt *s;
            if ((rc = store_prepare(st, &s, sql)) != 0)
                goto out;
            store_bind_text(s, 1, input && *input ? input : NULL);
            store_bind_text(s, 2, e->item_id);
            sqlite3_bind_int64(s, 3, now);
            store_bind_text(s, 4, action);
            rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "resolve");
            store_done(s);
            if (rc || (rc = transition_apply(st, ENTITY_ITEM, e->item_id, "ready", NULL, p)))
                goto out;
        }
    } else {
        /* a goal-level escalation (elaborate, plan, publish, budget,
         * deadline): the goal's unit may be claimed again, with fresh
         * attempts */
        if ((rc = exec1(st, "UPDATE goals SET attempts = 0, next_attempt_at = 0 WHERE id = ?1",
                        e->goal_id, NULL, 0)) != 0)
            goto out;
    }
    /* the model's configuration was the cause: its breaker lets the next
     * job try (when the system closes it, the breaker is closed already) */
    if (!system && strcmp(scope, "publish") != 0 &&
        (!strcmp(e->type, "config") || !strcmp(e->type, "auth")) &&
        (rc = breaker_close_config(st, e->type, "escalation resolved", now, NULL)) != 0)
        goto out;
    {
        static const char sql[] =
            "UPDATE escalations SET status = 'resolved', resolution = ?, resolution_input = ?,"
            " resolved_at = ? WHERE id = ?";
        sqlite3_stmt *s;
        if ((rc = store_prepare(st, &s, sql)) != 0)
            goto out;
        store_bind_text(s, 1, system ? "system" : action);
        store_bind_text(s, 2, system ? system : input);
        sqlite3_bind_int64(s, 3, now);
        store_bind_text(s, 4, e->id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "resolve");
        store_done(s);
        if (rc)
            goto out;
    }
    if ((rc = store_event_add(st, e->goal_id, e->item_id[0] ? e->item_id : NULL, NULL,
                              system ? "escalation.closed" : "escalation.resolved", p, NULL)) != 0)
        goto out;
    /* the goal goes on when nothing holds it */
    if ((rc = still_blocked(st, e->goal_id, &blocked)) != 0)
        goto out;
    {
        char gs[16];
        int fresh = goal_status(st, e->goal_id, gs, sizeof(gs));
        if (!strcmp(gs, "blocked") && (!blocked || !strcmp(action, "complete_partial"))) {
            const char *to = fresh ? "queued" : "active";
            if ((rc = transition_apply(st, ENTITY_GOAL, e->goal_id, to, "blocked", p)) != 0)
                goto out;
            snprintf(gs, sizeof(gs), "%s", to);
        }
        snprintf(out->goal_status, sizeof(out->goal_status), "%s", gs);
    }
out:
    snprintf(out->goal_id, sizeof(out->goal_id), "%s", e->goal_id);
    cJSON_Delete(p);
    return rc;
}

int lifecycle_resolve(store *st, const char *esc_id, const char *action, const char *input,
                      struct resolve_result *out)
{
    struct esc e;
    const char *const *allowed;
    int ok = 0, rc;

    memset(out, 0, sizeof(*out));
    if (!is_action(action))
        return err_set(ERR_INVALID, "--action: expected retry, skip, alternative, "
                                    "increase_budget, complete_partial or pause, got \"%s\"",
                       action);
    if ((rc = load(st, esc_id, &e)) != 0)
        return rc;
    if (strcmp(e.status, "open") != 0)
        return err_set(ERR_TRANSITION, "escalation %s is already resolved", esc_id);
    allowed = escalate_actions(e.type, escalate_scope(e.item_id, e.run_kind));
    for (int i = 0; allowed[i]; i++)
        if (!strcmp(allowed[i], action))
            ok = 1;
    if (!ok) {
        char list[256] = "";
        for (int i = 0; allowed[i]; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     allowed[i]);
        return err_set(ERR_INVALID, "escalation %s (%s) accepts %s, not %s", esc_id, e.type, list,
                       action);
    }
    if ((!strcmp(action, "alternative")) && (!input || !*input))
        return err_set(ERR_INVALID, "alternative: --input: describe the approach to take");
    if (!strcmp(action, "skip") && !strcmp(e.item_status, "blocked"))
        return err_set(ERR_INVALID, "escalation %s: the item is waiting for an answer; give it "
                                    "with --action retry --input TEXT (or complete_partial)",
                       esc_id);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = apply(st, &e, action, input, NULL, out)) != 0) {
        store_tx_rollback(st);
        return rc;
    }
    return store_tx_commit(st);
}

int resolve_by_system(store *st, const char *goal_id, const char *type, int goal_only,
                      const char *reason)
{
    /* never the publish unit's (a forge's refusal, a hung push: not the
     * model's to fix); goal_only: not an item's either */
    static const char q[] =
        "SELECT e.id FROM escalations e LEFT JOIN runs r ON r.id = e.run_id"
        " WHERE e.status = 'open' AND (?1 IS NULL OR e.goal_id = ?1) AND e.type = ?2"
        " AND ifnull(r.kind, '') <> 'publish'"
        " AND ifnull(json_extract(e.packet, '$.scope'), '') <> 'publish'"
        " AND (?3 = 0 OR e.item_id IS NULL) ORDER BY e.created_at, e.id";
    char (*ids)[ID_SIZE] = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, type);
    sqlite3_bind_int(s, 3, goal_only);
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            ids = realloc(ids, cap * sizeof(*ids));
            if (!ids)
                abort();
        }
        snprintf(ids[n++], ID_SIZE, "%s", sqlite3_column_text(s, 0));
    }
    store_done(s);
    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct esc e;
        struct resolve_result r;
        if ((rc = load(st, ids[i], &e)) == 0)
            rc = apply(st, &e, "retry", NULL, reason, &r);
    }
    if (rc)
        store_tx_rollback(st);
    else
        rc = store_tx_commit(st);
out:
    free(ids);
    return rc;
}
