#include "lifecycle/claim.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/control.h"
#include "lifecycle/select.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"

static int busy(const char (*busy_goals)[ID_SIZE], int n, const char *goal_id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(busy_goals[i], goal_id))
            return 1;
    return 0;
}

/* The first goal (not busy) that sql selects as (id, kind, attempts), with
 * now bound as ?1. */
static int pick_goal(store *st, const char *sql, int64_t now, const char (*busy_goals)[ID_SIZE],
                     int n_busy, struct claim *c)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql), found = 0;

    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, now);
    while (!found) {
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "claim");
            break;
        }
        if (busy(busy_goals, n_busy, (const char *)sqlite3_column_text(s, 0)))
            continue;
        snprintf(c->goal_id, sizeof(c->goal_id), "%s", sqlite3_column_text(s, 0));
        snprintf(c->kind, sizeof(c->kind), "%s", sqlite3_column_text(s, 1));
        c->attempt = sqlite3_column_int(s, 2) + 1;
        found = 1;
    }
    store_done(s);
    if (rc)
        return rc;
    return found ? 0 : ERR_NOTFOUND;
}

/* A plan-lane unit: a queued goal to elaborate, else an active elaborated
 * goal without items to plan; neither while a run of the goal is running. */
static int pick_plan(store *st, int64_t now, const char (*busy_goals)[ID_SIZE], int n_busy,
                     struct claim *c)
{
    static const char sql[] =
        "SELECT id, CASE status WHEN 'queued' THEN 'elaborate' ELSE 'plan' END, attempts"
        " FROM goals g WHERE is_template = 0 AND next_attempt_at <= ?1"
        " AND (status = 'queued' OR (status = 'active' AND elaboration IS NOT NULL"
        "      AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id)))"
        " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.goal_id = g.id AND r.status = 'running')"
        " ORDER BY priority DESC, created_at, id";

    return pick_goal(st, sql, now, busy_goals, n_busy, c);
}

/* A goal whose items are all finished (or that a human completed as
 * partial): its publish unit, in the work lane. */
static int pick_publish(store *st, int64_t now, const char (*busy_goals)[ID_SIZE], int n_busy,
                        struct claim *c)
{
    static const char sql[] =
        "SELECT id, 'publish', attempts FROM goals g WHERE status = 'active'"
        " AND next_attempt_at <= ?1"
        " AND (partial = 1 OR (EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id)"
        "      AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.goal_id = g.id"
        "                      AND w.status NOT IN ('done', 'skipped'))))"
        " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.goal_id = g.id AND r.status = 'running')"
        " ORDER BY priority DESC, created_at, id";

    return pick_goal(st, sql, now, busy_goals, n_busy, c);
}

static int insert_run(store *st, const struct claim *c, int tier, int model_index, int64_t now)
{
    static const char sql[] =
        "INSERT INTO runs(id, goal_id, item_id, kind, lane, status, attempt, tier, model_index,"
        " timeout_s, lease_until, created_at, started_at)"
        " VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, c->run_id);
    store_bind_text(s, 2, c->goal_id);
    store_bind_text(s, 3, c->item_id[0] ? c->item_id : NULL);
    store_bind_text(s, 4, c->kind);
    store_bind_text(s, 5, c->lane);
    sqlite3_bind_int(s, 6, c->attempt);
    sqlite3_bind_int(s, 7, tier);
    sqlite3_bind_int(s, 8, model_index);
    sqlite3_bind_int(s, 9, c->timeout_s);
    /* the job renews its lease; until it starts, the lease covers the timeout */
    sqlite3_bind_int64(s, 10, now + (int64_t)c->timeout_s * 1000 + 30000);
    sqlite3_bind_int64(s, 11, now);
    sqlite3_bind_int64(s, 12, now);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(st, "insert run");
    store_done(s);
    return rc;
}

static int item_info(store *st, const char *item_id, int *attempts, int *tier, int *model_index,
                     int *timeout_s)
{
    static const char sql[] =
        "SELECT attempts, tier, model_index, ifnull(timeout_s, 0) FROM work_items WHERE id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        *attempts = sqlite3_column_int(s, 0);
        *tier = sqlite3_column_int(s, 1);
        *model_index = sqlite3_column_int(s, 2);
        *timeout_s = sqlite3_column_int(s, 3);
    } else {
        rc = store_err(st, "claim item");
    }
    store_done(s);
    return rc;
}

int claim_next(store *st, const char *lane, int64_t now_ms, const char (*busy_goals)[ID_SIZE],
               int n_busy, struct claim *out, char *blocked_by, size_t blocked_n)
{
    struct claim c;
    int allowed = 1, rc, tier = 1, model_index = 0;
    cJSON *p = NULL;

    memset(&c, 0, sizeof(c));
    if (blocked_by && blocked_n)
        blocked_by[0] = '\0';
    if (strcmp(lane, "plan") != 0 && strcmp(lane, "work") != 0)
        return err_set(ERR_INVALID, "unknown lane \"%s\"", lane);
    snprintf(c.lane, sizeof(c.lane), "%s", lane);
    if ((rc = id_new(c.run_id)) != 0)
        return rc;
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if (!strcmp(lane, "plan")) {
        rc = pick_plan(st, now_ms, busy_goals, n_busy, &c);
        c.timeout_s = (int)config_int(CFG_LANE_PLAN_TIMEOUT_S);
        if (rc == 0) {
            /* a unit whose last run timed out gets twice that run's time */
            static const char q[] = "SELECT status, ifnull(timeout_s, 0) FROM runs WHERE goal_id = ?"
                                    " AND kind = ? ORDER BY created_at DESC, rowid DESC LIMIT 1";
            sqlite3_stmt *s;
            if ((rc = store_prepare(st, &s, q)) != 0)
                goto fail;
            store_bind_text(s, 1, c.goal_id);
            store_bind_text(s, 2, c.kind);
            if (sqlite3_step(s) == SQLITE_ROW &&
                !strcmp((const char *)sqlite3_column_text(s, 0), "timeout") &&
                sqlite3_column_int(s, 1) > 0)
                c.timeout_s = sqlite3_column_int(s, 1) * 2;
            store_done(s);
        }
    } else if ((rc = pick_publish(st, now_ms, busy_goals, n_busy, &c)) == 0) {
        c.timeout_s = (int)config_int(CFG_LANE_WORK_TIMEOUT_S);
    } else if (rc == ERR_NOTFOUND) {
        struct select_candidate sc;
        int attempts = 0, tmo = 0;
        rc = select_next(st, now_ms, busy_goals, n_busy, &sc);
        if (rc == 0) {
            snprintf(c.goal_id, sizeof(c.goal_id), "%s", sc.goal_id);
            snprintf(c.item_id, sizeof(c.item_id), "%s", sc.id);
            snprintf(c.kind, sizeof(c.kind), "execute");
            rc = item_info(st, sc.id, &attempts, &tier, &model_index, &tmo);
            c.attempt = attempts + 1;
            c.timeout_s = tmo > 0 ? tmo : (int)config_int(CFG_LANE_WORK_TIMEOUT_S);
        }
    }
    if (rc)
        goto fail;
    /* a unit that calls a model waits while a breaker is open */
    if (strcmp(c.kind, "publish") != 0 &&
        (rc = breaker_gate(st, now_ms, c.run_id, &allowed, blocked_by, blocked_n)) != 0)
        goto fail;
    if (!allowed) {
        rc = err_set(ERR_NOTFOUND, "claims paused: the %s breaker is open",
                     blocked_by ? blocked_by : "a");
        goto fail;
    }
    if ((rc = insert_run(st, &c, tier, model_index, now_ms)) != 0)
        goto fail;
    if (c.item_id[0]) {
        static const char upd[] =
            "UPDATE work_items SET attempts = attempts + 1 WHERE id = ?";
        sqlite3_stmt *s;
        if ((rc = transition_apply(st, ENTITY_ITEM, c.item_id, "in_progress", "ready", NULL)))
            goto fail;
        if ((rc = store_prepare(st, &s, upd)) != 0)
            goto fail;
        store_bind_text(s, 1, c.item_id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "claim");
        store_done(s);
        if (rc)
            goto fail;
    } else {
        static const char upd[] = "UPDATE goals SET attempts = attempts + 1 WHERE id = ?";
        sqlite3_stmt *s;
        if ((rc = store_prepare(st, &s, upd)) != 0)
            goto fail;
        store_bind_text(s, 1, c.goal_id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "claim");
        store_done(s);
        if (rc)
            goto fail;
    }
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "kind", c.kind);
    cJSON_AddStringToObject(p, "lane", c.lane);
    cJSON_AddNumberToObject(p, "attempt", c.attempt);
    cJSON_AddNumberToObject(p, "tier", tier);
    cJSON_AddNumberToObject(p, "timeout_s", c.timeout_s);
    rc = store_event_add(st, c.goal_id, c.item_id[0] ? c.item_id : NULL, c.run_id, "run.claimed",
                         p, NULL);
    cJSON_Delete(p);
    if (rc)
        goto fail;
    if ((rc = store_tx_commit(st)) != 0)
        return rc;
    *out = c;
    return 0;
fail:
    store_tx_rollback(st);
    return rc;
}

int claim_load(store *st, const char *run_id, struct claim *out)
{
    static const char sql[] = "SELECT goal_id, ifnull(item_id, ''), kind, lane, attempt,"
                              " ifnull(timeout_s, 0), status FROM runs WHERE id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    store_bind_text(s, 1, run_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
        snprintf(out->goal_id, sizeof(out->goal_id), "%s", sqlite3_column_text(s, 0));
        snprintf(out->item_id, sizeof(out->item_id), "%s", sqlite3_column_text(s, 1));
        snprintf(out->kind, sizeof(out->kind), "%s", sqlite3_column_text(s, 2));
        snprintf(out->lane, sizeof(out->lane), "%s", sqlite3_column_text(s, 3));
        out->attempt = sqlite3_column_int(s, 4);
        out->timeout_s = sqlite3_column_int(s, 5);
        if (strcmp((const char *)sqlite3_column_text(s, 6), "running") != 0)
            rc = err_set(ERR_TRANSITION, "run %s is %s, not running", run_id,
                         sqlite3_column_text(s, 6));
    } else {
        rc = err_set(ERR_NOTFOUND, "run %s: not found", run_id);
    }
    store_done(s);
    return rc;
}
