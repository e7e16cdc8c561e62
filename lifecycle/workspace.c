#include "lifecycle/workspace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/job.h"
#include "store/artifact.h"
#include "store/event.h"
#include "store/goal.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "vcs/diff.h"
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
    snprintf(patch, sizeof(patch), "%s/patches/%s.patch", dir, j->claim.run_id);
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

int workspace_open(struct workspace *ws, struct job_ctx *j)
{
    const struct goal *g = j->goal;
    int empty = 1, rc;

    memset(ws, 0, sizeof(*ws));
    if (!g->repo) {
        char dir[4096];
        if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
            return rc;
        if (snprintf(ws->root, sizeof(ws->root), "%s/work", dir) >= (int)sizeof(ws->root))
            return err_set(ERR_INVALID, "workspace path too long");
        return fs_mkdir_p(ws->root, 0700);
    }
    if (g->worktree) {
        snprintf(ws->root, sizeof(ws->root), "%s", g->worktree);
    } else {
        char base[4096];
        if ((rc = vcs_worktree_root(base, sizeof(base))) != 0)
            return rc;
        if (snprintf(ws->root, sizeof(ws->root), "%s/%s", base, g->id) >= (int)sizeof(ws->root))
            return err_set(ERR_INVALID, "worktree path too long");
    }
    if ((rc = vcs_worktree_create(&ws->wt, g->repo, g->base_branch, g->branch, ws->root)) != 0)
        return err_wrap(rc, "worktree of %s", g->repo);
    snprintf(ws->root, sizeof(ws->root), "%s", vcs_worktree_path(ws->wt));
    ws->git_common = vcs_worktree_git_common(ws->wt);
    ws->git_dir = vcs_worktree_git_dir(ws->wt);
    if (vcs_worktree_rebuilt(ws->wt)) {
        /* the worktree was tampered with between runs: made again */
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "why", vcs_worktree_rebuilt(ws->wt));
        rc = store_event_add(j->st, g->id, j->item ? j->item->id : NULL, j->claim.run_id,
                             "worktree.rebuilt", meta, NULL);
        cJSON_Delete(meta);
        if (rc)
            return rc;
    }
    if (!g->worktree && (rc = store_goal_set_worktree(j->st, g->id, ws->root)) != 0)
        return rc;
    /* a run starts from the branch head: an earlier run's leftovers go */
    if ((rc = vcs_diff_is_empty(&empty, ws->wt)) != 0)
        return rc;
    if (!empty)
        rc = save_and_reset(ws, j, "left by an earlier run that did not finish");
    return rc;
}

void workspace_close(struct workspace *ws)
{
    vcs_worktree_free(ws->wt);
    ws->wt = NULL;
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
    snprintf(out, n, "%s", oid);
    return 0;
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
