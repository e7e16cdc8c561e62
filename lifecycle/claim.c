#include "lifecycle/claim.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/control.h"
#include "lifecycle/select.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "store/status.h"
#include "util/config.h"
#include "util/timeutil.h"
#include "util/err.h"
#include "util/xalloc.h"

/* The goal-level pick of the lane (plan: elaborate or plan; work: publish)
 * into c. */
static int pick_goal_unit(store *st, const char *lane, int64_t now,
                          const char (*busy_goals)[ID_SIZE], int n_busy, struct claim *c)
{
    struct store_run_pick p;
    int rc = !strcmp(lane, "plan") ? store_run_pick_plan(st, now, busy_goals, n_busy, &p)
                                   : store_run_pick_publish(st, now, busy_goals, n_busy, &p);

    if (rc)
        return rc;
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(c->goal_id, sizeof(c->goal_id), "%s", p.goal_id);
    /* truncation: ok, a kind name, at most 9 bytes */
    snprintf(c->kind, sizeof(c->kind), "%s", p.kind);
    c->attempt = p.attempts + 1;
    return 0;
}

/* A plan-lane unit; one whose last run timed out gets twice that run's
 * time. */
static int pick_plan_unit(store *st, int64_t now, const char (*busy_goals)[ID_SIZE], int n_busy,
                          struct claim *c)
{
    int rc = pick_goal_unit(st, "plan", now, busy_goals, n_busy, c), last = 0;

    c->timeout_s = (int)config_int(CFG_LANE_PLAN_TIMEOUT_S);
    if (rc)
        return rc;
    if ((rc = store_run_last_timeout_s(st, c->goal_id, c->kind, &last)) != 0)
        return rc;
    if (last > 0)
        c->timeout_s = last * 2;
    return 0;
}

/* A work-lane unit: a goal to publish, else the best ready item (its tier
 * and model index into *tier, *model_index). */
static int pick_work_unit(store *st, int64_t now, const char (*busy_goals)[ID_SIZE], int n_busy,
                          struct claim *c, int *tier, int *model_index)
{
    struct select_candidate sc;
    struct work_item *wi = NULL;
    int rc = pick_goal_unit(st, "work", now, busy_goals, n_busy, c);

    if (rc == 0) {
        c->timeout_s = (int)config_int(CFG_LANE_WORK_TIMEOUT_S);
        return 0;
    }
    if (rc != ERR_NOTFOUND)
        return rc;
    if ((rc = select_next(st, now, busy_goals, n_busy, &sc)) != 0)
        return rc;
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(c->goal_id, sizeof(c->goal_id), "%s", sc.goal_id);
    snprintf(c->item_id, sizeof(c->item_id), "%s", sc.id); /* truncation: ok, an id, ID_SIZE both */
    snprintf(c->kind, sizeof(c->kind), "execute"); /* truncation: ok, a constant that fits */
    if ((rc = store_item_get(st, sc.id, &wi)) != 0)
        return rc;
    *tier = wi->tier;
    *model_index = wi->model_index;
    c->attempt = wi->attempts + 1;
    c->timeout_s = wi->timeout_s > 0 ? wi->timeout_s : (int)config_int(CFG_LANE_WORK_TIMEOUT_S);
    store_item_free(wi);
    return 0;
}

/* Write the claim: the run row, the item in progress (or the goal's
 * attempt), the run.claimed event.  In the caller's transaction. */
static int record_claim(store *st, const struct claim *c, const char *node_id, int tier,
                        int model_index, int64_t now)
{
    struct store_run_new r = {
        .id = c->run_id,
        .goal_id = c->goal_id,
        .item_id = c->item_id[0] ? c->item_id : NULL,
        .kind = c->kind,
        .lane = c->lane,
        .attempt = c->attempt,
        .tier = tier,
        .model_index = model_index,
        .timeout_s = c->timeout_s,
        /* the job renews its lease; until it starts, the lease covers the timeout */
        .lease_until = now + (int64_t)c->timeout_s * 1000 + 30000,
        .now_ms = now,
        .node_id = node_id,
    };
    cJSON *p = NULL;
    int rc;

    if ((rc = store_run_insert(st, &r)) != 0)
        goto out;
    if (c->item_id[0]) {
        if ((rc = transition_apply(st, ENTITY_ITEM, c->item_id, "in_progress", "ready", NULL)) ||
            (rc = store_item_attempts_inc(st, c->item_id)))
            goto out;
    } else if ((rc = store_goal_attempts_inc(st, c->goal_id)) != 0) {
        goto out;
    }
    p = cJSON_CreateObject();
    xcheck(p);
    cJSON_AddStringToObject(p, "kind", c->kind);
    cJSON_AddStringToObject(p, "lane", c->lane);
    cJSON_AddNumberToObject(p, "attempt", c->attempt);
    cJSON_AddNumberToObject(p, "tier", tier);
    cJSON_AddNumberToObject(p, "timeout_s", c->timeout_s);
    rc = store_event_add(st, c->goal_id, c->item_id[0] ? c->item_id : NULL, c->run_id,
                         "run.claimed", p, NULL);
out:
    cJSON_Delete(p);
    return rc;
}

/* 0 when lane is under its global cap and the claimer's; ERR_NOTFOUND
 * when it is not. */
static int lane_caps(store *st, const char *lane, const struct claim_scope *scope)
{
    int64_t cap = config_int(!strcmp(lane, "plan") ? CFG_DAEMON_GLOBAL_PLAN_CAP
                                                   : CFG_DAEMON_GLOBAL_WORK_CAP),
            running = 0;
    int rc;

    if (cap > 0) {
        if ((rc = store_run_count_running(st, lane, NULL, &running)) != 0)
            return rc;
        if (running >= cap)
            return err_set(ERR_NOTFOUND, "the %s lane's global cap (%lld) is reached", lane,
                           (long long)cap);
    }
    if (scope->lane_cap > 0) {
        if ((rc = store_run_count_running(st, lane, scope->cap_node, &running)) != 0)
            return rc;
        if (running >= scope->lane_cap)
            return err_set(ERR_NOTFOUND, "the %s lane's cap (%d) is reached", lane,
                           scope->lane_cap);
    }
    return 0;
}

int claim_next(store *st, const char *lane, int64_t now_ms, const struct claim_scope *scope,
               struct claim *out, char *blocked_by, size_t blocked_n)
{
    static const struct claim_scope none;
    const char(*busy_goals)[ID_SIZE];
    struct claim c;
    int allowed = 1, rc, tier = 1, model_index = 0, n_busy;

    memset(&c, 0, sizeof(c));
    if (blocked_by && blocked_n)
        blocked_by[0] = '\0';
    if (strcmp(lane, "plan") != 0 && strcmp(lane, "work") != 0)
        return err_set(ERR_INVALID, "unknown lane \"%s\"", lane);
    snprintf(c.lane, sizeof(c.lane), "%s", lane); /* truncation: ok, plan or work */
    if ((rc = id_new(c.run_id)) != 0)
        return rc;
    if (!scope)
        scope = &none;
    busy_goals = scope->busy_goals;
    n_busy = scope->n_busy;
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    /* the claim's moment is when it holds the write lock: a run another
     * node ended while this one waited for it ended before this claim */
    if (now_ms == CLAIM_NOW)
        now_ms = time_now_ms();
    if ((rc = lane_caps(st, lane, scope)) != 0)
        goto out;
    if (!strcmp(lane, "plan"))
        rc = pick_plan_unit(st, now_ms, busy_goals, n_busy, &c);
    else
        rc = pick_work_unit(st, now_ms, busy_goals, n_busy, &c, &tier, &model_index);
    if (rc)
        goto out;
    /* a unit that calls a model waits while a breaker is open */
    if (strcmp(c.kind, "publish") != 0 &&
        (rc = breaker_gate(st, now_ms, c.run_id, &allowed, blocked_by, blocked_n)) != 0)
        goto out;
    if (!allowed) {
        rc = err_set(ERR_NOTFOUND, "claims paused: the %s breaker is open",
                     blocked_by ? blocked_by : "a");
        goto out;
    }
    rc = record_claim(st, &c, scope->node_id, tier, model_index, now_ms);
out:
    if ((rc = store_tx_end(st, rc)) == 0)
        *out = c;
    return rc;
}

int claim_load(store *st, const char *run_id, struct claim *out)
{
    struct store_run r;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = store_run_get(st, run_id, &r)) != 0)
        return rc;
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(out->goal_id, sizeof(out->goal_id), "%s", r.goal_id);
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(out->item_id, sizeof(out->item_id), "%s", r.item_id);
    /* truncation: ok, a kind name, at most 9 bytes */
    snprintf(out->kind, sizeof(out->kind), "%s", r.kind);
    snprintf(out->lane, sizeof(out->lane), "%s", r.lane); /* truncation: ok, plan or work */
    out->attempt = r.attempt;
    out->timeout_s = r.timeout_s < 0 ? 0 : r.timeout_s;
    if (run_status_of(r.status) != RUN_RUNNING)
        return err_set(ERR_TRANSITION, "run %s is %s, not running", run_id, r.status);
    return 0;
}
