/*
 * verify_weakened.c - stage 5, verification: the original tests judge the
 * product, and no test vanishes.
 *
 * Top to bottom: the role of each path the item changed (gates/roles.c:
 * test, test support, test config, a runner shadow, or product; a path a
 * parsed test case points at is a test whatever its name); every change
 * that is not product is put back as it was at the baseline (modified and
 * deleted ones come back, added ones go: new test modules, conftest and
 * plugin files, hidden runner configs, a module named like the runner), so
 * the gates run on the item's product changes under the baseline's own
 * tests; a gate the item is blamed for there means "tests weakened" (a
 * test that passed at the baseline fails against the product) or "product
 * not fixed" (a failing test the goal is about still fails without the
 * item's test changes); and "tests removed": a test that passed at the
 * baseline and no longer runs on the item's tree, or on the product-only
 * tree, and a failing test the goal is about that no longer runs.
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "gates/gates.h"
#include "gates/roles.h"
#include "lifecycle/job.h"
#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/tree.h"

/* A parsed test case of cases points at path, or at a folder above it. */
static int cases_name(const struct test_cases *cases, const char *path)
{
    size_t pl = strlen(path);

    for (size_t k = 0; k < cases->n; k++) {
        const char *f = cases->v[k].file;
        size_t fl = f ? strlen(f) : 0;
        if (f && (!strcmp(f, path) || (fl < pl && !strncmp(f, path, fl) && path[fl] == '/')))
            return 1;
    }
    return 0;
}

enum path_role verify_path_role(const char *path, int added, const struct gate_plan *plan,
                                const struct gate_eval *ev)
{
    enum path_role r = gates_path_role(plan, path, added);

    for (size_t g = 0; r == ROLE_PRODUCT && ev && g < plan->n; g++)
        if (cases_name(&ev[g].r.cases, path))
            r = ROLE_TEST;
    return r;
}

/* The item's changes that are not product into vs->inputs (paths) and
 * vs->roles ({path: role}), and all of them into restore (nch + 1
 * entries): they go back to the baseline for the product-only run.
 * Returns how many. */
size_t verify_inputs_changed(struct verify_state *vs, const struct vcs_tree_change *ch, size_t nch,
                             const char **restore)
{
    size_t n = 0;

    if (!vs->roles)
        vs->roles = cJSON_CreateObject();
    vs->only_new_tests = 1;
    for (size_t i = 0; i < nch; i++) {
        enum path_role r = verify_path_role(ch[i].path, ch[i].status == 'A', &vs->plan, vs->ev);
        if (r == ROLE_PRODUCT)
            continue;
        if (r != ROLE_TEST || ch[i].status != 'A')
            vs->only_new_tests = 0;
        cJSON_AddItemToArray(vs->inputs, cJSON_CreateString(ch[i].path));
        cJSON_AddStringToObject(vs->roles, ch[i].path, gates_role_name(r));
        restore[n++] = ch[i].path;
    }
    return n;
}

/* The gates judged again on the item's tree with the restore paths as
 * they were at the baseline (the product-only tree): a gate the item is
 * blamed for there means its tests were weakened, or that its product
 * does not fix what the goal is about (reasons into blame, *weakened
 * counts them).  0, or ERR_FAIL after job_fail(). */
int verify_restored_pass(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                         const char **restore, size_t nrestore, strbuf *blame, int *weakened)
{
    strbuf files;
    cJSON *p;
    int rc;

    strbuf_init(&files, 8192); /* named in the blame: cut at its cap */
    for (size_t i = 0; i < nrestore; i++)
        strbuf_addf_cut(&files, "%s%s", i ? ", " : "", restore[i]);
    if (vcs_tree_restore(vs->restored, j->repo, vs->tree, vs->base, restore, nrestore) != 0) {
        rc = job_fail(j, "vcs", "restoring the gate inputs: %s", err_last());
        goto out;
    }
    vs->wev = xcalloc(vs->plan.n + 1, sizeof(*vs->wev));
    if ((rc = verify_judge_all(j, ws, vs, vs->restored, vs->ev, vs->wev)) != 0)
        goto out;
    for (size_t i = 0; i < vs->plan.n; i++) {
        if (!vs->wev[i].blame)
            continue;
        if (!(*weakened)++)
            strbuf_addf_cut(blame,
                            "tests weakened: %s: with these files as they were at the "
                            "baseline %.12s the gates fail (the original tests judge the "
                            "item's product%s):\n",
                            strbuf_cstr(&files), vs->base,
                            vs->wev[i].diff.n_introduced || vs->wev[i].diff.n_new_failing
                                ? ""
                                : ": the product does not fix what the goal is about");
        verify_why_tail(blame, &vs->wev[i]);
    }
    p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "gate_inputs_changed", cJSON_Duplicate(vs->inputs, 1));
    cJSON_AddItemToObject(p, "roles", cJSON_Duplicate(vs->roles, 1));
    cJSON_AddBoolToObject(p, "tests_weakened", *weakened > 0);
    job_event_or_warn(j, "gate_inputs.checked", p);
    cJSON_Delete(p);
out:
    strbuf_release(&files);
    return rc;
}

/* One gate's vanished tests into blame: the list of ids and what they
 * were. */
static void removed_add(strbuf *blame, int *weakened, const char *gate, char **ids, size_t n,
                        const char *what)
{
    strbuf_addf_cut(blame, "%sgate %s: ", (*weakened)++ ? "; " : "tests removed: ", gate);
    verify_list_add(blame, ids, n, 50);
    strbuf_addf_cut(blame, " (%s)", what);
}

/* The targets of the goal among ids (a failing test the goal names). */
static size_t targets_in(const struct verify_state *vs, const struct job_ctx *j, char **ids,
                         size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += verify_case_targeted(j->goal, vs->crit, ids[i]);
    return k;
}

/* Every one of ids is a case a human accepted the change of (a deleted
 * test the item's escalation named). */
static int all_waived(const struct verify_state *vs, char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const cJSON *it;
        int found = 0;
        cJSON_ArrayForEach(it, vs->waived) found |= cJSON_IsString(it) &&
                                                    !strcmp(it->valuestring, ids[i]);
        if (!found)
            return 0;
    }
    return n > 0;
}

/* Tests that passed at the baseline and are absent on the item's tree
 * (deleted, deselected) or on the product-only tree (deselected by a
 * product build file), and failing tests the goal is about that no longer
 * run: never silently. */
void verify_tests_removed(const struct verify_state *vs, const struct job_ctx *j, strbuf *blame,
                          int *weakened)
{
    int before = *weakened;

    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_eval *e = &vs->ev[i], *w = vs->wev ? &vs->wev[i] : NULL;
        if (!e->r.must_pass)
            continue;
        if (e->diff.n_removed && !all_waived(vs, e->diff.removed, e->diff.n_removed))
            removed_add(blame, weakened, e->r.name, e->diff.removed, e->diff.n_removed,
                        "passed at the baseline, no longer run");
        else if (w && w->diff.n_removed && !all_waived(vs, w->diff.removed, w->diff.n_removed))
            removed_add(blame, weakened, e->r.name, w->diff.removed, w->diff.n_removed,
                        "passed at the baseline, no longer run with the item's product");
        if (targets_in(vs, j, e->diff.removed_failing, e->diff.n_removed_failing))
            removed_add(blame, weakened, e->r.name, e->diff.removed_failing,
                        e->diff.n_removed_failing,
                        "failing at the baseline, a target of the goal, no longer run");
    }
    if (*weakened > before)
        strbuf_addf_cut(blame, " (baseline %.12s)\n", vs->base);
}
