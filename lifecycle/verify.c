/*
 * verify.c - stage 5, verification: the orchestration of stages 5 and 6
 * for one work item (verify_item).
 *
 * Top to bottom for an item: it goes in_progress -> verify with the
 * model's summary; its tree is stored and compared with its baseline (the
 * goal branch head before it, verify_baseline.c), and a change to a
 * protected path fails it.  Each gate runs on a throw-away copy of the
 * tree (verify_run.c) and is judged against the baseline, per test case
 * where both runs were parsed (verify_blame.c): the item is blamed for
 * what it introduced, and for a pre-existing failure only when the goal is
 * about it.  The gate inputs it changed are put back as they were at the
 * baseline and the gates judged again, and a test that passed at the
 * baseline and no longer runs is "tests removed" (verify_weakened.c).
 * The verification decision records all of it (verify_record.c).  The
 * state of the whole judgement (struct verify_state) is released last.
 * The goal's own final check on its branch head is verify_final.c.
 *
 * Order matters: no model opinion is asked (review.c) before every
 * must-pass gate has passed (or failed only in ways not blamed on the
 * item), and the review can only add findings, never change a gate's
 * verdict; the evaluation (evaluate.c) then decides and commits.
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/evaluate.h"
#include "lifecycle/job.h"
#include "lifecycle/land_order.h"
#include "lifecycle/review.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "sandbox/path.h"
#include "store/item.h"
#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/tree.h"

/* in_progress -> verify, with the model's summary, in one transaction. */
static int item_to_verify(struct job_ctx *j, const char *summary)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(p, "summary", summary ? summary : "");
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_item_set_summary(j->st, j->item->id, summary)) == 0)
        rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "verify", "in_progress", p);
    rc = store_tx_end(j->st, rc);
out:
    cJSON_Delete(p);
    return rc;
}

/* The goal JSON's protected_paths cover path (the same rule as the
 * write and edit tools: path_glob_covers). */
static int path_protected(const cJSON *globs, const char *path)
{
    const cJSON *gl;

    cJSON_ArrayForEach(gl, globs)
        if (cJSON_GetStringValue(gl) && path_glob_covers(cJSON_GetStringValue(gl), path))
            return 1;
    return 0;
}

/* The item's tree (stored), its baseline, the goal's criteria and what the
 * item changed against the baseline (*ch, *nch: vcs_tree_changes_free);
 * a change to a protected path fails it.  0, or ERR_FAIL after
 * job_fail(). */
static int item_tree(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                     struct vcs_tree_change **ch, size_t *nch)
{
    const cJSON *globs;
    cJSON *spec;
    int rc;

    if ((rc = workspace_store(ws, vs->tree, sizeof(vs->tree))) != 0)
        /* a change goald will not snapshot (a file over tools.max_file_mb) */
        return job_fail(j, rc == ERR_TOOBIG || rc == ERR_POLICY ? "policy" : "vcs", "%s: %s",
                        j->item->key, err_last());
    verify_item_baseline(j, ws, vs->base);
    vs->crit = j->criteria;
    if (vs->base[0] && vs->tree[0] && vcs_tree_changes(ch, nch, j->repo, vs->base, vs->tree) != 0)
        return job_fail(j, "vcs", "changes against the baseline %.12s: %s", vs->base,
                        err_last());
    spec = j->goal->spec ? cJSON_Parse(j->goal->spec) : NULL;
    globs = cJSON_GetObjectItemCaseSensitive(spec, "protected_paths");
    for (size_t i = 0; i < *nch; i++)
        if (path_protected(globs, (*ch)[i].path)) {
            rc = job_fail(j, "policy",
                          "commit refused: %s is protected (the goal's protected_paths)",
                          (*ch)[i].path);
            break;
        }
    cJSON_Delete(spec);
    return rc;
}

/* The first pass's verdicts: blamed gates' reasons into blame, and the
 * gates line of the commit message.  Returns how many were blamed. */
static int first_pass_tally(struct verify_state *vs, strbuf *blame)
{
    int blamed = 0;

    vs->n_det = (int)vs->plan.n;
    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_eval *e = &vs->ev[i];
        size_t o = strlen(vs->gates_line);
        if (e->blame) {
            blamed++;
            verify_why_tail(blame, e);
        }
        /* truncation: ok, a line shown */
        snprintf(vs->gates_line + o, sizeof(vs->gates_line) - o, "%s%s=%s", o ? " " : "",
                 e->r.name,
                 e->r.passed                 ? "pass"
                 : e->r.classification[0] ? e->r.classification
                                           : "fail");
    }
    return blamed;
}

/* Stage 5 for the item: its gates, judged on its tree and, when it
 * changed gate inputs, again with them restored; the verification
 * decision.  0 when nothing is blamed on the item; else ERR_FAIL after
 * job_fail() (class gate with the failing output, or why it could not be
 * judged). */
static int verify_gates(struct verify_state *vs, struct job_ctx *j, struct workspace *ws)
{
    struct vcs_tree_change *ch = NULL;
    const char **restore = NULL;
    size_t nch = 0, nrestore;
    strbuf blame;
    int rc, blamed, weakened = 0;

    strbuf_init(&blame, 1 << 20); /* the reason of a failure: cut at its cap */
    vs->inputs = cJSON_CreateArray();
    if ((rc = item_tree(vs, j, ws, &ch, &nch)) != 0)
        goto out;
    if ((rc = verify_plan(j, &vs->plan)) != 0) {
        rc = job_fail(j, "config", "%s", err_last());
        goto out;
    }
    /* each gate on a throw-away copy of the item's tree */
    vs->ev = xcalloc(vs->plan.n + 1, sizeof(*vs->ev));
    if ((rc = verify_judge_all(j, ws, vs, vs->tree, NULL, vs->ev)) != 0)
        goto out;
    blamed = first_pass_tally(vs, &blame);
    restore = xcalloc(nch + 1, sizeof(*restore));
    nrestore = verify_inputs_changed(vs, ch, nch, restore);
    /* nothing to restore (the item changed only product): the
     * product-only tree is the item's, judged already; the item's tests
     * on the baseline's product first, so that a changed test that pins
     * the new behaviour is expected to fail there in its old version */
    if (!blamed && vs->plan.n && vs->base[0] && nrestore &&
        ((rc = verify_load_waiver(vs, j)) != 0 || (rc = verify_new_tests(vs, j, ws, ch, nch)) != 0 ||
         (rc = verify_restored_pass(vs, j, ws, restore, nrestore, &blame, &weakened)) != 0))
        goto out;
    if (!blamed && !weakened)
        verify_tests_removed(vs, j, &blame, &weakened);
    if ((rc = verify_record_verification(j, vs, weakened > 0,
                                         blamed ? "gate"
                                         : weakened && j->accept_weakened
                                             ? "tests weakened, accepted by a human"
                                         : weakened ? "tests weakened"
                                                    : "ok")) != 0) {
        rc = job_fail(j, "internal", "verification: %s", err_last());
        goto out;
    }
    if (blamed || (weakened && !j->accept_weakened))
        rc = job_fail(j, "gate", "%s", strbuf_cstr(&blame));
out:
    free(restore);
    vcs_tree_changes_free(ch, nch);
    strbuf_release(&blame);
    return rc;
}

/* An item in a worktree of its own lands under the goal's branch lock:
 * when another item landed since its gates ran, its changes are brought
 * onto the new head and the gates judge that tree again (the review,
 * advisory, is not asked twice). */
static int reverify_on_head(struct verify_state *vs, struct job_ctx *j, struct workspace *ws)
{
    int moved = 0, rc;

    if (!ws->own)
        return 0;
    if ((rc = workspace_catch_up(ws, j, 1, &moved)) != 0 || !moved)
        return rc;
    verify_state_release(vs);
    return verify_gates(vs, j, ws);
}

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    struct verify_state vs;
    int moved = 0, rc;

    memset(&vs, 0, sizeof(vs));
    if ((rc = item_to_verify(j, summary)) != 0) {
        rc = job_fail(j, "internal", "verification: %s", err_last());
        goto out;
    }
    /* items side by side: judged on the goal's head as it is now */
    if ((rc = workspace_catch_up(ws, j, 0, &moved)) != 0 || (rc = verify_gates(&vs, j, ws)) != 0)
        goto out;
    review_item(j, ws, summary, &vs); /* advisory, only after the gates */
    /* those placed before it in the plan that run now land first */
    if ((rc = land_order_wait(j, ws)) != 0 || (rc = reverify_on_head(&vs, j, ws)) != 0)
        goto out;
    rc = evaluate_item(j, ws, summary, &vs); /* evidence, the commit, done */
out:
    verify_state_release(&vs);
    return rc;
}

static void gate_eval_release(struct gate_eval *e)
{
    gate_result_release(&e->r);
    case_diff_release(&e->diff);
    strbuf_release(&e->why);
    cJSON_Delete(e->targeted);
    memset(e, 0, sizeof(*e));
}

void verify_state_release(struct verify_state *vs)
{
    for (size_t i = 0; vs->ev && i < vs->plan.n; i++)
        gate_eval_release(&vs->ev[i]);
    for (size_t i = 0; vs->wev && i < vs->plan.n; i++)
        gate_eval_release(&vs->wev[i]);
    for (size_t i = 0; vs->pins && i < vs->plan.n; i++)
        verify_pins_release(&vs->pins[i]);
    free(vs->ev);
    free(vs->wev);
    free(vs->pins);
    gates_plan_release(&vs->plan);
    cJSON_Delete(vs->inputs);
    cJSON_Delete(vs->roles);
    cJSON_Delete(vs->waived);
    memset(vs, 0, sizeof(*vs));
}
