#include "lifecycle/workspace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "store/artifact.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/run.h"
#include "store/item.h"
#include "util/config.h"
#include "util/err.h"
#include "util/filelock.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/hash.h"
#include "util/path.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "vcs/clone.h"
#include "vcs/diff.h"
#include "vcs/merge.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

int workspace_goal_dir(char *out, size_t n, struct job_ctx *j)
{
    char dir[4096];
    int rc = store_local_dir(dir, sizeof(dir), store_path(j->st));

    if (rc)
        return rc;
    if (snprintf(out, n, "%s/goals/%s", dir, j->goal->id) >= (int)n)
        return err_set(ERR_INVALID, "goal folder path too long");
    return 0;
}

/* Save the worktree's changes as a patch artifact of the run, then reset. */
static int save_and_reset(struct workspace *ws, struct job_ctx *j, const char *why)
{
    char dir[4096], patch[4200], hash[HASH_HEX_SIZE] = "";
    int saved = 0, rc;

    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
        return rc;
    if ((rc = path_fmt(patch, sizeof(patch), "%s/patches/%s.patch", dir, j->claim.run_id)) != 0)
        return err_wrap(rc, "the run's patch");
    if ((rc = vcs_worktree_reset(&saved, ws->wt, patch)) != 0)
        return rc;
    if (saved < 0) {
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "why", why);
        cJSON_AddStringToObject(meta, "patch",
                                "not saved: the changes were too large or unsafe "
                                "to save (tools.max_file_mb)");
        rc = store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                             "worktree.reset", meta, NULL);
        cJSON_Delete(meta);
    } else if (saved) {
        cJSON *meta = cJSON_CreateObject();
        char *mt;
        cJSON_AddStringToObject(meta, "why", why);
        mt = cJSON_PrintUnformatted(meta);
        hash_sha256_file(hash, patch);
        rc = store_artifact_insert_patch(j->st, j->goal->id, j->item ? j->item->id : NULL,
                                         j->claim.run_id, patch, hash, mt, time_now_ms());
        if (rc == 0)
            rc = store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL,
                                 j->claim.run_id, "worktree.reset", meta, NULL);
        cJSON_free(mt);
        cJSON_Delete(meta);
    }
    return rc;
}

/* 1 when a human accepted the item's best attempt and no run applied it
 * yet: that run applies its patch to a clean worktree (execute.c). */
static int best_attempt_owed(struct job_ctx *j)
{
    cJSON *acc = NULL, *done = NULL;
    const char *a, *d;
    int owed;

    if (store_decision_latest_of_item(j->st, j->item->id, "best_attempt_accepted", &acc) != 0 ||
        store_decision_latest_of_item(j->st, j->item->id, "best_attempt_applied", &done) != 0) {
        err_clear();
        cJSON_Delete(acc);
        cJSON_Delete(done);
        return 1; /* unknown: as if owed (the leftovers are saved and reset) */
    }
    a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(acc, "escalation_id"));
    d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(done, "escalation_id"));
    owed = a && !(d && !strcmp(a, d));
    cJSON_Delete(acc);
    cJSON_Delete(done);
    return owed;
}

/* The changes the worktree holds at a run's start: an earlier run's.
 * Those of the item's own run that asked a human (it was blocked on its
 * question: a pause, not a failure) are kept for the run after the
 * answer, with a "worktree.kept" event, when may_keep and the answer was
 * not to apply the item's best attempt; any other run's are saved as a
 * patch and reset. */
static int leftovers(struct workspace *ws, struct job_ctx *j, int may_keep)
{
    int empty = 1, asked = 0, rc;
    cJSON *meta;

    if ((rc = vcs_diff_is_empty(&empty, ws->wt)) != 0 || empty)
        return rc;
    if (may_keep && j->item &&
        store_run_item_asked_last(j->st, j->goal->id, j->item->id, j->claim.run_id, &asked) != 0) {
        err_clear(); /* unknown: reset, as for any leftover */
        asked = 0;
    }
    if (asked && best_attempt_owed(j))
        asked = 0; /* the answer was to apply the best attempt instead */
    if (!asked)
        return save_and_reset(ws, j, "left by an earlier run that did not finish");
    ws->kept = 1;
    meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "why", "the item's last run asked a human: its changes are "
                                         "kept for the run after the answer");
    rc = store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id, "worktree.kept", meta,
                         NULL);
    cJSON_Delete(meta);
    return rc;
}

int workspace_locate(store *st, const struct goal *g, char **repo, char **worktree, int *clone)
{
    char dir[4096], path[4096];
    int rc;

    *repo = *worktree = NULL;
    *clone = 0;
    if (!g->repo)
        return 0;
    if (!goal_view_clone(g)) {
        *repo = xstrdup(g->repo);
        *worktree = g->worktree ? xstrdup(g->worktree) : NULL;
        return 0;
    }
    /* clone mode: this node's own clone and worktree, whatever path
     * another node recorded on the goal */
    if ((rc = store_local_dir(dir, sizeof(dir), store_path(st))) != 0 ||
        (rc = vcs_clone_path(path, sizeof(path), dir, g->repo)) != 0)
        return rc;
    *repo = xstrdup(path);
    if ((rc = vcs_worktree_root(dir, sizeof(dir))) != 0)
        goto fail;
    if (snprintf(path, sizeof(path), "%s/%s", dir, g->id) >= (int)sizeof(path)) {
        rc = err_set(ERR_INVALID, "worktree path too long");
        goto fail;
    }
    *worktree = xstrdup(path);
    *clone = 1;
    return 0;
fail:
    free(*repo);
    *repo = NULL;
    return rc;
}

/* The worktree root a local-mode goal's worktrees live in: the parent of
 * the worktree its record names (decided by the first run that made one,
 * maybe under another node's or an earlier setting's root), else the
 * configured one.  Its items' worktrees go beside it. */
static int goal_root(char *out, size_t n, const struct goal *g)
{
    if (g->worktree && !goal_view_clone(g))
        return fs_dirname(out, n, g->worktree);
    return vcs_worktree_root(out, n);
}

/* Create (or reuse) the worktree at ws->root of repo on branch (NULL:
 * the goal branch), with its "worktree.rebuilt" event when it had been
 * tampered with. */
static int attach_on(struct workspace *ws, struct job_ctx *j, const char *repo,
                     const char *branch)
{
    const struct goal *g = j->goal;
    char root[4096];
    int rc;

    if ((rc = goal_root(root, sizeof(root), g)) != 0 ||
        (rc = vcs_worktree_create_in(&ws->wt, root, repo, g->base_branch,
                                     branch ? branch : g->branch, ws->root)) != 0)
        return err_wrap(rc, "worktree of %s", g->repo);
    if ((rc = path_fmt(ws->root, sizeof(ws->root), "%s", vcs_worktree_path(ws->wt))) != 0)
        return err_wrap(rc, "worktree of %s", g->repo);
    ws->git_common = vcs_worktree_git_common(ws->wt);
    ws->git_dir = vcs_worktree_git_dir(ws->wt);
    if (vcs_worktree_rebuilt(ws->wt)) {
        /* the worktree was tampered with between runs: made again */
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "why", vcs_worktree_rebuilt(ws->wt));
        rc = store_event_add(j->st, g->id, j->item ? j->item->id : NULL, j->claim.run_id,
                             "worktree.rebuilt", meta, NULL);
        cJSON_Delete(meta);
    }
    return rc;
}

static int attach(struct workspace *ws, struct job_ctx *j, const char *repo)
{
    return attach_on(ws, j, repo, NULL);
}

/* Record this node's worktree path on the goal when it says another. */
static int record_worktree(struct job_ctx *j, const char *root)
{
    int rc = 0;

    if (!j->goal->worktree || strcmp(j->goal->worktree, root) != 0)
        rc = store_goal_set_worktree(j->st, j->goal->id, root);
    if (rc == 0 && (!j->worktree || strcmp(j->worktree, root) != 0)) {
        free(j->worktree);
        j->worktree = xstrdup(root);
    }
    return rc;
}

/* The goal's head in clone mode, into target: the commit of its last done
 * item as the database records it, else the base branch as just fetched.
 * The head must be in the clone now: the remote is not trusted to hold it,
 * and nothing else is ever taken in its place. */
static int clone_target(struct job_ctx *j, const char *ref, char target[VCS_OID_HEX])
{
    const struct goal *g = j->goal;
    char rev[600];

    if (g->head_commit) {
        if (vcs_rev_commit(target, j->repo, g->head_commit) != 0 ||
            strcmp(target, g->head_commit) != 0)
            return err_set(ERR_NOTFOUND,
                           "the goal's head %s (the commit of its last done item) is not in %s "
                           "after fetching %s: the remote does not hold what the database says",
                           g->head_commit, g->repo, ref);
        return 0;
    }
    if (path_fmt(rev, sizeof(rev), "refs/heads/%s", g->base_branch) != 0)
        return err_wrap(ERR_INVALID, "base branch of %s", g->repo);
    if (vcs_rev_commit(target, j->repo, rev) != 0)
        return err_wrap(ERR_NOTFOUND, "base branch \"%s\" of %s", g->base_branch, g->repo);
    return 0;
}

/* Clone mode (docs/scaling.md): this node's clone fetched, the goal branch
 * at the goal's head, the worktree clean at it.  A dead run's leftovers
 * are saved against the commit that run started from, then the branch is
 * moved (forced) and the folder checked out again. */
static int open_clone(struct workspace *ws, struct job_ctx *j)
{
    const struct goal *g = j->goal;
    char ref[128], head[VCS_OID_HEX], target[VCS_OID_HEX], rev[600];
    int rc;

    if (!g->base_branch || !g->branch)
        return err_set(ERR_INVALID, "goal %.8s: clone mode needs a base branch and a branch",
                       g->id);
    if ((rc = path_fmt(ref, sizeof(ref), "refs/goald/%s", g->id)) != 0 ||
        (rc = path_fmt(ws->root, sizeof(ws->root), "%s", j->worktree)) != 0)
        return err_wrap(rc, "goal %.8s: the clone's ref or worktree", g->id);
    if ((rc = vcs_clone_fetch(j->repo, g->repo, g->base_branch, ref)) != 0 ||
        (rc = clone_target(j, ref, target)) != 0)
        return rc;
    /* a branch this node never had starts at the head */
    if ((rc = path_fmt(rev, sizeof(rev), "refs/heads/%s", g->branch)) != 0)
        return err_wrap(rc, "goal %.8s: its branch", g->id);
    if (vcs_rev_commit(head, j->repo, rev) != 0) {
        err_clear();
        if ((rc = vcs_branch_set(j->repo, g->branch, target)) != 0)
            return rc;
    }
    if ((rc = attach(ws, j, j->repo)) != 0 || (rc = record_worktree(j, ws->root)) != 0)
        return rc;
    if ((rc = vcs_worktree_head(head, ws->wt)) != 0)
        return rc;
    /* changes are kept only on the head they were made on */
    if ((rc = leftovers(ws, j, strcmp(head, target) == 0)) != 0)
        return rc;
    if (strcmp(head, target) == 0)
        return 0;
    /* the branch was elsewhere (another node went on, or a run died
     * after its commit): the database's head decides */
    if ((rc = vcs_branch_set(j->repo, g->branch, target)) != 0 ||
        (rc = vcs_worktree_reset(NULL, ws->wt, NULL)) != 0)
        return rc;
    {
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "from", head);
        cJSON_AddStringToObject(meta, "to", target);
        rc = store_event_add(j->st, g->id, j->item ? j->item->id : NULL, j->claim.run_id,
                             "worktree.moved", meta, NULL);
        cJSON_Delete(meta);
    }
    return rc;
}

/* ---- items side by side ---- */

static void lock_tick(void *ctx)
{
    if (job_renew_lease(ctx) != 0)
        err_clear(); /* the daemon's lease sweep decides; the wait goes on */
}

/* The goal's branch lock (workspace.h), waiting up to the run's timeout
 * and renewing its lease meanwhile. */
static int branch_lock(struct workspace *ws, struct job_ctx *j)
{
    char dir[4096], path[4200];
    int64_t wait_s = j->claim.timeout_s > 0 ? j->claim.timeout_s : 600;
    int rc;

    if (ws->lock_held)
        return 0;
    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
        return rc;
    if (snprintf(path, sizeof(path), "%s/branch.lock", dir) >= (int)sizeof(path))
        return err_set(ERR_INVALID, "lock path too long");
    if ((rc = filelock_take(&ws->lock_fd, path, wait_s * 1000, lock_tick, j)) != 0)
        return rc;
    ws->lock_held = 1;
    return 0;
}

/* Where item item_id of goal g works when it has a worktree of its own:
 * its folder and its branch. */
static int own_names(char *path, size_t pn, char *branch, size_t bn, const struct goal *g,
                     const char *item_id)
{
    char root[4096];
    int rc;

    if ((rc = goal_root(root, sizeof(root), g)) != 0)
        return rc;
    if (snprintf(path, pn, "%s/%s.items/%s", root, g->id, item_id) >= (int)pn ||
        snprintf(branch, bn, "%s-item-%.8s", g->branch, item_id) >= (int)bn)
        return err_set(ERR_INVALID, "item worktree path or branch too long");
    return 0;
}

/* The goal branch's head in the goal's repository. */
static int goal_head(struct job_ctx *j, char out[VCS_OID_HEX])
{
    char rev[600];

    if (path_fmt(rev, sizeof(rev), "refs/heads/%s", j->goal->branch) != 0)
        return err_wrap(ERR_INVALID, "the goal's branch");
    return vcs_rev_commit(out, j->repo, rev);
}

/* Does the item run in a worktree of its own?  When it has one already
 * (an earlier run of it made it), or another item of the goal runs now or
 * may start (ready) and the goal may run items side by side: an item in
 * the goal's own worktree holds the goal's branch lock for its whole run,
 * and one that started beside it could land only after that. */
static int wants_own(struct job_ctx *j, const char *path, int *own)
{
    struct stat sb;
    int others = 0, rc;

    *own = 0;
    if (lstat(path, &sb) == 0) {
        *own = 1;
        return 0;
    }
    if (config_int(CFG_GOAL_MAX_PARALLEL_ITEMS) < 2)
        return 0;
    if ((rc = store_item_count_live_others(j->st, j->goal->id, j->item->id, &others)) != 0)
        return rc;
    *own = others > 0;
    return 0;
}

/* The goal's own worktree exists, as the final check and the publication
 * need it, even when its items all ran in worktrees of their own. */
static int ensure_goal_worktree(struct job_ctx *j)
{
    struct workspace gw;
    char base[4096];
    struct stat sb;
    int rc;

    memset(&gw, 0, sizeof(gw));
    if (j->goal->worktree) {
        vcs_worktree *wt = NULL;
        if (lstat(j->goal->worktree, &sb) == 0)
            return 0;
        /* recorded, not made: a run killed in between makes it here */
        rc = workspace_goal_open(&wt, j);
        vcs_worktree_free(wt);
        return rc;
    }
    if ((rc = vcs_worktree_root(base, sizeof(base))) != 0)
        return rc;
    if (snprintf(gw.root, sizeof(gw.root), "%s/%s", base, j->goal->id) >= (int)sizeof(gw.root))
        return err_set(ERR_INVALID, "worktree path too long");
    /* recorded before it is made, as in workspace_open */
    if ((rc = record_worktree(j, gw.root)) == 0 && (rc = attach(&gw, j, j->goal->repo)) == 0 &&
        strcmp(j->worktree, gw.root) != 0)
        rc = record_worktree(j, gw.root);
    workspace_close(&gw);
    return rc;
}

/* The journal of an item's catch-up (vcs/merge.h): in the goal's folder,
 * which goald owns, named by the item. */
static int catch_up_journal(char *out, size_t n, struct job_ctx *j)
{
    char dir[4096];
    int rc;

    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0 || (rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    if (snprintf(out, n, "%s/%s.catch-up", dir, j->item->id) >= (int)n)
        return err_set(ERR_INVALID, "catch-up journal path too long");
    return 0;
}

/* The item's own worktree, on its own branch (made at the goal's head):
 * a catch-up a killed run left half done finished first, then an earlier
 * run's leftovers saved and reset as in the goal's; clean, it starts from
 * the goal's head as it is now. */
static int open_own(struct workspace *ws, struct job_ctx *j, const char *path, const char *branch)
{
    char head[VCS_OID_HEX], mine[VCS_OID_HEX], rev[640], journal[4200];
    int moved = 0, conflict = 0, resumed = 0, rc;

    if ((rc = ensure_goal_worktree(j)) != 0 || (rc = goal_head(j, head)) != 0)
        return rc;
    if ((rc = path_fmt(rev, sizeof(rev), "refs/heads/%s", branch)) != 0)
        return err_wrap(rc, "the item's branch");
    if (vcs_rev_commit(mine, j->repo, rev) != 0) {
        err_clear();
        if ((rc = vcs_branch_set(j->repo, branch, head)) != 0)
            return rc;
    }
    if ((rc = path_fmt(ws->root, sizeof(ws->root), "%s", path)) != 0)
        return err_wrap(rc, "the item's worktree");
    ws->own = 1;
    if ((rc = attach_on(ws, j, j->repo, branch)) != 0 ||
        (rc = catch_up_journal(journal, sizeof(journal), j)) != 0 ||
        (rc = vcs_worktree_catch_up_resume(&resumed, ws->wt, journal)) != 0 ||
        (rc = leftovers(ws, j, 1)) != 0)
        return rc;
    if (resumed)
        log_info("%s: a catch-up a killed run left half done was finished", j->item->key);
    if (ws->kept) /* brought onto the goal's head when it lands */
        return 0;
    return vcs_worktree_catch_up(&moved, &conflict, ws->wt, head, journal);
}

int workspace_goal_open(vcs_worktree **out, struct job_ctx *j)
{
    struct workspace ws;
    int rc;

    *out = NULL;
    memset(&ws, 0, sizeof(ws));
    if (!j->repo || !j->worktree || !j->goal->branch)
        return err_set(ERR_NOTFOUND, "the goal's worktree was never made");
    if ((rc = path_fmt(ws.root, sizeof(ws.root), "%s", j->worktree)) != 0)
        return err_wrap(rc, "the goal's worktree");
    if ((rc = attach(&ws, j, j->repo)) != 0) {
        vcs_worktree_free(ws.wt);
        return rc;
    }
    *out = ws.wt;
    return 0;
}

int workspace_catch_up(struct workspace *ws, struct job_ctx *j, int lock, int *moved)
{
    char from[VCS_OID_HEX] = "", head[VCS_OID_HEX], journal[4200];
    int conflict = 0, rc;

    *moved = 0;
    if (!ws->own)
        return 0;
    if (lock && (rc = branch_lock(ws, j)) != 0)
        return job_fail(j, "workspace", "the goal's branch lock: %s", err_last());
    if (vcs_worktree_head(from, ws->wt) != 0 || goal_head(j, head) != 0)
        return job_fail(j, "vcs", "the goal's head: %s", err_last());
    if (catch_up_journal(journal, sizeof(journal), j) != 0)
        return job_fail(j, "workspace", "the catch-up journal: %s", err_last());
    rc = vcs_worktree_catch_up(moved, &conflict, ws->wt, head, journal);
    if (rc && conflict)
        return job_fail(j, "conflict",
                        "%s: another item of the goal landed first and changed the same lines "
                        "(%s). This item runs again from the goal's head, which holds that "
                        "item's commit: redo the change on top of it.",
                        j->item->key, err_last());
    if (rc)
        return job_fail(j, "vcs", "bringing %s onto the goal's head: %s", j->item->key,
                        err_last());
    if (*moved) {
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "from", from);
        cJSON_AddStringToObject(meta, "to", head);
        cJSON_AddStringToObject(meta, "why", "another item of the goal landed while this one ran");
        job_event_or_warn(j, "worktree.caught_up", meta);
        cJSON_Delete(meta);
    }
    return 0;
}

int workspace_land(struct workspace *ws, struct job_ctx *j, const char *sha,
                   char head[VCS_OID_HEX])
{
    char parent[VCS_OID_HEX], rev[VCS_OID_HEX + 2];
    int on = 0, rc;

    if ((rc = path_fmt(head, VCS_OID_HEX, "%s", sha)) != 0)
        return err_wrap(rc, "the item's commit");
    if (j->clone || !j->repo || !j->goal->branch)
        return 0;
    if ((rc = goal_head(j, head)) != 0 || (rc = vcs_commit_reaches(&on, j->repo, head, sha)) != 0)
        return rc;
    /* on the branch already: the item's own commit (the goal's worktree),
     * or a run killed after landing it; items may have landed on top */
    if (on)
        return 0;
    if (!ws->own)
        return err_set(ERR_FAIL, "the item's commit %.12s is not on the goal branch", sha);
    if ((rc = path_fmt(rev, sizeof(rev), "%s^", sha)) != 0 ||
        (rc = vcs_rev_commit(parent, j->repo, rev)) != 0 ||
        (rc = vcs_branch_move(j->repo, j->goal->branch, parent, sha)) != 0)
        return rc;
    return path_fmt(head, VCS_OID_HEX, "%s", sha);
}

void workspace_drop_own(struct workspace *ws, struct job_ctx *j)
{
    char path[sizeof(ws->root)], branch[600];

    if (!ws->own || own_names(path, sizeof(path), branch, sizeof(branch), j->goal, j->item->id))
        return;
    vcs_worktree_free(ws->wt);
    ws->wt = NULL;
    if (vcs_worktree_remove(j->repo, path) != 0 || vcs_branch_delete(j->repo, branch) != 0) {
        log_warn("%s: its worktree %s not removed: %s", j->item->key, path, err_last());
        err_clear();
    }
}

/* vcs_worktree_prune's pick: a worktree under the goal's items folder. */
static int under(const char *path, void *ctx)
{
    const char *dir = ctx;
    size_t n = strlen(dir);

    return !strncmp(path, dir, n) && path[n] == '/';
}

void workspace_remove_items(const struct goal *g, const char *repo)
{
    char root[4096], dir[4200], prefix[600];
    struct stat sb;
    int n = 0;

    if (!repo || !g->branch || goal_root(root, sizeof(root), g) != 0 ||
        snprintf(dir, sizeof(dir), "%s/%s.items", root, g->id) >= (int)sizeof(dir) ||
        snprintf(prefix, sizeof(prefix), "%s-item-", g->branch) >= (int)sizeof(prefix)) {
        err_clear();
        return;
    }
    if (lstat(dir, &sb) != 0)
        return;
    if (vcs_worktree_prune(repo, under, dir, &n) != 0 ||
        vcs_branch_delete_prefix(repo, prefix, &n) != 0 || fs_remove_tree(dir) != 0) {
        log_warn("goal %.8s: item worktrees in %s: %s", g->id, dir, err_last());
        err_clear();
    }
}

void workspace_remove_builds(store *st, const char *goal_id)
{
    char dir[4096], path[4200];
    struct stat sb;

    if (store_local_dir(dir, sizeof(dir), store_path(st)) != 0 ||
        path_fmt(path, sizeof(path), "%s/goals/%s/builds", dir, goal_id) != 0) {
        log_warn("goal %.8s: its build folders: %s", goal_id, err_last());
        err_clear();
        return;
    }
    if (lstat(path, &sb) == 0 && fs_remove_tree(path) != 0) {
        log_warn("goal %.8s: build folders %s not removed: %s", goal_id, path, err_last());
        err_clear();
    }
}

/* The goal's own worktree after another item landed from a worktree of
 * its own: its branch moved while it was idle; its files are the old
 * head's and go (the branch lock is held: no run is in it). */
static int follow_branch(struct workspace *ws, struct job_ctx *j)
{
    char head[VCS_OID_HEX] = "";
    int stale = 0, rc;
    cJSON *meta;

    if ((rc = vcs_worktree_stale(&stale, ws->wt)) != 0 || !stale)
        return rc;
    if ((rc = vcs_worktree_reset(NULL, ws->wt, NULL)) != 0)
        return rc;
    vcs_worktree_head(head, ws->wt);
    meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "to", head);
    cJSON_AddStringToObject(meta, "why", "items landed from worktrees of their own");
    rc = store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                         "worktree.moved", meta, NULL);
    cJSON_Delete(meta);
    return rc;
}

int workspace_open(struct workspace *ws, struct job_ctx *j)
{
    const struct goal *g = j->goal;
    int rc;

    memset(ws, 0, sizeof(*ws));
    if (!g->repo) {
        char dir[4096];
        if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
            return rc;
        if (snprintf(ws->root, sizeof(ws->root), "%s/work", dir) >= (int)sizeof(ws->root))
            return err_set(ERR_INVALID, "workspace path too long");
        return fs_mkdir_p(ws->root, 0700);
    }
    if (j->clone)
        return open_clone(ws, j);
    if (j->item && g->branch) {
        char path[sizeof(ws->root)], branch[600];
        int own = 0;
        if ((rc = own_names(path, sizeof(path), branch, sizeof(branch), g, j->item->id)) != 0 ||
            (rc = wants_own(j, path, &own)) != 0)
            return rc;
        if (own)
            return open_own(ws, j, path, branch);
        /* the goal's own worktree: no other run moves its branch now */
        if ((rc = branch_lock(ws, j)) != 0)
            return rc;
    }
    if (g->worktree) {
        if (path_fmt(ws->root, sizeof(ws->root), "%s", g->worktree) != 0)
            return err_wrap(ERR_INVALID, "goal %.8s: its worktree", g->id);
    } else {
        char base[4096];
        if ((rc = vcs_worktree_root(base, sizeof(base))) != 0)
            return rc;
        if (snprintf(ws->root, sizeof(ws->root), "%s/%s", base, g->id) >= (int)sizeof(ws->root))
            return err_set(ERR_INVALID, "worktree path too long");
        /* recorded before it is made: a run killed while making it leaves
         * the path on the goal, and the next run (on any node) takes that
         * folder up again instead of making a second worktree of the same
         * name elsewhere, which git refuses */
        if ((rc = record_worktree(j, ws->root)) != 0)
            return rc;
    }
    if ((rc = attach(ws, j, g->repo)) != 0)
        return rc;
    /* recorded again only when the folder's real path is another */
    if (!g->worktree && (!j->worktree || strcmp(j->worktree, ws->root) != 0) &&
        (rc = record_worktree(j, ws->root)) != 0)
        return rc;
    if ((rc = follow_branch(ws, j)) != 0)
        return rc;
    /* a run starts from the branch head: an earlier run's leftovers go,
     * but for the item's own changes from before its question */
    return leftovers(ws, j, 1);
}

void workspace_close(struct workspace *ws)
{
    vcs_worktree_free(ws->wt);
    ws->wt = NULL;
    if (ws->lock_held)
        filelock_release(ws->lock_fd);
    ws->lock_held = 0;
    ws->git_common = ws->git_dir = NULL;
}

static int state(struct workspace *ws, char *out, size_t n,
                 int (*fn)(char[VCS_OID_HEX], struct vcs_worktree *))
{
    char oid[VCS_OID_HEX];
    int rc;

    if (n)
        out[0] = '\0';
    if (!ws->wt)
        return 0;
    if ((rc = fn(oid, ws->wt)) != 0)
        return rc;
    return path_fmt(out, n, "%s", oid);
}

int workspace_state(struct workspace *ws, char *out, size_t n)
{
    return state(ws, out, n, vcs_worktree_state_tree);
}

int workspace_store(struct workspace *ws, char *out, size_t n)
{
    return state(ws, out, n, vcs_worktree_store_tree);
}

int workspace_discard(struct workspace *ws, struct job_ctx *j)
{
    if (!ws->wt)
        return 0;
    return save_and_reset(ws, j, "the run failed");
}
