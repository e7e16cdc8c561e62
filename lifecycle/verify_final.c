/*
 * verify_final.c - the goal's final judgement: its must-pass gates once
 * more on the branch head before publishing.
 *
 * Top to bottom: the goal's start (the baseline of its first verified
 * item); the state of one final check (struct final_check); the reason a
 * failing gate blocks the goal; one must-pass gate judged on a final tree
 * (run on a throw-away copy, once more when it fails; compared with the
 * start per test case: a failure the goal introduced, or one it set out
 * to fix, blocks the goal, another is recorded as a partial failure); the
 * head with the gate inputs the goal changed as they were at its start;
 * a pass that was the first run on the same tree in the goal, reused; the
 * goal's worktree opened (fail closed without it) with the head, the
 * start and the restored head (every run here is cold: no warm build
 * folder, verify_warm.c, and only cold passes reused); the "final_check" decision; and
 * verify_goal_final, which judges every must-pass gate on the head and on
 * the restored head.
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "store/escalation.h"
#include "store/gate_result.h"
#include "util/err.h"
#include "util/path.h"
#include "util/xalloc.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

/* The goal's starting commit: the baseline of the first item verified
 * (nothing was committed on the goal branch before it). */
static void goal_start(struct job_ctx *j, char *out, size_t n)
{
    if (store_decision_first_verification_baseline(j->st, j->goal->id, out, n) != 0)
        err_clear();
}

/* The goal's final check under way: what verify_goal_final opens and
 * final_judge adds to.  Everything is owned here and freed by
 * final_check_release(). */
struct final_check {
    struct job_ctx *j;
    struct gate_plan plan;
    struct workspace ws; /* the goal's worktree (ws.wt owned) */
    struct gates_ctx gc; /* the runs stored as the goal's, no item */
    char head[VCS_OID_HEX], start[VCS_OID_HEX], restored[VCS_OID_HEX];
    const struct criteria *crit; /* the goal's success criteria (the job's) */
    cJSON *gates;    /* each gate's run, for the final_check decision */
    cJSON *failures; /* the failures the goal did not set out to fix */
    cJSON *accepted; /* the items' accepted test changes (case ids) */
    strbuf blame;    /* why the goal is blocked */
    int blocked;
};

static void final_check_release(struct final_check *fc)
{
    vcs_worktree_free(fc->ws.wt);
    gates_plan_release(&fc->plan);
    cJSON_Delete(fc->failures);
    cJSON_Delete(fc->accepted);
    cJSON_Delete(fc->gates);
    strbuf_release(&fc->blame);
}

/* Why r, a failing gate on a final tree (restored: the head with the
 * gate inputs as they were at the start), blocks the goal, into
 * fc->blame. */
static void final_blame(struct final_check *fc, const struct gate_result *r,
                        const struct case_diff *diff, int introduced, int restored)
{
    strbuf *blame = &fc->blame;

    strbuf_addf_cut(
        blame, "gate %s fails on the final branch head %.12s%s (exit %d)%s", r->name, fc->head,
        restored ? " with the gate inputs as they were when the goal started" : "", r->exit_code,
        introduced ? ", and it did not fail like this when the goal started"
                   : ": the goal set out to fix it");
    if (diff->n_introduced || diff->n_new_failing) {
        strbuf_adds_cut(blame, "; failing now: ");
        verify_list_add(blame, diff->introduced, diff->n_introduced, 50);
        if (diff->n_introduced && diff->n_new_failing)
            strbuf_adds_cut(blame, ", ");
        verify_list_add(blame, diff->new_failing, diff->n_new_failing, 50);
    } else if (diff->n_pre_existing) {
        strbuf_adds_cut(blame, "; still failing: ");
        verify_list_add(blame, diff->pre_existing, diff->n_pre_existing, 50);
    }
    strbuf_adds_cut(blame, "\n");
}

/* A pass of gs that was the first run on the very tree of rev in this
 * goal (an item's run: the last item's tree is the head's; or an earlier
 * final check on the same head), with the same gate and sandbox: not run
 * again, and cited in the final check with that run.  *reused = 1 when
 * so. */
static int final_reused(struct final_check *fc, const struct gate_spec *gs, const char *rev,
                        int restored, int *reused)
{
    struct job_ctx *j = fc->j;
    struct gate_result r = {0};
    char tree[VCS_OID_HEX], from[ID_SIZE];
    /* the final check builds from nothing: only a cold pass stands for it */
    struct verify_run_key k = {tree, fc->ws.root, VERIFY_BY_GOALD, NULL};
    cJSON *gj;
    int found = 0;

    *reused = 0;
    if (vcs_rev_tree(tree, j->repo, rev) != 0 ||
        verify_tree_reused(j, gs, &k, &r, from, &found) != 0) {
        err_clear(); /* run it, then */
        return 0;
    }
    if (!found)
        return 0;
    gj = cJSON_CreateObject();
    cJSON_AddStringToObject(gj, "gate", gs->name);
    if (restored)
        cJSON_AddBoolToObject(gj, "restored_inputs", 1);
    cJSON_AddBoolToObject(gj, "passed", 1);
    cJSON_AddNumberToObject(gj, "exit_code", r.exit_code);
    cJSON_AddStringToObject(gj, "output_hash", r.output_hash);
    cJSON_AddStringToObject(gj, "tree_id", tree);
    cJSON_AddStringToObject(gj, "reused_from_run", from);
    cJSON_AddItemToArray(fc->gates, gj);
    gate_result_release(&r);
    *reused = 1;
    return 0;
}

/* One must-pass gate on a final tree: the branch head, or (restored) the
 * head with the gate inputs the goal changed as they were at its start.
 * Adds to fc's gates, failures and blame; fc->blocked when the gate fails
 * in a way the goal is to blame for.  0, or the job's failure. */
static int final_judge(struct final_check *fc, const struct gate_spec *gs, const char *tree,
                       int restored)
{
    struct job_ctx *j = fc->j;
    const struct goal *g = j->goal;
    struct gate_result r = {0};
    struct test_cases bc = {0};
    struct case_diff diff = {0};
    int base_passed = 0, base_known = 0, targeted = 0, introduced, reused = 0, rc = 0;
    cJSON *gj, *ids = NULL;

    if ((rc = final_reused(fc, gs, tree, restored, &reused)) != 0 || reused)
        return rc;
    if ((rc = verify_run_once(j, &fc->ws, &fc->gc, gs, tree, 0, VERIFY_BY_GOALD, &r)) != 0) {
        gate_result_release(&r);
        return job_fail(j, "sandbox", "final check: %s", err_last());
    }
    if (!r.passed) {
        struct gate_result again = {0};
        if (verify_run_on_tree(j, &fc->ws, &fc->gc, gs, tree, &again) == 0 && again.passed)
            /* truncation: ok, a constant that fits */
            snprintf(r.classification, sizeof(r.classification), "flaky");
        gate_result_release(&again);
        err_clear();
    }
    gj = cJSON_CreateObject();
    cJSON_AddStringToObject(gj, "gate", r.name);
    if (restored)
        cJSON_AddBoolToObject(gj, "restored_inputs", 1);
    cJSON_AddBoolToObject(gj, "passed", r.passed);
    cJSON_AddNumberToObject(gj, "exit_code", r.exit_code);
    cJSON_AddStringToObject(gj, "output_hash", r.output_hash);
    cJSON_AddItemToArray(fc->gates, gj);
    /* on the product-only head, the old versions of the tests the items
     * changed to pin the new behaviour (accepted) are expected to fail */
    if (restored && !r.passed && verify_failures_accepted(fc->accepted, &r.cases))
        cJSON_AddBoolToObject(gj, "pinned_only", 1);
    if (r.passed || !strcmp(r.classification, "flaky") ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gj, "pinned_only"))) {
        if ((rc = gates_store(&fc->gc, &r, tree, NULL)) != 0)
            rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    if (fc->start[0] && verify_baseline_get(j, &fc->ws, gs, fc->start, &base_passed, &bc) == 0)
        base_known = 1;
    err_clear();
    gates_compare(&diff, &bc, &r.cases);
    introduced = !base_known || base_passed || diff.n_introduced || diff.n_new_failing ||
                 verify_format_lost(&bc, &r.cases);
    /* truncation: ok, a constant that fits */
    snprintf(r.classification, sizeof(r.classification), "%s",
             introduced ? "introduced" : "pre-existing");
    if ((rc = gates_store(&fc->gc, &r, tree, NULL)) != 0) {
        rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    ids = cJSON_CreateArray();
    for (size_t k = 0; k < diff.n_pre_existing; k++) {
        cJSON_AddItemToArray(ids, cJSON_CreateString(diff.pre_existing[k]));
        if (verify_case_targeted(g, fc->crit, diff.pre_existing[k]))
            targeted = 1;
    }
    if (verify_gate_targeted(g, fc->crit, &fc->plan, gs))
        targeted = 1;
    cJSON_AddStringToObject(gj, "classification", r.classification);
    cJSON_AddStringToObject(gj, "granularity", diff.granularity);
    if (introduced || targeted) {
        fc->blocked = 1;
        final_blame(fc, &r, &diff, introduced, restored);
    } else if (!restored) {
        /* a failure the goal did not set out to fix: completed as partial
         * (on the restored tree it was counted on the head already) */
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "gate", r.name);
        cJSON_AddStringToObject(f, "granularity", diff.granularity);
        cJSON_AddItemToObject(f, "tests", ids);
        ids = NULL;
        cJSON_AddItemToArray(fc->failures, f);
    }
out:
    cJSON_Delete(ids);
    case_diff_release(&diff);
    test_cases_release(&bc);
    gate_result_release(&r);
    return rc;
}

/* The head with the gate inputs the goal changed since its start as they
 * were then (added build and configuration files dropped): restored, or ""
 * when the goal changed none. */
static int final_restored(struct job_ctx *j, const struct gate_plan *plan, const char *start,
                          const char *head, char restored[VCS_OID_HEX])
{
    struct vcs_tree_change *ch = NULL;
    size_t nch = 0, n = 0;
    const char **paths = NULL;
    int rc;

    restored[0] = '\0';
    if ((rc = vcs_tree_changes(&ch, &nch, j->repo, start, head)) != 0)
        return rc;
    paths = xcalloc(nch + 1, sizeof(*paths));
    for (size_t i = 0; i < nch; i++)
        if (verify_path_role(ch[i].path, ch[i].status == 'A', plan, NULL) != ROLE_PRODUCT)
            paths[n++] = ch[i].path;
    if (n)
        rc = vcs_tree_restore(restored, j->repo, head, start, paths, n);
    free(paths);
    vcs_tree_changes_free(ch, nch);
    return rc;
}

/* The gates run bound at the goal's worktree path, with the same git
 * folders as an item's (from goald's records): fail closed without it.
 * Opens it into fc->ws and finds the branch head, the goal's start and
 * the restored head.  0, or ERR_FAIL after job_fail(). */
static int final_open(struct final_check *fc)
{
    struct job_ctx *j = fc->j;

    if (!j->worktree || workspace_goal_open(&fc->ws.wt, j) != 0)
        return job_fail(j, "vcs", "final check: the goal's worktree %s: %s",
                        j->worktree ? j->worktree : "(none)",
                        j->worktree ? err_last() : "never made");
    if (path_fmt(fc->ws.root, sizeof(fc->ws.root), "%s", vcs_worktree_path(fc->ws.wt)) != 0)
        return job_fail(j, "vcs", "final check: the goal's worktree: %s", err_last());
    fc->ws.git_common = fc->gc.git_common = vcs_worktree_git_common(fc->ws.wt);
    fc->ws.git_dir = fc->gc.git_dir = vcs_worktree_git_dir(fc->ws.wt);
    if (vcs_rev_commit(fc->head, j->repo, j->goal->branch) != 0)
        return job_fail(j, "vcs", "final check: %s", err_last());
    goal_start(j, fc->start, sizeof(fc->start));
    if (fc->start[0] && strcmp(fc->start, fc->head) != 0 &&
        final_restored(j, &fc->plan, fc->start, fc->head, fc->restored) != 0)
        return job_fail(j, "vcs", "final check: restoring the gate inputs: %s", err_last());
    return 0;
}

/* The "final_check" decision (fc's gates and failures move into it).  0,
 * or ERR_FAIL after job_fail(): internal when it could not be recorded,
 * gate when the goal is blocked. */
static int final_record(struct final_check *fc, int partial)
{
    cJSON *d = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(d, "head", fc->head);
    if (fc->start[0])
        cJSON_AddStringToObject(d, "baseline", fc->start);
    if (fc->restored[0])
        cJSON_AddStringToObject(d, "restored_tree_id", fc->restored);
    cJSON_AddBoolToObject(d, "passed", !fc->blocked && !partial);
    cJSON_AddBoolToObject(d, "partial", partial);
    cJSON_AddItemToObject(d, "partial_failures", fc->failures);
    fc->failures = NULL;
    cJSON_AddItemToObject(d, "gates", fc->gates);
    fc->gates = NULL;
    if ((rc = verify_decision(fc->j, "final_check", NULL, NULL, fc->blocked ? "blocked" : "ok",
                              d)) != 0)
        rc = job_fail(fc->j, "internal", "final check: %s", err_last());
    else if (fc->blocked)
        rc = job_fail(fc->j, "gate", "the goal's must-pass gates fail on its final tree: %s",
                      strbuf_cstr(&fc->blame));
    cJSON_Delete(d);
    return rc;
}

int verify_goal_final(struct job_ctx *j, int *partial)
{
    const struct goal *g = j->goal;
    struct final_check fc;
    int rc = 0;

    *partial = 0;
    memset(&fc, 0, sizeof(fc));
    fc.j = j;
    fc.gc = (struct gates_ctx){j->st, g->id, NULL, j->claim.run_id, NULL, NULL, 1};
    fc.failures = cJSON_CreateArray();
    fc.gates = cJSON_CreateArray();
    strbuf_init(&fc.blame, 1 << 20); /* the reason of a failure: cut at its cap */
    if (!g->repo || !g->branch)
        goto out; /* no repository: the items' own verification stands */
    if ((rc = verify_plan(j, &fc.plan)) != 0) {
        rc = job_fail(j, "config", "%s", err_last());
        goto out;
    }
    if (fc.plan.n == 0)
        goto out; /* no gate to run again */
    if ((rc = final_open(&fc)) != 0)
        goto out;
    fc.crit = j->criteria;
    if ((rc = verify_goal_accepted(j->st, g->id, &fc.accepted)) != 0) {
        rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    for (size_t i = 0; i < fc.plan.n; i++) {
        if (!fc.plan.gates[i].must_pass)
            continue;
        if ((rc = final_judge(&fc, &fc.plan.gates[i], fc.head, 0)) != 0)
            goto out;
    }
    /* the goal's start -> head, as an item's baseline -> tree: a test the
     * goal rewrote, or a conftest.py it added, does not pass the goal */
    for (size_t i = 0; fc.restored[0] && i < fc.plan.n; i++) {
        if (!fc.plan.gates[i].must_pass)
            continue;
        if ((rc = final_judge(&fc, &fc.plan.gates[i], fc.restored, 1)) != 0)
            goto out;
    }
    *partial = !fc.blocked && cJSON_GetArraySize(fc.failures) > 0;
    rc = final_record(&fc, *partial);
out:
    final_check_release(&fc);
    return rc;
}
