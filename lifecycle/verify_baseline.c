/*
 * verify_baseline.c - stage 5, verification: the baseline a gate's run is
 * compared with, and its cache.
 *
 * Top to bottom: test cases to and from the JSON kept in gate_baselines;
 * a cached baseline for a gate on a tree; a baseline run on the commit
 * before the item (a failing one runs once more, and a case that passed in
 * either run passed: a flaky baseline must not excuse a failure); the
 * cache write (not for a timed-out run) and the gate.baseline event;
 * verify_baseline_get, which answers from the cache or runs and records;
 * and the item's baseline commit (verify_item_baseline).
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "store/gate_result.h"
#include "util/err.h"
#include "util/path.h"
#include "util/xalloc.h"
#include "vcs/commit.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

static const char *status_name(enum test_status s)
{
    return s == TEST_PASS ? "pass" : s == TEST_FAIL ? "fail" : "skip";
}

void verify_cases_from_json(struct test_cases *c, const char *format, const char *json)
{
    cJSON *a = cJSON_Parse(json ? json : "[]");
    const cJSON *it;
    size_t n = (size_t)cJSON_GetArraySize(a);

    memset(c, 0, sizeof(*c));
    c->format = gates_format_intern(format);
    c->v = xcalloc(n + 1, sizeof(*c->v));
    cJSON_ArrayForEach(it, a)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetArrayItem(it, 0));
        const char *st = cJSON_GetStringValue(cJSON_GetArrayItem(it, 1));
        const char *file = cJSON_GetStringValue(cJSON_GetArrayItem(it, 2));
        if (!id || !st)
            continue;
        c->v[c->n].id = xstrdup(id);
        c->v[c->n].file = xstrdup(file);
        c->v[c->n].status = !strcmp(st, "pass") ? TEST_PASS : !strcmp(st, "fail") ? TEST_FAIL
                                                                                  : TEST_SKIP;
        c->n++;
    }
    cJSON_Delete(a);
}

char *verify_cases_to_json(const struct test_cases *c)
{
    cJSON *a = cJSON_CreateArray();
    char *t;

    for (size_t i = 0; i < c->n; i++) {
        cJSON *e = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(c->v[i].id));
        cJSON_AddItemToArray(e, cJSON_CreateString(status_name(c->v[i].status)));
        cJSON_AddItemToArray(e, c->v[i].file ? cJSON_CreateString(c->v[i].file) : cJSON_CreateNull());
        cJSON_AddItemToArray(a, e);
    }
    t = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return xcheck(t);
}

/* Cases failing in c that passed in other count as passed. */
static void cases_merge_passed(struct test_cases *c, const struct test_cases *other)
{
    for (size_t i = 0; c->format && other->format && !strcmp(c->format, other->format) &&
                       i < c->n;
         i++) {
        if (c->v[i].status != TEST_FAIL)
            continue;
        for (size_t k = 0; k < other->n; k++)
            if (other->v[k].status == TEST_PASS && !strcmp(other->v[k].id, c->v[i].id)) {
                c->v[i].status = TEST_PASS;
                break;
            }
    }
}

/* The cached result of g on the tree base_tree, when there is one
 * (*found). */
static int baseline_cached(struct job_ctx *j, const struct gate_spec *g, const char *base_tree,
                           int *found, int *passed, struct test_cases *cases)
{
    char *format = NULL, *json = NULL;
    const struct store_gate_baseline key = {
        .goal_id = j->goal->id, .gate = g->name, .command = g->command, .baseline = base_tree};
    int rc = store_gate_baseline_get(j->st, &key, found, passed, &format, &json);

    if (rc == 0 && *found)
        verify_cases_from_json(cases, format, json);
    free(format);
    free(json);
    return rc;
}

/* g run on the commit base into r; a failing run once more before it is
 * cached: a case that passed in either run passed (a flaky baseline must
 * not excuse a failure).  The caller releases r, also on error. */
static int baseline_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                        const char *base, struct gate_result *r)
{
    /* no store: the baseline run is recorded as gate.baseline, not as one
     * of the item's gate.completed */
    struct gates_ctx gc = {NULL,           j->goal->id,    j->item ? j->item->id : NULL,
                           j->claim.run_id, ws->git_common, ws->git_dir, 0};
    struct gate_result again = {0};
    int rc;

    /* a first run goald made that passed on this tree (an earlier item's
     * verification, the start run that made a warm folder) is the
     * baseline; the model's own runs never are; a failure always runs
     * again */
    if ((rc = verify_run_once(j, ws, &gc, g, base, 1, VERIFY_BY_GOALD, r)) != 0 || r->passed)
        return rc;
    if ((rc = verify_run_on_tree(j, ws, &gc, g, base, &again)) != 0) {
        gate_result_release(&again);
        return rc;
    }
    r->timed_out |= again.timed_out;
    if (again.passed) {
        r->passed = 1;
        r->exit_code = again.exit_code;
        test_cases_release(&r->cases);
        r->cases = again.cases;
        memset(&again.cases, 0, sizeof(again.cases));
    } else {
        cases_merge_passed(&r->cases, &again.cases);
    }
    gate_result_release(&again);
    return 0;
}

/* r, g's result on the tree tree, cached in gate_baselines: a timed-out
 * run says nothing lasting and is not. */
int verify_baseline_cache(struct job_ctx *j, const struct gate_spec *g, const char *tree,
                          const struct gate_result *r)
{
    char *cj;
    int rc = 0;

    if (r->timed_out)
        return 0;
    cj = verify_cases_to_json(&r->cases);
    {
        struct store_gate_baseline b = {j->goal->id, g->name,       g->command,
                                        tree,        r->passed,     r->exit_code,
                                        r->cases.format, cj,        r->output_hash};
        rc = store_gate_baseline_put(j->st, &b);
    }
    cJSON_free(cj);
    return rc;
}

/* The baseline run's gate.baseline event, and its row in gate_baselines. */
static int baseline_record(struct job_ctx *j, const struct gate_spec *g, const char *base,
                           const char *base_tree, const struct gate_result *r)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "gate", g->name);
    cJSON_AddStringToObject(p, "baseline", base);
    cJSON_AddBoolToObject(p, "passed", r->passed);
    cJSON_AddNumberToObject(p, "exit_code", r->exit_code);
    cJSON_AddNumberToObject(p, "cases", (double)r->cases.n);
    if (r->note[0])
        cJSON_AddStringToObject(p, "note", r->note);
    job_event_or_warn(j, "gate.baseline", p);
    cJSON_Delete(p);
    return verify_baseline_cache(j, g, base_tree, r);
}

/* The result of g on the commit base, cached per goal, gate command and
 * tree in gate_baselines: a retry does not run it again, nor the next
 * item, whose baseline is the commit of an item whose gates passed on
 * that very tree (verify_gate_passed). */
int verify_baseline_get(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                        const char *base, int *passed, struct test_cases *cases)
{
    struct gate_result r = {0};
    char base_tree[VCS_OID_HEX];
    int rc, found = 0;

    memset(cases, 0, sizeof(*cases));
    if ((rc = vcs_rev_tree(base_tree, j->repo, base)) != 0 ||
        (rc = baseline_cached(j, g, base_tree, &found, passed, cases)) != 0 || found)
        return rc;
    if ((rc = baseline_run(j, ws, g, base, &r)) != 0) {
        gate_result_release(&r);
        return rc;
    }
    *passed = r.passed;
    rc = baseline_record(j, g, base, base_tree, &r);
    *cases = r.cases;
    memset(&r.cases, 0, sizeof(r.cases));
    gate_result_release(&r);
    return rc;
}

/* The item's baseline: the goal branch head before the item, i.e. the
 * head, or the parent of the item's own commit when a run that died after
 * committing left it on the branch.  "" without git. */
void verify_item_baseline(struct job_ctx *j, struct workspace *ws, char base[VCS_OID_HEX])
{
    char mine[VCS_OID_HEX], rev[VCS_OID_HEX + 2];

    base[0] = '\0';
    if (!ws->wt || !j->repo)
        return;
    if (vcs_commit_find_by_trailer(mine, ws->wt, j->goal->base_branch, VCS_TRAILER_ITEM,
                                   j->item->id) == 0) {
        if (path_fmt(rev, sizeof(rev), "%s^", mine) != 0 ||
            vcs_rev_commit(base, j->repo, rev) != 0)
            base[0] = '\0';
    } else if (vcs_worktree_head(base, ws->wt) != 0) {
        base[0] = '\0';
    }
    err_clear();
}
