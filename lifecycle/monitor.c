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
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle/escalate.h"
#include "lifecycle/intake.h"
#include "lifecycle/workspace.h"
#include "store/context_pack.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/run.h"
#include "store/status.h"
#include "store/trigger.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/log.h"
#include "util/path.h"
#include "util/xalloc.h"
#include "vcs/clone.h"
#include "vcs/repo.h"
#include "vcs/worktree.h"

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
    struct store_trigger_due rows[64];
    const char *tz = config_str(CFG_CRON_TIMEZONE) ? config_str(CFG_CRON_TIMEZONE) : "UTC";
    int n = 0, rc;

    if ((rc = store_trigger_templates_without(st, rows, 64, &n)) != 0)
        return rc;
    for (int i = 0; i < n; i++) {
        char tid[ID_SIZE];
        int64_t next = 0;
        if (next_fire(rows[i].schedule, now, &next) != 0) {
            log_warn("goal %.8s: schedule \"%s\": %s", rows[i].goal_id, rows[i].schedule,
                     err_last());
            continue;
        }
        id_new(tid);
        if ((rc = store_trigger_insert(st, tid, rows[i].goal_id, rows[i].schedule, tz, next,
                                       now)) != 0)
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
            tmpl->branch = xstrdup(branch);
    }
    cJSON_Delete(spec);
    return rc;
}

int monitor_next_fire_at(store *st, const struct goal *g, int64_t now, int64_t *out)
{
    int found = 0, rc;

    if (!g->is_template || !g->schedule || !g->status ||
        goal_status_of(g->status) == GOAL_CANCELLED)
        return err_set(ERR_NOTFOUND, "goal %.8s: not a scheduled template", g->id);
    if ((rc = store_trigger_next_fire_of_goal(st, g->id, out, &found)) != 0)
        return rc;
    if (found)
        return 0;
    /* no trigger yet: the daemon makes one at its next tick, from now */
    return next_fire(g->schedule, now, out);
}

/* A new instance of template_id (its parent), queued, its spend and
 * times reset; *inst receives its id.  In st's transaction. */
static int submit_instance(store *st, const char *template_id, char inst[ID_SIZE])
{
    struct goal *tmpl = NULL;
    int rc;

    if ((rc = store_goal_get(st, template_id, &tmpl)) != 0)
        return rc;
    free(tmpl->parent_id);
    tmpl->parent_id = xstrdup(template_id);
    free(tmpl->schedule);
    tmpl->schedule = NULL;
    /* one branch per template (the template's own), unless it asks for a
     * branch per run ("schedule_branch": "per_run") */
    if ((rc = instance_branch(tmpl)) != 0)
        goto out;
    free(tmpl->worktree);
    tmpl->worktree = NULL;
    free(tmpl->head_commit); /* an instance starts from its base (clone mode) */
    tmpl->head_commit = NULL;
    free(tmpl->status);
    tmpl->status = xstrdup("queued");
    tmpl->is_template = 0;
    tmpl->spent_tokens = tmpl->spent_wall_ms = 0;
    tmpl->spent_cost_usd = 0;
    tmpl->started_at = tmpl->ended_at = -1;
    rc = intake_submit(st, tmpl, inst);
out:
    store_goal_free(tmpl);
    return rc;
}

/* One due trigger: a new instance, or a skip while the last is open. */
static int fire(store *st, const struct store_trigger_due *t, int64_t now, int *fired)
{
    char open_id[ID_SIZE] = "", inst[ID_SIZE] = "";
    int64_t next = 0, at = t->next_fire_at;
    int missed = 0, rc;
    cJSON *p;

    /* how many fire times passed (for the record; they coalesce into one) */
    while (at <= now && missed < 10000) {
        missed++;
        if (next_fire(t->schedule, at, &at) != 0)
            break;
    }
    if ((rc = next_fire(t->schedule, now, &next)) != 0)
        next = INT64_MAX / 2; /* never again */
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    p = cJSON_CreateObject();
    if ((rc = store_goal_open_instance(st, t->goal_id, open_id)) != 0)
        goto out;
    cJSON_AddStringToObject(p, "trigger_id", t->id);
    cJSON_AddNumberToObject(p, "fires", missed);
    if (open_id[0]) {
        cJSON_AddStringToObject(p, "reason", "the previous instance is still open");
        cJSON_AddStringToObject(p, "open_instance", open_id);
        if ((rc = store_event_add(st, t->goal_id, NULL, NULL, "trigger.skipped", p, NULL)))
            goto out;
    } else {
        if ((rc = submit_instance(st, t->goal_id, inst)) != 0)
            goto out;
        cJSON_AddStringToObject(p, "instance", inst);
        if ((rc = store_event_add(st, t->goal_id, NULL, NULL, "trigger.fired", p, NULL)))
            goto out;
        (*fired)++;
    }
    rc = store_trigger_set_fired(st, t->id, next, now);
out:
    rc = store_tx_end(st, rc);
    cJSON_Delete(p);
    return rc;
}

int monitor_fire_triggers(store *st, int64_t now, int *fired)
{
    struct store_trigger_due rows[64];
    int n = 0, rc;

    *fired = 0;
    if ((rc = ensure_triggers(st, now)) != 0)
        return rc;
    if ((rc = store_trigger_list_due(st, now, rows, 64, &n)) != 0)
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = fire(st, &rows[i], now, fired)) != 0)
            return rc;
    return 0;
}

/* A goal-level escalation from the monitor (no run, no model). */
static int escalate_goal(store *st, const char *goal_id, const char *type, const char *why)
{
    struct escalate_facts f;
    struct goal *g = NULL;
    int rc;

    if ((rc = store_goal_get(st, goal_id, &g)) != 0)
        return rc;
    memset(&f, 0, sizeof(f));
    f.goal = g;
    f.error_class = type;
    f.failure = why;
    rc = escalate_open_facts(st, &f, NULL, type);
    store_goal_free(g);
    return rc;
}

/* Escalate each of the n goals ids, counting them in *raised. */
static int escalate_each(store *st, char (*ids)[ID_SIZE], int n, const char *type,
                         const char *why, int *raised)
{
    int rc;

    for (int i = 0; i < n; i++) {
        if ((rc = escalate_goal(st, ids[i], type, why)) != 0)
            return rc;
        (*raised)++;
    }
    return 0;
}

int monitor_check_deadlines(store *st, int64_t now, int *raised)
{
    char ids[64][ID_SIZE];
    int n = 0, rc;

    *raised = 0;
    if ((rc = store_escalation_goals_past_deadline(st, now, ids, 64, &n)) != 0)
        return rc;
    return escalate_each(st, ids, n, "deadline",
                         "the goal is past its deadline", raised);
}

int monitor_sweep(store *st, int64_t now, int runs_aborted, struct monitor_sweep *out)
{
    int64_t days = config_int(CFG_MONITOR_RETENTION_DAYS);
    char ids[64][ID_SIZE];
    cJSON *p;
    int n = 0, rc;

    memset(out, 0, sizeof(*out));
    out->runs_aborted = runs_aborted;
    if ((rc = store_escalation_goals_budget_spent(st, ids, 64, &n)) != 0 ||
        (rc = escalate_each(st, ids, n, "budget",
                            "the goal has spent its budget", &out->budget_escalations)) != 0)
        return rc;
    if (days > 0) {
        int64_t cutoff = now - days * 86400000LL;
        if ((rc = store_event_delete_before(st, cutoff, &out->events_deleted)) != 0 ||
            (rc = store_context_pack_delete_before(st, cutoff, &out->packs_deleted)) != 0)
            return rc;
    }
    p = cJSON_CreateObject();
    xcheck(p);
    cJSON_AddNumberToObject(p, "budget_escalations", out->budget_escalations);
    cJSON_AddNumberToObject(p, "events_deleted", out->events_deleted);
    cJSON_AddNumberToObject(p, "context_packs_deleted", out->packs_deleted);
    cJSON_AddNumberToObject(p, "runs_aborted", out->runs_aborted);
    rc = store_event_add(st, NULL, NULL, NULL, "monitor.sweep", p, NULL);
    cJSON_Delete(p);
    return rc;
}

/* Is this node done with goal_id's worktree?  *yes 1 when the goal ended,
 * no job of this node runs it (busy) and no run of it is running on any
 * node (a run not yet recovered may still be a job of this one). */
static int done_with(store *st, const char *goal_id, const struct monitor_busy *busy, int *yes)
{
    struct store_run_live *runs = NULL;
    size_t n = 0;
    int ended = 0, rc;

    *yes = 0;
    for (int i = 0; busy && i < busy->n; i++)
        if (!strcmp(busy->ids[i], goal_id))
            return 0;
    if ((rc = store_goal_ended(st, goal_id, &ended)) != 0 || !ended)
        return rc;
    if ((rc = store_run_running_of_goal(st, goal_id, &runs, &n)) != 0)
        return rc;
    free(runs);
    *yes = n == 0;
    return 0;
}

/* The worktree at path of the ended goal goal_id removed: through the
 * records of the repository it belongs to (its folder and registration),
 * then whatever is left at path (a half-made worktree, or one its
 * repository does not know, or whose repository is gone): path is in
 * goald's worktree root and named by a goal that ended. */
static int drop_at(store *st, const char *goal_id, const char *path)
{
    struct goal *g = NULL;
    char *repo = NULL, *wt = NULL;
    struct stat sb;
    int clone = 0, rc;

    if ((rc = store_goal_get(st, goal_id, &g)) != 0)
        return rc;
    if ((rc = workspace_locate(st, g, &repo, &wt, &clone)) == 0 && repo && fs_exists(repo)) {
        rc = vcs_worktree_remove(repo, path);
        /* local mode: the worktree the goal records, made under another
         * root (another node's, an earlier setting's), through the
         * repository's records only */
        if (rc == 0 && !clone && wt && strcmp(wt, path) != 0)
            rc = vcs_worktree_remove(repo, wt);
        if (!clone)
            workspace_remove_items(g, repo);
    }
    if (rc == 0 && lstat(path, &sb) == 0)
        rc = fs_remove_tree(path);
    workspace_remove_builds(st, goal_id);
    free(repo);
    free(wt);
    store_goal_free(g);
    return rc;
}

int monitor_worktree_drop(store *st, const char *goal_id, const struct monitor_busy *busy,
                          int *removed)
{
    char root[4096], path[4200];
    struct stat sb;
    int yes = 0, there, rc;

    *removed = 0;
    if ((rc = vcs_worktree_root(root, sizeof(root))) != 0)
        return rc;
    if (snprintf(path, sizeof(path), "%s/%s", root, goal_id) >= (int)sizeof(path))
        return err_set(ERR_INVALID, "worktree path too long");
    if ((rc = done_with(st, goal_id, busy, &yes)) != 0 || !yes)
        return rc;
    there = lstat(path, &sb) == 0;
    if ((rc = drop_at(st, goal_id, path)) != 0)
        return err_wrap(rc, "goal %.8s: worktree %s", goal_id, path);
    *removed = there;
    if (there)
        log_info("goal %.8s: its worktree %s removed (the goal ended)", goal_id, path);
    return 0;
}

struct wt_sweep {
    store *st;
    const struct monitor_busy *busy;
    int removed;
};

/* vcs_worktree_prune's pick: a worktree in this node's root whose goal
 * this node is done with. */
static int doomed(const char *path, void *ctx)
{
    struct wt_sweep *w = ctx;
    char id[ID_SIZE];
    int yes = 0;

    if (!vcs_worktree_goal_id(path, id))
        return 0;
    if (done_with(w->st, id, w->busy, &yes) != 0) {
        log_warn("goal %.8s: worktree %s kept: %s", id, path, err_last());
        err_clear();
        return 0;
    }
    return yes;
}

static int sweep_clone(const char *clone, void *ctx)
{
    struct wt_sweep *w = ctx;
    int n = 0;

    if (vcs_worktree_prune(clone, doomed, w, &n) != 0) {
        log_warn("clone %s: worktrees: %s", clone, err_last());
        err_clear();
    }
    w->removed += n;
    return 0;
}

/* The goal an entry of the worktree root belongs to: "<id>" (its
 * worktree) or "<id>.items" (its items' worktrees).  0: neither. */
static int root_entry_goal(char id[ID_SIZE], int *items, const char *name)
{
    size_t n = strlen(name);

    *items = n == ID_LEN + sizeof(".items") - 1 && !strcmp(name + ID_LEN, ".items");
    if (n != ID_LEN && !*items)
        return 0;
    memcpy(id, name, ID_LEN);
    id[ID_LEN] = '\0';
    return id_prefix_valid(id);
}

/* The folders in the worktree root named by a goal id: dropped when the
 * goal ended.  An items folder whose goal's worktree is gone (a job
 * killed between removing the one and the other) is reached through its
 * goal all the same: drop_at removes it with its registrations and
 * branches. */
static void sweep_root(struct wt_sweep *w)
{
    char root[4096], id[ID_SIZE], gdir[4200];
    struct dirent *e;
    struct stat sb;
    DIR *d;

    if (vcs_worktree_root(root, sizeof(root)) != 0) {
        log_warn("worktree root: %s", err_last());
        err_clear();
        return;
    }
    if (!(d = opendir(root))) {
        if (errno != ENOENT)
            log_warn("worktree root %s: %s", root, strerror(errno));
        return;
    }
    while ((e = readdir(d))) {
        int n = 0, items = 0;
        if (!root_entry_goal(id, &items, e->d_name))
            continue;
        /* an items folder beside its goal's folder goes with that one */
        if (items && (path_fmt(gdir, sizeof(gdir), "%s/%s", root, id) != 0 ||
                      lstat(gdir, &sb) == 0)) {
            err_clear();
            continue;
        }
        if (monitor_worktree_drop(w->st, id, w->busy, &n) != 0) {
            log_warn("%s", err_last());
            err_clear();
        }
        if (items && path_fmt(gdir, sizeof(gdir), "%s/%s", root, e->d_name) == 0 &&
            lstat(gdir, &sb) != 0)
            n = 1; /* the items folder went */
        err_clear();
        w->removed += n;
    }
    closedir(d);
}

/* The warm build folders (<store folder>/goals/<id>/builds) of goals that
 * ended: each goes with its goal's worktree (drop_at), and this reaches
 * those a job killed after the worktree went left behind. */
static void sweep_builds(struct wt_sweep *w)
{
    char dir[4096], goals[4200], builds[4400];
    struct dirent *e;
    struct stat sb;
    DIR *d;

    if (store_local_dir(dir, sizeof(dir), store_path(w->st)) != 0 ||
        path_fmt(goals, sizeof(goals), "%s/goals", dir) != 0) {
        err_clear();
        return;
    }
    if (!(d = opendir(goals)))
        return;
    while ((e = readdir(d))) {
        int yes = 0;
        if (strlen(e->d_name) != ID_LEN || !id_prefix_valid(e->d_name) ||
            path_fmt(builds, sizeof(builds), "%s/%s/builds", goals, e->d_name) != 0 ||
            lstat(builds, &sb) != 0) {
            err_clear();
            continue;
        }
        if (done_with(w->st, e->d_name, w->busy, &yes) != 0) {
            log_warn("goal %.8s: build folders kept: %s", e->d_name, err_last());
            err_clear();
            continue;
        }
        if (yes) {
            workspace_remove_builds(w->st, e->d_name);
            log_info("goal %.8s: its build folders removed (the goal ended)", e->d_name);
        }
    }
    closedir(d);
}

int monitor_worktrees_sweep(store *st, const struct monitor_busy *busy, int *removed)
{
    struct wt_sweep w = {st, busy, 0};
    char dir[4096];
    int rc;

    *removed = 0;
    sweep_root(&w);
    sweep_builds(&w);
    /* registrations left without their folder (a removal killed between
     * the two), or whose folder another path did not reach */
    if ((rc = store_local_dir(dir, sizeof(dir), store_path(st))) == 0)
        rc = vcs_clones_each(dir, sweep_clone, &w);
    *removed = w.removed;
    return rc;
}
