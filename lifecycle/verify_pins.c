/*
 * verify_pins.c - stage 5, verification: the item's tests against the
 * baseline's product (new tests prove themselves, fail before and pass
 * after; a changed test is judged by what it pins).
 *
 * Top to bottom: when the item changed tests (test, test support or test
 * config: a runner shadow never), the tree of its baseline with those
 * changes laid over it; every must-pass gate compared per test case runs
 * there (its gate.completed event and output hash are the evidence; it is
 * no gate result of the item: it fails by design); then, per gate, from its
 * cases at the baseline, on the item's tree and there:
 *   - fail_to_pass: a case the baseline did not run that passes on the
 *     item's tree and fails (or does not run) with the baseline's product:
 *     it proves the change;
 *   - not_exercising: a new case that passes with the baseline's product
 *     as well: it does not exercise the change;
 *   - pinned: a case that passed at the baseline, in a test file the item
 *     modified, that fails (or does not run) with the baseline's product
 *     and passes on the item's tree: its new version pins the new
 *     behaviour the goal asks for, so its old version failing on the
 *     product-only tree is expected, not a weakened test.  A case that
 *     failed at the baseline is never pinned: a target of the goal changed
 *     is judged by its original version.
 * The product-only judgement (verify_weakened.c, verify_blame.c) then
 * forgives a gate whose only failures there are pinned cases, or cases a
 * human accepted through an escalation (accept_test_changes: the item's
 * waiver, loaded by verify_load_waiver).
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
#include "store/item.h"
#include "store/status.h"
#include "util/err.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vcs/tree.h"

static void list_push(char ***v, size_t *n, const char *id)
{
    *v = xrealloc(*v, (*n + 1) * sizeof(**v));
    (*v)[(*n)++] = xstrdup(id);
}

static void list_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void verify_pins_release(struct gate_pins *p)
{
    if (!p)
        return;
    list_free(p->fail_to_pass, p->n_fail_to_pass);
    list_free(p->not_exercising, p->n_not_exercising);
    list_free(p->pinned, p->n_pinned);
    memset(p, 0, sizeof(*p));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A run's cases sorted by id, for lookups in O(log n): a suite may name
 * 200,000 cases, and a scan per case would be quadratic. */
struct sorted {
    const struct test_case **v;
    size_t n;
};

static int by_id(const void *a, const void *b)
{
    return strcmp((*(const struct test_case *const *)a)->id,
                  (*(const struct test_case *const *)b)->id);
}

static void sorted_make(struct sorted *s, const struct test_cases *c)
{
    s->n = c->n;
    s->v = xcalloc(c->n + 1, sizeof(*s->v));
    for (size_t i = 0; i < c->n; i++)
        s->v[i] = &c->v[i];
    qsort(s->v, s->n, sizeof(*s->v), by_id);
}

/* The status of id in s, or -1 when the run did not name it. */
static int status_of(const struct sorted *s, const char *id)
{
    struct test_case key = {.id = (char *)id};
    const struct test_case *kp = &key, *const *hit;

    hit = bsearch(&kp, s->v, s->n, sizeof(*s->v), by_id);
    return hit ? (int)(*hit)->status : -1;
}

/* file is one the item modified (not added) among its test changes. */
static int modified_test(const struct vcs_tree_change *ch, size_t nch, const char *file)
{
    for (size_t i = 0; file && i < nch; i++)
        if (ch[i].status == 'M' && !strcmp(ch[i].path, file))
            return 1;
    return 0;
}

/* Gate i's lists from its cases at the baseline (base), on the item's
 * tree (item) and with the baseline's product (old). */
static void classify(struct gate_pins *p, const struct test_cases *base_cases,
                     const struct test_cases *item, const struct test_cases *old_cases,
                     const struct vcs_tree_change *ch, size_t nch)
{
    struct sorted base, old;

    sorted_make(&base, base_cases);
    sorted_make(&old, old_cases);
    for (size_t k = 0; k < item->n; k++) {
        const struct test_case *c = &item->v[k];
        int was = status_of(&base, c->id), before = status_of(&old, c->id);
        if (c->status != TEST_PASS)
            continue;
        if (was < 0 || was == TEST_SKIP) {
            if (before == TEST_PASS)
                list_push(&p->not_exercising, &p->n_not_exercising, c->id);
            else if (before != TEST_SKIP)
                list_push(&p->fail_to_pass, &p->n_fail_to_pass, c->id);
        } else if (was == TEST_PASS && before != TEST_PASS && before != TEST_SKIP &&
                   modified_test(ch, nch, c->file)) {
            list_push(&p->pinned, &p->n_pinned, c->id);
        }
    }
    free(base.v);
    free(old.v);
    /* sorted: verify_pinned_only looks each failure up */
    if (p->n_pinned)
        qsort(p->pinned, p->n_pinned, sizeof(*p->pinned), cmp_str);
}

/* The baseline with the item's test changes laid over it into out. */
static int old_product_tree(struct verify_state *vs, struct job_ctx *j,
                            const struct vcs_tree_change *ch, size_t nch, char out[VCS_OID_HEX])
{
    const char **paths = xcalloc(nch + 1, sizeof(*paths));
    size_t n = 0;
    int rc = 0;

    for (size_t i = 0; i < nch; i++) {
        enum path_role r = verify_path_role(ch[i].path, ch[i].status == 'A', &vs->plan, vs->ev);
        if (r == ROLE_TEST || r == ROLE_TEST_SUPPORT || r == ROLE_TEST_CONFIG)
            paths[n++] = ch[i].path;
    }
    out[0] = '\0';
    if (n)
        rc = vcs_tree_restore(out, j->repo, vs->base, vs->tree, paths, n);
    free(paths);
    return rc;
}

/* Gate i worth running with the baseline's product: a must-pass gate whose
 * run on the item's tree was compared per test case. */
static int wanted(const struct verify_state *vs, size_t i)
{
    const struct gate_eval *e = &vs->ev[i];

    return e->r.must_pass && e->diff.granularity && !strcmp(e->diff.granularity, "test");
}

int verify_new_tests(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                     const struct vcs_tree_change *ch, size_t nch)
{
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item->id,
                           j->claim.run_id, ws->git_common, ws->git_dir, 0};
    int rc, any = 0;

    for (size_t i = 0; i < vs->plan.n; i++)
        any |= wanted(vs, i);
    if (!any || !ws->wt || !j->repo || !vs->base[0])
        return 0;
    if ((rc = old_product_tree(vs, j, ch, nch, vs->old_product)) != 0)
        return job_fail(j, "vcs", "the item's tests over the baseline: %s", err_last());
    if (!vs->old_product[0])
        return 0;
    vs->pins = xcalloc(vs->plan.n + 1, sizeof(*vs->pins));
    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_spec *g = &vs->plan.gates[i];
        struct gate_result r;
        struct test_cases base = {0};
        int base_passed = 0;
        if (!wanted(vs, i))
            continue;
        if ((rc = verify_run_on_tree(j, ws, &gc, g, vs->old_product, &r)) != 0)
            return job_fail(j, "sandbox", "%s", err_last());
        /* truncation: ok, a hash, HASH_HEX_SIZE both */
        snprintf(vs->pins[i].output_hash, sizeof(vs->pins[i].output_hash), "%s", r.output_hash);
        if ((rc = verify_baseline_get(j, ws, g, vs->base, &base_passed, &base)) != 0) {
            test_cases_release(&base);
            gate_result_release(&r);
            return job_fail(j, "sandbox", "%s", err_last());
        }
        vs->pins[i].ran = 1;
        classify(&vs->pins[i], &base, &vs->ev[i].r.cases, &r.cases, ch, nch);
        test_cases_release(&base);
        gate_result_release(&r);
    }
    return 0;
}

/* id is among the cases a human accepted for the item (vs->waived). */
static int waived(const struct verify_state *vs, const char *id)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, vs->waived) if (cJSON_IsString(it) && !strcmp(it->valuestring, id))
        return 1;
    return 0;
}

int verify_pinned_only(const struct verify_state *vs, size_t i, const struct test_cases *cases)
{
    const struct gate_pins *p = vs->pins ? &vs->pins[i] : NULL;
    int failing = 0;

    if ((!p || !p->n_pinned) && !cJSON_GetArraySize(vs->waived))
        return 0;
    for (size_t k = 0; k < cases->n; k++) {
        int pinned = 0;
        if (cases->v[k].status != TEST_FAIL)
            continue;
        failing++;
        if (p && p->n_pinned) {
            const char *id = cases->v[k].id;
            pinned = bsearch(&id, p->pinned, p->n_pinned, sizeof(*p->pinned), cmp_str) != NULL;
        }
        if (!pinned && !waived(vs, cases->v[k].id))
            return 0;
    }
    return failing > 0;
}

int verify_load_waiver(struct verify_state *vs, struct job_ctx *j)
{
    cJSON *d = NULL;
    int rc = store_decision_latest_waiver(j->st, j->item->id, &d);

    if (rc != 0)
        return job_fail(j, "internal", "verification: %s", err_last());
    vs->waived = d ? cJSON_DetachItemFromObjectCaseSensitive(d, "cases") : NULL;
    cJSON_Delete(d);
    if (!vs->waived)
        vs->waived = cJSON_CreateArray();
    return 0;
}

/* The accepted changes of a done item's latest verification (its
 * accepted_test_changes) appended to the array ctx. */
static int accepted_of_item(const struct work_item *wi, void *ctx)
{
    struct accepted_ctx {
        store *st;
        cJSON *ids;
    } *a = ctx;
    cJSON *v = NULL;
    const cJSON *id;

    if (item_status_of(wi->status) != ITEM_DONE)
        return 0;
    if (store_decision_latest_verification(a->st, wi->id, &v) != 0)
        return -1;
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(v, "accepted_test_changes"))
        if (cJSON_IsString(id))
            cJSON_AddItemToArray(a->ids, cJSON_CreateString(id->valuestring));
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(v, "accepted_by_human"))
        if (cJSON_IsString(id))
            cJSON_AddItemToArray(a->ids, cJSON_CreateString(id->valuestring));
    cJSON_Delete(v);
    return 0;
}

int verify_goal_accepted(store *st, const char *goal_id, cJSON **out)
{
    struct {
        store *st;
        cJSON *ids;
    } a = {st, cJSON_CreateArray()};
    int rc = store_item_each(st, goal_id, accepted_of_item, &a);

    if (rc) {
        cJSON_Delete(a.ids);
        return rc;
    }
    *out = a.ids;
    return 0;
}

int verify_failures_accepted(const cJSON *accepted, const struct test_cases *cases)
{
    int failing = 0;

    for (size_t k = 0; k < cases->n; k++) {
        const cJSON *id;
        int found = 0;
        if (cases->v[k].status != TEST_FAIL)
            continue;
        failing++;
        cJSON_ArrayForEach(id, accepted) found |= cJSON_IsString(id) &&
                                                  !strcmp(id->valuestring, cases->v[k].id);
        if (!found)
            return 0;
    }
    return failing > 0;
}
