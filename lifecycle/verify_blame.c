/*
 * verify_blame.c - stage 5, verification: what the goal is about, and
 * whether the item is to blame for a gate's failure.
 *
 * Top to bottom: whole-word matching (verify_word_in) and what the goal
 * names (a test case, a gate); whether the item itself, or another item
 * still to run, owns a target; a lost test format; the judgement of one
 * gate (gate_judge): a must-pass failure runs once more (flaky), then it is
 * compared with the baseline per test case (or per gate) and the item is
 * blamed for what it introduced, and for a pre-existing failure only when
 * the goal is about it and nobody else is left to fix it; the judge loop
 * over every gate of the plan, each result stored as evidence and a clean
 * pass cached as the next item's baseline (verify_judge_all); and the
 * reason with the failing output for the next attempt (verify_why_tail).
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gates/gates.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "store/item.h"
#include "util/err.h"
#include "util/utf8.h"

int verify_word_in(const char *hay, const char *needle)
{
    size_t n = needle ? strlen(needle) : 0;

    if (!hay || n == 0)
        return 0;
    for (const char *p = hay; *p; p++) {
        if (strncasecmp(p, needle, n) != 0)
            continue;
        if (p > hay && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        if (isalnum((unsigned char)p[n]) || p[n] == '_')
            continue;
        return 1;
    }
    return 0;
}

/* Does one of the goal's success criteria name `what` (criteria_only), or
 * also its description or title? */
static int goal_names(const struct goal *g, const struct criteria *crit, const char *what,
                      int criteria_only)
{
    for (size_t k = 0; k < crit->n; k++)
        if (verify_word_in(crit->text[k], what))
            return 1;
    return !criteria_only && (verify_word_in(g->description, what) || verify_word_in(g->title, what));
}

/* A test case the goal set out to fix: its id, or its last component
 * (after "::", " > " or "/", at least 4 characters), is named in a
 * criterion, the description or the title. */
int verify_case_targeted(const struct goal *g, const struct criteria *crit, const char *id)
{
    const char *last = id;

    for (const char *p = id; *p; p++) {
        if (p[0] == ':' && p[1] == ':')
            last = p + 2;
        else if (p[0] == ' ' && p[1] == '>' && p[2] == ' ')
            last = p + 3;
    }
    return goal_names(g, crit, id, 0) || (last != id && strlen(last) >= 4 &&
                                          goal_names(g, crit, last, 0));
}

int verify_gate_targeted(const struct goal *g, const struct criteria *crit, const struct gate_plan *plan,
                         const struct gate_spec *gs)
{
    size_t must = 0;

    for (size_t i = 0; i < plan->n; i++)
        must += plan->gates[i].must_pass != 0;
    return (must == 1 && gs->must_pass) || goal_names(g, crit, gs->name, 1);
}

void verify_list_add(strbuf *sb, char **v, size_t n, size_t max)
{
    for (size_t i = 0; i < n && i < max; i++)
        strbuf_addf_cut(sb, "%s%s", i ? ", " : "", v[i]);
    if (n > max)
        strbuf_addf_cut(sb, " and %zu more", n - max);
}

/* Does the item's own title or description name one of targets? */
static int item_owns(struct job_ctx *j, const cJSON *targets)
{
    const cJSON *t;

    cJSON_ArrayForEach(t, targets)
    {
        if (verify_word_in(j->item->title, t->valuestring) ||
            verify_word_in(j->item->description, t->valuestring))
            return 1;
    }
    return 0;
}

/* Are other items of the goal still to run (queued, ready, in progress,
 * blocked)? */
static int others_left(struct job_ctx *j)
{
    int n = 0;

    if (store_item_count_unfinished_others(j->st, j->goal->id, j->item->id, &n) != 0) {
        err_clear();
        return 0;
    }
    return n > 0;
}

/* The baseline's run had parsed test cases and this one has none, or
 * another format: the runner crashed, or its output was forged. */
int verify_format_lost(const struct test_cases *base, const struct test_cases *now)
{
    return base->format && base->n &&
           (!now->format || !now->n || strcmp(base->format, now->format) != 0);
}

/* Did target (a test case id, or the gate's name) fail in the run e? */
static int failed_in(const struct gate_eval *e, const struct gate_spec *gs, const char *target)
{
    if (e->r.passed || !strcmp(e->r.classification, "flaky"))
        return 0;
    if (!strcmp(target, gs->name))
        return 1;
    for (size_t k = 0; k < e->r.cases.n; k++)
        if (!strcmp(e->r.cases.v[k].id, target))
            return e->r.cases.v[k].status == TEST_FAIL;
    return 0;
}

/* A failing must-pass gate runs once more: when that run passes, the gate
 * is flaky (it still had to pass once) and is judged on the passing run. */
static void gate_rerun(struct job_ctx *j, struct workspace *ws, const struct gate_spec *gs,
                       char *tree, struct gate_eval *e)
{
    struct gate_result again = {0};

    if (verify_gate_run(j, ws, gs, tree, &again) == 0 && again.passed) {
        /* truncation: ok, a constant that fits */
        snprintf(e->r.classification, sizeof(e->r.classification), "flaky");
        test_cases_release(&e->r.cases);
        e->r.cases = again.cases;
        memset(&again.cases, 0, sizeof(again.cases));
    }
    gate_result_release(&again); /* zeroed by verify_run_on_tree: safe on its error too */
    err_clear();
}

/* The reason of a failure the item introduced: the gate passed at the
 * baseline, or tests that passed there fail now, or new tests fail, or
 * the baseline's test cases are lost. */
static void blame_introduced(struct gate_eval *e, const char *base, int lost, size_t base_cases)
{
    /* truncation: ok, a constant that fits */
    snprintf(e->r.classification, sizeof(e->r.classification), "introduced");
    e->blame = 1;
    strbuf_addf_cut(&e->why, "gate %s failed (exit %d%s)", e->r.name, e->r.exit_code,
                    e->r.timed_out ? ", timed out" : "");
    if (e->diff.n_introduced) {
        strbuf_addf_cut(&e->why, "; tests that passed at the baseline %.12s fail now: ", base);
        verify_list_add(&e->why, e->diff.introduced, e->diff.n_introduced, 50);
    }
    if (e->diff.n_new_failing) {
        strbuf_adds_cut(&e->why, "; new tests that fail: ");
        verify_list_add(&e->why, e->diff.new_failing, e->diff.n_new_failing, 50);
    }
    if (e->base_known && e->base_passed)
        strbuf_addf_cut(&e->why, "; the gate passed at the baseline %.12s%s", base,
                        base_cases || e->r.cases.n ? "" : " (where it ran no test case)");
    else if (lost)
        strbuf_addf_cut(&e->why,
                        "; its test cases at the baseline %.12s are not in its "
                        "output now (the runner crashed, or the output is not its own)",
                        base);
    strbuf_adds_cut(&e->why, ":\n");
}

/* The failing tests (or the gate) of a pre-existing failure that the goal
 * is about, into e->targeted. */
static void targets_find(struct job_ctx *j, const struct gate_plan *plan,
                         const struct gate_spec *gs, const struct criteria *crit, struct gate_eval *e)
{
    int per_test = !strcmp(e->diff.granularity, "test");

    e->targeted = cJSON_CreateArray();
    for (size_t i = 0; per_test && i < e->diff.n_pre_existing; i++)
        if (verify_case_targeted(j->goal, crit, e->diff.pre_existing[i]))
            cJSON_AddItemToArray(e->targeted, cJSON_CreateString(e->diff.pre_existing[i]));
    if (cJSON_GetArraySize(e->targeted) != 0 || !verify_gate_targeted(j->goal, crit, plan, gs))
        return;
    if (per_test && e->diff.n_pre_existing)
        for (size_t i = 0; i < e->diff.n_pre_existing; i++)
            cJSON_AddItemToArray(e->targeted, cJSON_CreateString(e->diff.pre_existing[i]));
    else
        cJSON_AddItemToArray(e->targeted, cJSON_CreateString(gs->name));
}

/* Failing at the baseline too: blamed only when the goal is about it. */
static void judge_pre_existing(struct job_ctx *j, const struct gate_plan *plan,
                               const struct gate_spec *gs, const struct criteria *crit,
                               const struct gate_eval *main, struct gate_eval *e)
{
    const cJSON *t;
    int k = 0;

    /* truncation: ok, a constant that fits */
    snprintf(e->r.classification, sizeof(e->r.classification), "pre-existing");
    targets_find(j, plan, gs, crit, e);
    /* an earlier item of a plan may leave the fix to a later one: the
     * item is blamed when it names the target itself, or when no other
     * item of the goal is left to fix it (the final check on the branch
     * head is the last word either way) */
    if (cJSON_GetArraySize(e->targeted) > 0 && !item_owns(j, e->targeted) && others_left(j)) {
        /* on the tree with the gate inputs restored (main: the item's own
         * run), the pardon covers only what fails with the item's inputs
         * too: a target that passes only with the item's test changes is
         * weakened, whoever is left to run */
        cJSON *keep = cJSON_CreateArray();
        cJSON_ArrayForEach(t, e->targeted)
        {
            if (main && !failed_in(main, gs, t->valuestring))
                cJSON_AddItemToArray(keep, cJSON_CreateString(t->valuestring));
        }
        cJSON_Delete(e->targeted);
        e->targeted = keep;
    }
    if (cJSON_GetArraySize(e->targeted) == 0)
        return;
    e->blame = 1;
    strbuf_addf_cut(&e->why,
                    "gate %s failed (exit %d): the failing test the goal is about still "
                    "fails: ",
                    e->r.name, e->r.exit_code);
    cJSON_ArrayForEach(t, e->targeted)
        strbuf_addf_cut(&e->why, "%s%s", k++ ? ", " : "", t->valuestring);
    strbuf_adds_cut(&e->why, ":\n");
}

/* One pass of the gate loop over the item's tree (or the restored one). */
struct judge_pass {
    struct job_ctx *j;
    struct workspace *ws;
    struct verify_state *vs;
    char *tree;                   /* vs->tree or vs->restored */
    const struct gate_eval *main; /* NULL, or vs->ev when judging the restored tree */
    struct gate_eval *out;        /* vs->ev or vs->wev */
    int internal;                 /* storing the result failed */
};

/* Judge gate i's run r (moved into p->out[i]) on p->tree: a must-pass
 * failure re-run once (flaky), compared with the baseline per test case
 * (or per gate), and whether the item is to blame. */
static int gate_judge(const struct judge_pass *p, size_t i, struct gate_result *r)
{
    struct job_ctx *j = p->j;
    struct workspace *ws = p->ws;
    const struct gate_plan *plan = &p->vs->plan;
    const struct gate_spec *gs = &plan->gates[i];
    char *tree = p->tree;
    const char *base = p->vs->base;
    const struct criteria *crit = p->vs->crit;
    const struct gate_eval *main = p->main ? &p->main[i] : NULL;
    struct gate_eval *e = &p->out[i];
    struct test_cases bc = {0};
    size_t base_cases;
    int rc, lost = 0, git = ws->wt && j->repo && tree && tree[0];

    memset(e, 0, sizeof(*e));
    strbuf_init(&e->why, 1 << 20); /* a reason: cut at its cap */
    e->r = *r;
    memset(r, 0, sizeof(*r));
    if (!e->r.passed && e->r.must_pass)
        gate_rerun(j, ws, gs, tree, e);
    if (git && base && base[0]) {
        if ((rc = verify_baseline_get(j, ws, gs, base, &e->base_passed, &bc)) != 0)
            return rc;
        e->base_known = 1;
    }
    gates_compare(&e->diff, &bc, &e->r.cases);
    lost = verify_format_lost(&bc, &e->r.cases);
    base_cases = bc.n;
    test_cases_release(&bc);
    if (e->r.passed || !e->r.must_pass || !strcmp(e->r.classification, "flaky"))
        return 0;
    /* the product-only tree: the old versions of tests whose new versions
     * pin the new behaviour are expected to fail there */
    if (main && verify_pinned_only(p->vs, i, &e->r.cases)) {
        e->pinned_only = 1;
        return 0;
    }
    /* the product-only tree of a gate that ran no test case at the
     * baseline (its tests did not exist yet: the item adds the first) and
     * runs none here either, while on the item's tree it passed running
     * test cases: there are no original tests to judge the product with;
     * the item's new tests are judged on the old product instead
     * (verify_pins.c).  Only when all the item put back is new test
     * modules: a changed or added runner config, support file or shadow
     * (a Makefile's test target made `true`, a new package.json) is
     * judged as ever, and a pass that counted no test case proves
     * nothing */
    if (main && main->r.passed && main->r.cases.n > 0 && p->vs->only_new_tests &&
        e->base_known && !e->base_passed && base_cases == 0 && e->r.cases.n == 0) {
        e->inconclusive = 1;
        /* truncation: ok, a constant that fits */
        snprintf(e->r.classification, sizeof(e->r.classification), "pre-existing");
        return 0;
    }
    if (!e->base_known || e->base_passed || e->diff.n_introduced || e->diff.n_new_failing ||
        lost)
        blame_introduced(e, base, lost, base_cases);
    else
        judge_pre_existing(j, plan, gs, crit, main, e);
    return 0;
}

/* Gate i passed at once on the item's own tree: that is what the gate
 * gives on this tree, cached as a baseline's run would be.  The next
 * item's baseline is the commit of this tree: its gate is not run again
 * (a flaky pass, a failure, a timeout, or the tree with gate inputs
 * restored are not cached: a baseline run would run twice on a failure). */
static int verify_gate_passed(struct judge_pass *p, size_t i)
{
    const struct gate_result *r = &p->out[i].r;

    if (p->main || p->tree != p->vs->tree || !p->ws->wt || !p->j->repo || !p->tree[0] ||
        !r->passed || !strcmp(r->classification, "flaky"))
        return 0;
    return verify_baseline_cache(p->j, &p->vs->plan.gates[i], p->tree, r);
}

/* Gate i's run judged and stored as evidence (gate_results). */
static int gate_judged(void *arg, size_t i, struct gate_result *r)
{
    struct judge_pass *p = arg;
    struct gates_ctx gc = {p->j->st,           p->j->goal->id,    p->j->item->id,
                           p->j->claim.run_id, p->ws->git_common, p->ws->git_dir, 0};
    int rc;

    if ((rc = gate_judge(p, i, r)) != 0)
        return rc;
    if ((rc = gates_store(&gc, &p->out[i].r, p->tree, NULL)) != 0 ||
        (rc = verify_gate_passed(p, i)) != 0)
        p->internal = 1;
    return rc;
}

/* Every gate of the plan judged on tree into out (plan.n entries).  0, or
 * ERR_FAIL after job_fail(): sandbox when a gate could not be run,
 * internal when its result could not be stored. */
int verify_judge_all(struct job_ctx *j, struct workspace *ws, struct verify_state *vs, char *tree,
                     const struct gate_eval *main, struct gate_eval *out)
{
    struct judge_pass p = {j, ws, vs, tree, main, out, 0};

    if (verify_gates_each(j, ws, &vs->plan, tree, VERIFY_BY_GOALD, gate_judged, &p) == 0)
        return 0;
    if (p.internal)
        return job_fail(j, "internal", "verification: %s", err_last());
    return job_fail(j, "sandbox", "%s", err_last());
}

void verify_why_tail(strbuf *sb, const struct gate_eval *e)
{
    size_t len = strlen(e->r.output_tail ? e->r.output_tail : "");
    size_t from = len ? utf8_cut_forward(e->r.output_tail, len > 3000 ? len - 3000 : 0, len) : 0;

    strbuf_addf_cut(sb, "%s%s\n", strbuf_cstr(&e->why), len ? e->r.output_tail + from : "");
}
