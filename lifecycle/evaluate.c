/*
 * evaluate.c - stage 6, evaluation: the decision on an item whose
 * deterministic gates passed (verify.c) and whose review was asked
 * (review.c).
 *
 * Top to bottom: the item must have left an artifact (a diff; for doc and
 * analysis items a file its summary names; without git a non-empty work
 * folder), else it fails as no_artifact.  Its evidence flag is computed
 * (verified, unverified, or unknown when a must-pass gate failed the same
 * way at the baseline), and each success criterion the item serves gets
 * an evidence decision with its kind and what backs it (evidence.c).  The item is
 * committed on the goal branch (idempotent: found by its Work-Item-Id
 * trailer) with commit, file and test_results artifacts; in clone mode
 * (docs/scaling.md) that commit is pushed, forced, to the goal's repo as
 * refs/goald/<goal-id> before anything counts it as done (a failed push
 * fails the run, class vcs).  The item goes verify -> done in one
 * transaction with its evidence flags and the goal's new head
 * (goals.head_commit), promoting the items that waited for it.
 */
#include "lifecycle/evaluate.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/evidence.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify_state.h"
#include "lifecycle/workspace.h"
#include "store/goal.h"
#include "store/item.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/path.h"
#include "util/xalloc.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/push.h"

/* ---- an artifact ---- */

/* Without git: is the work folder non-empty? */
static int folder_used(const char *root)
{
    int found = 0;
    DIR *d = opendir(root);
    struct dirent *e;

    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            found = 1;
    if (d)
        closedir(d);
    return found;
}

/* A path named in the summary that exists in the worktree (a file). */
static int names_file(struct workspace *ws, const char *summary)
{
    char word[512];
    const char *p = summary;

    while (*p) {
        size_t n = strcspn(p, " \t\n,;:()`'\"");
        if (n > 0 && n < sizeof(word) - 1) {
            char path[4700];
            memcpy(word, p, n);
            word[n] = '\0';
            if (path_fmt(path, sizeof(path), "%s/%s", ws->root, word) != 0) {
                err_clear(); /* a name too long for a path names no file */
            } else if (strchr(word, '.') && !strstr(word, "..") && fs_exists(path) &&
                       !fs_is_dir(path)) {
                return 1;
            }
        }
        p += n ? n : 1;
    }
    return 0;
}

/* Did the item leave something behind?  A non-empty diff; for doc and
 * analysis items also a file its summary names; without git, a non-empty
 * work folder. */
static int has_artifact(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    int empty = 1;

    if (!ws->wt)
        return folder_used(ws->root);
    if (vcs_diff_is_empty(&empty, ws->wt) != 0)
        return 0;
    if (!empty)
        return 1;
    {
        /* a run that died after committing the item left its change on the
         * branch: that commit is the artifact */
        char sha[VCS_OID_HEX];
        if (vcs_commit_find_by_trailer(sha, ws->wt, j->goal->base_branch, VCS_TRAILER_ITEM,
                                       j->item->id) == 0)
            return 1;
    }
    if ((!strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")) && summary)
        return names_file(ws, summary);
    return 0;
}

/* ---- the evidence ---- */

/* 1: every must-pass gate passed (a flaky one on its re-run), also with
 * changed gate inputs restored; 0: no deterministic gate at all; -1
 * (stored as NULL): a must-pass gate failed the same way at the baseline,
 * so nothing proves the item. */
static int item_verified(const struct verify_state *vs)
{
    int verified = vs->n_det > 0;

    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_result *r = &vs->ev[i].r, *w = vs->wev ? &vs->wev[i].r : NULL;
        if (!r->passed && r->must_pass && !strcmp(r->classification, "pre-existing"))
            verified = -1;
        if (w && !w->passed && w->must_pass && strcmp(w->classification, "flaky") != 0 &&
            !vs->wev[i].pinned_only)
            verified = -1;
    }
    return verified;
}

/* ---- the commit ---- */

/* The commit's artifacts: the commit itself and each file it changed.
 * They are the record of the commit: 0, or the store's error. */
static int commit_artifacts(struct job_ctx *j, const struct vcs_commit_result *cr,
                            const char *gates_line)
{
    cJSON *meta = cJSON_CreateObject();
    int rc;

    cJSON_AddBoolToObject(meta, "created", cr->created);
    cJSON_AddStringToObject(meta, "gates", gates_line);
    rc = verify_artifact(j, "commit", j->goal->branch, NULL, cr->sha, NULL, meta);
    cJSON_Delete(meta);
    for (size_t i = 0; rc == 0 && i < cr->nfiles; i++) {
        cJSON *fm = cJSON_CreateObject();
        char st[2] = {cr->files[i].status, '\0'};
        cJSON_AddStringToObject(fm, "status", st);
        cJSON_AddStringToObject(fm, "commit", cr->sha);
        rc = verify_artifact(j, "file", NULL, cr->files[i].path,
                             cr->files[i].sha256[0] ? cr->files[i].sha256 : NULL, NULL, fm);
        cJSON_Delete(fm);
    }
    return rc;
}

/* The item's commit (idempotent: found by its Work-Item-Id trailer) and
 * its artifacts; without git, nothing (*cr stays empty).  0, or ERR_FAIL
 * after job_fail(). */
static int item_commit(struct job_ctx *j, struct workspace *ws, const char *summary,
                       const char *gates_line, int verified, struct vcs_commit_result *cr)
{
    struct vcs_commit_msg msg;
    strbuf body, gates;
    int rc;

    if (!ws->wt)
        return 0;
    strbuf_init(&gates, 4096);
    strbuf_init(&body, 1 << 20);
    /* a commit message is not cut: too long a summary is refused as the
     * commit itself refuses too big a change.  The gates are said once,
     * in the Gates trailer */
    if (strbuf_addf(&body, "%s", summary ? summary : "") != 0 ||
        strbuf_addf(&gates, "%s%s", gates_line[0] ? gates_line : "none",
                    verified == 0 ? " (UNVERIFIED)" : "") != 0) {
        strbuf_release(&body);
        strbuf_release(&gates);
        return job_fail(j, "policy", "%s: commit message: %s", j->item->key, err_last());
    }
    memset(&msg, 0, sizeof(msg));
    msg.title = j->item->title;
    msg.body = strbuf_cstr(&body);
    msg.goal_id = j->goal->id;
    msg.work_item_id = j->item->id;
    msg.gates = strbuf_cstr(&gates);
    rc = vcs_commit_item(cr, ws->wt, j->goal->base_branch, &msg);
    strbuf_release(&body);
    strbuf_release(&gates);
    if (rc)
        return rc == ERR_TOOBIG || rc == ERR_POLICY
                   ? job_fail(j, "policy", "%s: %s", j->item->key, err_last())
                   : job_fail(j, "vcs", "commit: %s", err_last());
    if (cr->sha[0] && commit_artifacts(j, cr, gates_line) != 0)
        return job_fail(j, "internal", "commit artifact: %s", err_last());
    return 0;
}

/* Clone mode: the item's commit to the goal's repo as
 * refs/goald/<goal-id>, forced (a run that died after its push may have
 * left a commit there that the database never took: the database's head
 * decides, and this push replaces it).  0, or ERR_FAIL after job_fail()
 * (class vcs: recovery retries it; the item is not done). */
static int item_push(struct job_ctx *j, const char *sha)
{
    char ref[128];

    if (!j->clone || !sha || !sha[0])
        return 0;
    if (path_fmt(ref, sizeof(ref), "refs/goald/%s", j->goal->id) != 0)
        return job_fail(j, "vcs", "the goal's ref: %s", err_last());
    if (vcs_push_commit(j->repo, "origin", sha, ref, 1) != 0)
        return job_fail(j, "vcs", "pushing %.12s to %s of %s: %s", sha, ref, j->goal->repo,
                        err_last());
    return 0;
}

/* A test_results artifact per gate whose output held test counts: 0, or
 * the store's error. */
static int test_artifacts(struct job_ctx *j, const struct verify_state *vs)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < vs->plan.n; i++) {
        const struct gate_result *r = &vs->ev[i].r;
        cJSON *m;
        if (!r->counts.format)
            continue;
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "gate", r->name);
        cJSON_AddStringToObject(m, "format", r->counts.format);
        cJSON_AddNumberToObject(m, "passed", r->counts.passed);
        cJSON_AddNumberToObject(m, "failed", r->counts.failed);
        cJSON_AddNumberToObject(m, "skipped", r->counts.skipped);
        cJSON_AddNumberToObject(m, "total", r->counts.total);
        rc = verify_artifact(j, "test_results", r->name, NULL, r->output_hash, NULL, m);
        cJSON_Delete(m);
    }
    return rc;
}

/* verify -> done, in one transaction with its evidence flags, its commit
 * sha and the goal's head (head: the goal branch's after the item's
 * commit landed, workspace_land(); NULL when it made none); the items
 * that waited for it become ready. */
static int item_done(struct job_ctx *j, int verified, const char *gates_line, const char *sha,
                     const char *head)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddBoolToObject(p, "verified", verified == 1);
    cJSON_AddStringToObject(p, "gates", gates_line);
    if (sha)
        cJSON_AddStringToObject(p, "commit", sha);
    if ((rc = store_tx_begin(j->st)) == 0) {
        rc = store_item_set_verified(j->st, j->item->id, verified, sha);
        if (rc == 0 && head)
            rc = store_goal_set_head(j->st, j->goal->id, head);
        if (rc == 0)
            rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "done", "verify", p);
        if (rc == 0)
            rc = plan_promote_ready(j->st, j->goal->id, NULL);
        rc = store_tx_end(j->st, rc);
    }
    cJSON_Delete(p);
    return rc;
}

/* ---- the stage ---- */

int evaluate_item(struct job_ctx *j, struct workspace *ws, const char *summary,
                  const struct verify_state *vs)
{
    struct vcs_commit_result cr = {0};
    char head[VCS_OID_HEX] = "";
    int verified, rc;

    if (!has_artifact(j, ws, summary))
        return job_fail(j, "no_artifact", "the item left no change behind (no diff%s)",
                        !strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")
                            ? " and no file named in its summary"
                            : "");
    verified = item_verified(vs);
    if ((rc = evidence_record(j, vs, summary, verified)) != 0)
        return job_fail(j, "internal", "verification: %s", err_last());
    if ((rc = item_commit(j, ws, summary, vs->gates_line, verified, &cr)) != 0)
        goto out;
    fault_point("verify.after_commit");
    if ((rc = item_push(j, cr.sha)) != 0)
        goto out;
    fault_point("verify.after_push");
    /* an item in a worktree of its own: the goal branch moved to its
     * commit (the goal's branch lock is held); the head to record */
    if (cr.sha[0] && workspace_land(ws, j, cr.sha, head) != 0) {
        rc = job_fail(j, "vcs", "landing %s on the goal branch: %s", j->item->key, err_last());
        goto out;
    }
    fault_point("verify.after_land");
    if ((rc = test_artifacts(j, vs)) != 0) {
        rc = job_fail(j, "internal", "test results artifact: %s", err_last());
        goto out;
    }
    if ((rc = item_done(j, verified, vs->gates_line, cr.sha[0] ? cr.sha : NULL,
                        cr.sha[0] ? head : NULL)) != 0)
        rc = job_fail(j, "internal", "verification: %s", err_last());
    /* publishing the goal, once every item is finished, is a unit of its
     * own (claim.c), so that a failed push is retried without redoing the
     * item */
out:
    vcs_commit_result_release(&cr);
    return rc;
}
