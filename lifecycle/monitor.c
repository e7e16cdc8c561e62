/*
 * monitor.c - stage 8, run in-process by the daemon's cron lane; never
 * calls a model.
 *
 * Recurring goals: a goal with a schedule is a template with a trigger.
 * When the trigger is due, a new instance of the goal is submitted (its
 * parent is the template) — unless the previous instance is still open,
 * which skips the fire.  Fires missed while the daemon was down coalesce
 * into one: the next fire is always computed from now.
 */
#include "lifecycle/monitor.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/escalate.h"
#include "lifecycle/intake.h"
#include "lifecycle/job.h"
#include "store/event.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/err.h"
#include "util/log.h"
#include "vcs/repo.h"

static int next_fire(const char *schedule, int64_t after, int64_t *out)
{
    struct cron_expr c;
    int rc = cron_parse(&c, schedule);

    if (rc)
        return rc;
    return cron_next_tz(&c, after, config_str(CFG_CRON_TIMEZONE), out);
}

/* Templates without a trigger get one. */
static int ensure_triggers(store *st, int64_t now)
{
    static const char q[] = "SELECT id, schedule FROM goals g WHERE is_template = 1"
                            " AND status <> 'cancelled' AND schedule IS NOT NULL"
                            " AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.goal_id = g.id)";
    static const char ins[] =
        "INSERT INTO triggers(id, goal_id, schedule, timezone, enabled, next_fire_at,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?)";
    struct {
        char id[ID_SIZE];
        char schedule[256];
    } rows[64];
    int n = 0, rc;
    sqlite3_stmt *s;

    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    while (n < 64 && sqlite3_step(s) == SQLITE_ROW) {
        snprintf(rows[n].id, sizeof(rows[n].id), "%s", sqlite3_column_text(s, 0));
        snprintf(rows[n].schedule, sizeof(rows[n].schedule), "%s", sqlite3_column_text(s, 1));
        n++;
    }
    store_done(s);
    for (int i = 0; i < n; i++) {
        char tid[ID_SIZE];
        int64_t next = 0;
        if (next_fire(rows[i].schedule, now, &next) != 0) {
            log_warn("goal %.8s: schedule \"%s\": %s", rows[i].id, rows[i].schedule, err_last());
            continue;
        }
        id_new(tid);
        if ((rc = store_prepare(st, &s, ins)) != 0)
            return rc;
        store_bind_text(s, 1, tid);
        store_bind_text(s, 2, rows[i].id);
        store_bind_text(s, 3, rows[i].schedule);
        store_bind_text(s, 4, config_str(CFG_CRON_TIMEZONE) ? config_str(CFG_CRON_TIMEZONE) : "UTC");
        sqlite3_bind_int64(s, 5, next);
        sqlite3_bind_int64(s, 6, now);
        sqlite3_bind_int64(s, 7, now);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "trigger");
        store_done(s);
        if (rc)
            return rc;
    }
    return 0;
}

/* The branch an instance of tmpl works on: the template's branch,
 * goald/<slug>-<template id8>, or NULL (a new one from the instance's id,
 * made at intake) when the template's spec says "schedule_branch":
 * "per_run".  Sets tmpl->branch. */
static int instance_branch(struct goal *tmpl)
{
    cJSON *spec = tmpl->spec ? cJSON_Parse(tmpl->spec) : NULL;
    const char *mode =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "schedule_branch"));
    char branch[128];
    int rc = 0;

    free(tmpl->branch);
    tmpl->branch = NULL;
    if (tmpl->repo && !(mode && !strcmp(mode, "per_run"))) {
        if ((rc = vcs_branch_name_for_goal(branch, sizeof(branch), tmpl->title, tmpl->id)) == 0)
            tmpl->branch = strdup(branch);
    }
    cJSON_Delete(spec);
    return rc;
}

int monitor_next_fire_at(store *st, const struct goal *g, int64_t now, int64_t *out)
{
    static const char q[] =
        "SELECT next_fire_at FROM triggers WHERE goal_id = ? AND enabled = 1 LIMIT 1";
    sqlite3_stmt *s;
    int found = 0, rc;

    if (!g->is_template || !g->schedule || !g->status || !strcmp(g->status, "cancelled"))
        return err_set(ERR_NOTFOUND, "goal %.8s: not a scheduled template", g->id);
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, g->id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        found = 1;
    }
    store_done(s);
    if (found)
        return 0;
    /* no trigger yet: the daemon makes one at its next tick, from now */
    return next_fire(g->schedule, now, out);
}

/* One due trigger: a new instance, or a skip while the last is open. */
static int fire(store *st, const char *trigger_id, const char *template_id, const char *schedule,
                int64_t due, int64_t now, int *fired)
{
    static const char q_open[] =
        "SELECT id FROM goals WHERE parent_id = ? AND status IN ('queued','active','blocked')"
        " LIMIT 1";
    static const char upd[] = "UPDATE triggers SET next_fire_at = ?, last_fire_at = ?,"
                              " updated_at = ? WHERE id = ?";
    struct goal *tmpl = NULL;
    char open_id[ID_SIZE] = "", inst[ID_SIZE] = "";
    int64_t next = 0, t = due;
    int missed = 0, rc;
    cJSON *p = cJSON_CreateObject();
    sqlite3_stmt *s;

    /* how many fire times passed (for the record; they coalesce into one) */
    while (t <= now && missed < 10000) {
        missed++;
        if (next_fire(schedule, t, &t) != 0)
            break;
    }
    if ((rc = next_fire(schedule, now, &next)) != 0)
        next = INT64_MAX / 2; /* never again */
    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    if ((rc = store_prepare(st, &s, q_open)) != 0)
        goto fail;
    store_bind_text(s, 1, template_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        snprintf(open_id, sizeof(open_id), "%s", sqlite3_column_text(s, 0));
    store_done(s);
    cJSON_AddStringToObject(p, "trigger_id", trigger_id);
    cJSON_AddNumberToObject(p, "fires", missed);
    if (open_id[0]) {
        cJSON_AddStringToObject(p, "reason", "the previous instance is still open");
        cJSON_AddStringToObject(p, "open_instance", open_id);
        if ((rc = store_event_add(st, template_id, NULL, NULL, "trigger.skipped", p, NULL)))
            goto fail;
    } else {
        if ((rc = store_goal_get(st, template_id, &tmpl)) != 0)
            goto fail;
        free(tmpl->parent_id);
        tmpl->parent_id = strdup(template_id);
        free(tmpl->schedule);
        tmpl->schedule = NULL;
        /* one branch per template (the template's own), unless it asks
         * for a branch per run ("schedule_branch": "per_run") */
        if ((rc = instance_branch(tmpl)) != 0)
            goto fail;
        free(tmpl->worktree);
        tmpl->worktree = NULL;
        free(tmpl->status);
        tmpl->status = strdup("queued");
        tmpl->is_template = 0;
        tmpl->spent_tokens = tmpl->spent_wall_ms = 0;
        tmpl->spent_cost_usd = 0;
        tmpl->started_at = tmpl->ended_at = -1;
        if ((rc = intake_submit(st, tmpl, inst)) != 0)
            goto fail;
        cJSON_AddStringToObject(p, "instance", inst);
        if ((rc = store_event_add(st, template_id, NULL, NULL, "trigger.fired", p, NULL)))
            goto fail;
        (*fired)++;
    }
    if ((rc = store_prepare(st, &s, upd)) != 0)
        goto fail;
    sqlite3_bind_int64(s, 1, next);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int64(s, 3, now);
    store_bind_text(s, 4, trigger_id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "trigger");
    store_done(s);
    if (rc)
        goto fail;
    rc = store_tx_commit(st);
    goto out;
fail:
    store_tx_rollback(st);
out:
    store_goal_free(tmpl);
    cJSON_Delete(p);
    return rc;
}

int monitor_fire_triggers(store *st, int64_t now, int *fired)
{
    static const char q[] =
        "SELECT t.id, t.goal_id, t.schedule, t.next_fire_at FROM triggers t"
        " JOIN goals g ON g.id = t.goal_id WHERE t.enabled = 1 AND t.next_fire_at <= ?"
        " AND g.status <> 'cancelled' ORDER BY t.next_fire_at";
    struct {
        char id[ID_SIZE], goal[ID_SIZE], schedule[256];
        int64_t due;
    } rows[64];
    int n = 0, rc;
    sqlite3_stmt *s;

    *fired = 0;
    if ((rc = ensure_triggers(st, now)) != 0)
        return rc;
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, now);
    while (n < 64 && sqlite3_step(s) == SQLITE_ROW) {
        snprintf(rows[n].id, sizeof(rows[n].id), "%s", sqlite3_column_text(s, 0));
        snprintf(rows[n].goal, sizeof(rows[n].goal), "%s", sqlite3_column_text(s, 1));
        snprintf(rows[n].schedule, sizeof(rows[n].schedule), "%s", sqlite3_column_text(s, 2));
        rows[n].due = sqlite3_column_int64(s, 3);
        n++;
    }
    store_done(s);
    for (int i = 0; i < n; i++)
        if ((rc = fire(st, rows[i].id, rows[i].goal, rows[i].schedule, rows[i].due, now, fired)))
            return rc;
    return 0;
}

/* A goal-level escalation from the monitor (no run, no model). */
static int escalate_goal(store *st, const char *goal_id, const char *type, const char *why)
{
    struct job_ctx j;
    int rc;

    memset(&j, 0, sizeof(j));
    j.st = st;
    strbuf_init(&j.failure, 4096);
    strbuf_init(&j.summary, 64);
    snprintf(j.error_class, sizeof(j.error_class), "%s", type);
    strbuf_adds(&j.failure, why);
    /* an id is ID_LEN characters; the bound tells GCC's -Wformat-truncation
     * so (a Release build failed without it) */
    snprintf(j.claim.goal_id, sizeof(j.claim.goal_id), "%.*s", ID_LEN, goal_id);
    if ((rc = store_goal_get(st, goal_id, &j.goal)) == 0)
        rc = escalate_open(&j, type);
    store_goal_free(j.goal);
    strbuf_release(&j.failure);
    strbuf_release(&j.summary);
    return rc;
}

static int escalate_each(store *st, const char *sql, int64_t now, const char *type,
                         const char *why, int *raised)
{
    char ids[64][ID_SIZE];
    int n = 0, rc;
    sqlite3_stmt *s;

    if ((rc = store_prepare(st, &s, sql)) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, now);
    while (n < 64 && sqlite3_step(s) == SQLITE_ROW)
        snprintf(ids[n++], ID_SIZE, "%s", sqlite3_column_text(s, 0));
    store_done(s);
    for (int i = 0; i < n; i++) {
        if ((rc = escalate_goal(st, ids[i], type, why)) != 0)
            return rc;
        (*raised)++;
    }
    return 0;
}

int monitor_check_deadlines(store *st, int64_t now, int *raised)
{
    static const char q[] =
        "SELECT id FROM goals g WHERE is_template = 0 AND deadline_at IS NOT NULL"
        " AND deadline_at < ? AND status IN ('queued','active','blocked')"
        " AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id"
        " AND e.type = 'deadline')";

    *raised = 0;
    return escalate_each(st, q, now, "deadline", "the goal is past its deadline", raised);
}

int monitor_sweep(store *st, int64_t now, int runs_aborted, struct monitor_sweep *out)
{
    static const char q_budget[] =
        "SELECT id FROM goals g WHERE status = 'active' AND ?1 = ?1 AND ("
        " (budget_max_tokens IS NOT NULL AND spent_tokens >= budget_max_tokens) OR"
        " (budget_max_cost_usd IS NOT NULL AND spent_cost_usd >= budget_max_cost_usd) OR"
        " (budget_max_hours IS NOT NULL AND spent_wall_ms >= budget_max_hours * 3600000))"
        " AND NOT EXISTS (SELECT 1 FROM escalations e WHERE e.goal_id = g.id"
        " AND e.type = 'budget' AND e.status = 'open')";
    static const char del_events[] = "DELETE FROM events WHERE ts < ?";
    static const char del_packs[] =
        "DELETE FROM context_packs WHERE created_at < ? AND id NOT IN"
        " (SELECT max(id) FROM context_packs GROUP BY item_id)";
    int64_t days = config_int(CFG_MONITOR_RETENTION_DAYS);
    sqlite3_stmt *s;
    cJSON *p;
    int rc;

    memset(out, 0, sizeof(*out));
    out->runs_aborted = runs_aborted;
    if ((rc = escalate_each(st, q_budget, now, "budget", "the goal has spent its budget",
                            &out->budget_escalations)) != 0)
        return rc;
    if (days > 0) {
        int64_t cutoff = now - days * 86400000LL;
        if ((rc = store_prepare(st, &s, del_events)) != 0)
            return rc;
        sqlite3_bind_int64(s, 1, cutoff);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "retention");
        out->events_deleted = sqlite3_changes(store_db(st));
        store_done(s);
        if (rc || (rc = store_prepare(st, &s, del_packs)) != 0)
            return rc;
        sqlite3_bind_int64(s, 1, cutoff);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "retention");
        out->packs_deleted = sqlite3_changes(store_db(st));
        store_done(s);
        if (rc)
            return rc;
    }
    p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "budget_escalations", out->budget_escalations);
    cJSON_AddNumberToObject(p, "events_deleted", out->events_deleted);
    cJSON_AddNumberToObject(p, "context_packs_deleted", out->packs_deleted);
    cJSON_AddNumberToObject(p, "runs_aborted", out->runs_aborted);
    rc = store_event_add(st, NULL, NULL, NULL, "monitor.sweep", p, NULL);
    cJSON_Delete(p);
    return rc;
}
