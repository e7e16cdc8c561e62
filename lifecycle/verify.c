/*
 * verify.c - stage 5, verification: the deterministic gates of one work
 * item, and the orchestration of stages 5 and 6 (verify_item).
 *
 * Top to bottom for an item: it goes in_progress -> verify with the
 * model's summary; its tree is stored and compared with its baseline (the
 * goal branch head before it), and a change to a protected path fails it.
 * Each gate runs on a throw-away copy of the tree; a failing must-pass
 * gate runs once more (flaky), and is compared with the same gate on the
 * baseline, per test case where both runs were parsed: the item is blamed
 * for what it introduced, and for a pre-existing failure only when the
 * goal is about it.  The gate inputs it changed (tests, build files, what
 * a gate command names) are put back as they were at the baseline and the
 * gates judged again: a pass that needs the item's test changes is
 * "tests weakened".  A test that passed at the baseline and no longer runs
 * is "tests removed".  The verification decision records all of it.
 *
 * Order matters: no model opinion is asked (review.c) before every
 * must-pass gate has passed (or failed only in ways not blamed on the
 * item), and the review can only add findings, never change a gate's
 * verdict; the evaluation (evaluate.c) then decides and commits.
 */
#include "lifecycle/verify.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gates/gates.h"
#include "lifecycle/evaluate.h"
#include "lifecycle/intake.h"
#include "lifecycle/job.h"
#include "lifecycle/review.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "sandbox/path.h"
#include "store/artifact.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/commit.h"
#include "vcs/export.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

/* ---- gates on throw-away copies, baselines, and what the goal is about ---- */

/* 1 when the goal's allowed actions exclude bash, write and edit: the
 * model can change nothing, so no command it chose may run either. */
static int goal_readonly(const struct goal *g)
{
    cJSON *a = g->allowed_actions ? cJSON_Parse(g->allowed_actions) : NULL;
    int ro = cJSON_IsArray(a) && !intake_actions_change(a);

    cJSON_Delete(a);
    return ro;
}

int verify_plan(struct job_ctx *j, struct gate_plan *plan)
{
    const char *source = "goal";
    cJSON *elab = j->goal->elaboration ? cJSON_Parse(j->goal->elaboration) : NULL;
    int rc;

    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(elab, "verification_source")))
        source = cJSON_GetObjectItemCaseSensitive(elab, "verification_source")->valuestring;
    if ((rc = gates_plan_parse(plan, j->goal->verification)) == 0 && goal_readonly(j->goal) &&
        strcmp(source, "goal") != 0)
        gates_plan_release(plan); /* model-chosen commands never run for a read-only goal */
    cJSON_Delete(elab);
    return rc;
}

/* The gate's report file as committed in the copy goes before the gate
 * runs: only a report the gate writes is read (opened under the path
 * policy, no symbolic link followed). */
static int drop_report(const char *copy, const char *report)
{
    char leaf[1024];
    int root = -1, dir = -1, rc;

    if ((rc = path_open_root(&root, copy)) != 0)
        return rc;
    rc = path_open_parent(&dir, leaf, sizeof(leaf), root, report, 0);
    if (rc == 0 && unlinkat(dir, leaf, 0) != 0 && errno != ENOENT)
        rc = err_set(ERR_IO, "gate report %s in the copy: %s", report, strerror(errno));
    else if (rc == ERR_NOTFOUND) {
        err_clear();
        rc = 0; /* no folder of it: no report */
    }
    if (dir >= 0)
        close(dir);
    close(root);
    return rc;
}

/* Run g with the tree (or commit) `tree` of the goal's repository exported
 * to a folder beside the database and bound at the worktree's path: the
 * gate's side effects stay in that copy, which is removed afterwards. */
static int run_on_tree(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                       const struct gate_spec *g, const char *tree, struct gate_result *out)
{
    static unsigned seq;
    char dir[4096], copy[4400];
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
        return rc;
    snprintf(copy, sizeof(copy), "%s/gate-%s-%u", dir, j->claim.run_id, seq++);
    fs_remove_tree(copy);
    if ((rc = vcs_export(j->repo, tree, copy)) == 0 && g->report)
        rc = drop_report(copy, g->report);
    if (rc == 0)
        rc = gates_run_at(gc, g, ws->root, copy, out);
    if (fs_remove_tree(copy) != 0)
        log_warn("gate copy %s not removed: %s", copy, err_last());
    return rc;
}

int verify_gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, struct gate_result *out)
{
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item ? j->item->id : NULL,
                           j->claim.run_id, ws->git_common, ws->git_dir};
    int rc;

    if (!ws->wt || !j->repo)
        return gates_run(&gc, g, ws->root, out); /* no git: no snapshot to copy */
    if (!tree[0] && (rc = workspace_store(ws, tree, VCS_OID_HEX)) != 0)
        return rc;
    return run_on_tree(j, ws, &gc, g, tree, out);
}

int verify_gates_each(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      char *tree, int (*fn)(void *arg, size_t i, struct gate_result *r),
                      void *arg)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct gate_result r = {0};
        int rc;
        if ((rc = verify_gate_run(j, ws, &plan->gates[i], tree, &r)) != 0) {
            gate_result_release(&r);
            return rc;
        }
        if ((rc = fn(arg, i, &r)) != 0)
            return rc;
    }
    return 0;
}

static const char *status_name(enum test_status s)
{
    return s == TEST_PASS ? "pass" : s == TEST_FAIL ? "fail" : "skip";
}

/* The format names gates_parse_cases() gives, so that a cached baseline's
 * format compares equal to a fresh one's. */
static const char *format_intern(const char *f)
{
    static const char *known[] = {"junit", "tap", "pytest", "go", "ctest", "cargo", "node"};
    for (size_t i = 0; f && i < sizeof(known) / sizeof(known[0]); i++)
        if (!strcmp(f, known[i]))
            return known[i];
    return NULL;
}

static void cases_from_json(struct test_cases *c, const char *format, const char *json)
{
    cJSON *a = cJSON_Parse(json ? json : "[]");
    const cJSON *it;
    size_t n = (size_t)cJSON_GetArraySize(a);

    memset(c, 0, sizeof(*c));
    c->format = format_intern(format);
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

static char *cases_to_json(const struct test_cases *c)
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
    int rc = store_gate_baseline_get(j->st, j->goal->id, g->name, g->command, base_tree, found,
                                     passed, &format, &json);

    if (rc == 0 && *found)
        cases_from_json(cases, format, json);
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
                           j->claim.run_id, ws->git_common, ws->git_dir};
    struct gate_result again = {0};
    int rc;

    if ((rc = run_on_tree(j, ws, &gc, g, base, r)) != 0 || r->passed)
        return rc;
    if ((rc = run_on_tree(j, ws, &gc, g, base, &again)) != 0) {
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
static int baseline_cache(struct job_ctx *j, const struct gate_spec *g, const char *tree,
                          const struct gate_result *r)
{
    char *cj;
    int rc = 0;

    if (r->timed_out)
        return 0;
    cj = cases_to_json(&r->cases);
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
    job_event_or_warn(j, "gate.baseline", p);
    cJSON_Delete(p);
    return baseline_cache(j, g, base_tree, r);
}

/* The result of g on the commit base, cached per goal, gate command and
 * tree in gate_baselines: a retry does not run it again, nor the next
 * item, whose baseline is the commit of an item whose gates passed on
 * that very tree (verify_gate_passed). */
static int baseline_get(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
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
static int goal_names(const struct goal *g, const cJSON *crit, const char *what, int criteria_only)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, crit) if (verify_word_in(cJSON_GetStringValue(c), what)) return 1;
    return !criteria_only && (verify_word_in(g->description, what) || verify_word_in(g->title, what));
}

/* A test case the goal set out to fix: its id, or its last component
 * (after "::", " > " or "/", at least 4 characters), is named in a
 * criterion, the description or the title. */
static int case_targeted(const struct goal *g, const cJSON *crit, const char *id)
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

static void list_add(strbuf *sb, char **v, size_t n, size_t max)
{
    for (size_t i = 0; i < n && i < max; i++)
        strbuf_addf_cut(sb, "%s%s", i ? ", " : "", v[i]);
    if (n > max)
        strbuf_addf_cut(sb, " and %zu more", n - max);
}

static cJSON *list_json(char **v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static void gate_eval_release(struct gate_eval *e)
{
    gate_result_release(&e->r);
    case_diff_release(&e->diff);
    strbuf_release(&e->why);
    cJSON_Delete(e->targeted);
    memset(e, 0, sizeof(*e));
}

static int gate_targeted(const struct goal *g, const cJSON *crit, const struct gate_plan *plan,
                         const struct gate_spec *gs)
{
    size_t must = 0;

    for (size_t i = 0; i < plan->n; i++)
        must += plan->gates[i].must_pass != 0;
    return (must == 1 && gs->must_pass) || goal_names(g, crit, gs->name, 1);
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
static int format_lost(const struct test_cases *base, const struct test_cases *now)
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
        snprintf(e->r.classification, sizeof(e->r.classification), "flaky");
        test_cases_release(&e->r.cases);
        e->r.cases = again.cases;
        memset(&again.cases, 0, sizeof(again.cases));
    }
    gate_result_release(&again); /* zeroed by run_on_tree: safe on its error too */
    err_clear();
}

/* The reason of a failure the item introduced: the gate passed at the
 * baseline, or tests that passed there fail now, or new tests fail, or
 * the baseline's test cases are lost. */
static void blame_introduced(struct gate_eval *e, const char *base, int lost)
{
    snprintf(e->r.classification, sizeof(e->r.classification), "introduced");
    e->blame = 1;
    strbuf_addf_cut(&e->why, "gate %s failed (exit %d%s)", e->r.name, e->r.exit_code,
                    e->r.timed_out ? ", timed out" : "");
    if (e->diff.n_introduced) {
        strbuf_addf_cut(&e->why, "; tests that passed at the baseline %.12s fail now: ", base);
        list_add(&e->why, e->diff.introduced, e->diff.n_introduced, 50);
    }
    if (e->diff.n_new_failing) {
        strbuf_adds_cut(&e->why, "; new tests that fail: ");
        list_add(&e->why, e->diff.new_failing, e->diff.n_new_failing, 50);
    }
    if (e->base_known && e->base_passed)
        strbuf_addf_cut(&e->why, "; the gate passed at the baseline %.12s", base);
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
                         const struct gate_spec *gs, const cJSON *crit, struct gate_eval *e)
{
    int per_test = !strcmp(e->diff.granularity, "test");

    e->targeted = cJSON_CreateArray();
    for (size_t i = 0; per_test && i < e->diff.n_pre_existing; i++)
        if (case_targeted(j->goal, crit, e->diff.pre_existing[i]))
            cJSON_AddItemToArray(e->targeted, cJSON_CreateString(e->diff.pre_existing[i]));
    if (cJSON_GetArraySize(e->targeted) != 0 || !gate_targeted(j->goal, crit, plan, gs))
        return;
    if (per_test && e->diff.n_pre_existing)
        for (size_t i = 0; i < e->diff.n_pre_existing; i++)
            cJSON_AddItemToArray(e->targeted, cJSON_CreateString(e->diff.pre_existing[i]));
    else
        cJSON_AddItemToArray(e->targeted, cJSON_CreateString(gs->name));
}

/* Failing at the baseline too: blamed only when the goal is about it. */
static void judge_pre_existing(struct job_ctx *j, const struct gate_plan *plan,
                               const struct gate_spec *gs, const cJSON *crit,
                               const struct gate_eval *main, struct gate_eval *e)
{
    const cJSON *t;
    int k = 0;

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

/* Judge gs's run r (moved into e) on tree: a must-pass failure re-run
 * once (flaky), compared with the baseline per test case (or per gate),
 * and whether the item is to blame. */
static int gate_judge(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      const struct gate_spec *gs, char *tree, const char *base,
                      const cJSON *crit, const struct gate_eval *main, struct gate_result *r,
                      struct gate_eval *e)
{
    struct test_cases bc = {0};
    int rc, lost = 0, git = ws->wt && j->repo && tree && tree[0];

    memset(e, 0, sizeof(*e));
    strbuf_init(&e->why, 1 << 20); /* a reason: cut at its cap */
    e->r = *r;
    memset(r, 0, sizeof(*r));
    if (!e->r.passed && e->r.must_pass)
        gate_rerun(j, ws, gs, tree, e);
    if (git && base && base[0]) {
        if ((rc = baseline_get(j, ws, gs, base, &e->base_passed, &bc)) != 0)
            return rc;
        e->base_known = 1;
    }
    gates_compare(&e->diff, &bc, &e->r.cases);
    lost = format_lost(&bc, &e->r.cases);
    test_cases_release(&bc);
    if (e->r.passed || !e->r.must_pass || !strcmp(e->r.classification, "flaky"))
        return 0;
    if (!e->base_known || e->base_passed || e->diff.n_introduced || e->diff.n_new_failing ||
        lost)
        blame_introduced(e, base, lost);
    else
        judge_pre_existing(j, plan, gs, crit, main, e);
    return 0;
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
    return baseline_cache(p->j, &p->vs->plan.gates[i], p->tree, r);
}

/* Gate i's run judged and stored as evidence (gate_results). */
static int gate_judged(void *arg, size_t i, struct gate_result *r)
{
    struct judge_pass *p = arg;
    struct verify_state *vs = p->vs;
    struct gates_ctx gc = {p->j->st,           p->j->goal->id,    p->j->item->id,
                           p->j->claim.run_id, p->ws->git_common, p->ws->git_dir};
    int rc;

    if ((rc = gate_judge(p->j, p->ws, &vs->plan, &vs->plan.gates[i], p->tree, vs->base,
                         vs->crit, p->main ? &p->main[i] : NULL, r, &p->out[i])) != 0)
        return rc;
    if ((rc = gates_store(&gc, &p->out[i].r, p->tree, NULL)) != 0 ||
        (rc = verify_gate_passed(p, i)) != 0)
        p->internal = 1;
    return rc;
}

/* Every gate of the plan judged on tree into out (plan.n entries).  0, or
 * ERR_FAIL after job_fail(): sandbox when a gate could not be run,
 * internal when its result could not be stored. */
static int judge_all(struct job_ctx *j, struct workspace *ws, struct verify_state *vs,
                     char *tree, const struct gate_eval *main, struct gate_eval *out)
{
    struct judge_pass p = {j, ws, vs, tree, main, out, 0};

    if (verify_gates_each(j, ws, &vs->plan, tree, gate_judged, &p) == 0)
        return 0;
    if (p.internal)
        return job_fail(j, "internal", "verification: %s", err_last());
    return job_fail(j, "sandbox", "%s", err_last());
}

static void why_tail(strbuf *sb, const struct gate_eval *e)
{
    size_t len = strlen(e->r.output_tail ? e->r.output_tail : "");
    size_t from = len ? utf8_cut_forward(e->r.output_tail, len > 3000 ? len - 3000 : 0, len) : 0;

    strbuf_addf_cut(sb, "%s%s\n", strbuf_cstr(&e->why), len ? e->r.output_tail + from : "");
}

/* A path the gates read: named by a gate command, pointed at by a parsed
 * test case, a build or CI file, or a test by the usual conventions
 * (docs/lifecycle.md, "Gate inputs"). */
/* A build, configuration or CI file: it decides how the tests run (which
 * are collected, what passes), so one the item added is dropped, not kept,
 * when the gates are judged again with the gate inputs restored. */
static int config_input(const char *path)
{
    static const char *build[] = {"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt",
                                  "package.json", "pyproject.toml", "setup.cfg", "setup.py",
                                  "conftest.py", "tox.ini", "pytest.ini", "Cargo.toml", "go.mod",
                                  NULL};
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t pl = strlen(path);

    for (size_t i = 0; build[i]; i++)
        if (!strcmp(base, build[i]))
            return 1;
    return !strncmp(path, ".github/workflows/", 18) ||
           (pl > 6 && !strcmp(path + pl - 6, ".cmake"));
}

/* A token of the gate command c names path or a folder above it. */
static int command_names(const char *c, const char *path)
{
    size_t pl = strlen(path);

    while (c && *c) {
        size_t n = strcspn(c, " \t\n;&|<>()'\"`=");
        if (n > 0) {
            size_t m = n;
            const char *t = c;
            if (m > 2 && t[0] == '.' && t[1] == '/')
                t += 2, m -= 2;
            while (m > 1 && t[m - 1] == '/')
                m--;
            if ((m == pl && !strncmp(t, path, m)) ||
                (m < pl && !strncmp(t, path, m) && path[m] == '/'))
                return 1;
        }
        c += n ? n : 1;
    }
    return 0;
}

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

static int gate_input(const char *path, const struct gate_plan *plan, const struct gate_eval *ev)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

    if (config_input(path))
        return 1;
    if (!strncmp(path, "tests/", 6) || !strncmp(path, "test/", 5) || strstr(path, "/tests/") ||
        strstr(path, "/test/") || !strncmp(base, "test_", 5) || strstr(base, "_test.") ||
        strstr(base, ".test."))
        return 1;
    for (size_t g = 0; g < plan->n; g++)
        if (command_names(plan->gates[g].command, path) || (ev && cases_name(&ev[g].r.cases, path)))
            return 1;
    return 0;
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

int verify_decision(struct job_ctx *j, const char *kind, const char *aspect,
                    const char *severity, const char *note, const cJSON *data)
{
    return store_decision_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                              kind, aspect, severity, note, data);
}

int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta)
{
    return store_artifact_add_once(j->st, j->goal->id, j->item ? j->item->id : NULL,
                                   j->claim.run_id, type, ref, path, hash, url, meta);
}

/* The item's baseline: the goal branch head before the item, i.e. the
 * head, or the parent of the item's own commit when a run that died after
 * committing left it on the branch.  "" without git. */
static void item_baseline(struct job_ctx *j, struct workspace *ws, char base[VCS_OID_HEX])
{
    char mine[VCS_OID_HEX], rev[VCS_OID_HEX + 2];

    base[0] = '\0';
    if (!ws->wt || !j->repo)
        return;
    if (vcs_commit_find_by_trailer(mine, ws->wt, j->goal->base_branch, VCS_TRAILER_ITEM,
                                   j->item->id) == 0) {
        snprintf(rev, sizeof(rev), "%s^", mine);
        if (vcs_rev_commit(base, j->repo, rev) != 0)
            base[0] = '\0';
    } else if (vcs_worktree_head(base, ws->wt) != 0) {
        base[0] = '\0';
    }
    err_clear();
}

static cJSON *eval_json(const struct gate_eval *e)
{
    cJSON *g = cJSON_CreateObject();

    cJSON_AddStringToObject(g, "gate", e->r.name);
    cJSON_AddBoolToObject(g, "passed", e->r.passed);
    cJSON_AddNumberToObject(g, "exit_code", e->r.exit_code);
    cJSON_AddStringToObject(g, "classification", e->r.classification);
    cJSON_AddStringToObject(g, "granularity", e->diff.granularity ? e->diff.granularity : "gate");
    if (e->base_known)
        cJSON_AddBoolToObject(g, "baseline_passed", e->base_passed);
    else
        cJSON_AddNullToObject(g, "baseline_passed");
    cJSON_AddItemToObject(g, "introduced", list_json(e->diff.introduced, e->diff.n_introduced));
    cJSON_AddItemToObject(g, "new_failing",
                          list_json(e->diff.new_failing, e->diff.n_new_failing));
    cJSON_AddItemToObject(g, "pre_existing",
                          list_json(e->diff.pre_existing, e->diff.n_pre_existing));
    cJSON_AddItemToObject(g, "fixed", list_json(e->diff.fixed, e->diff.n_fixed));
    cJSON_AddItemToObject(g, "removed", list_json(e->diff.removed, e->diff.n_removed));
    return g;
}

static void add_all(cJSON *arr, const cJSON *from)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, from) cJSON_AddItemToArray(arr, cJSON_Duplicate(it, 1));
}

/* The item's verification record (decision kind "verification"): the
 * baseline, the granularity, the test cases introduced / pre-existing /
 * fixed, the gate inputs it changed; what `goald report` shows. */
static int record_verification(struct job_ctx *j, const char *base, const char *tree,
                               const struct gate_eval *ev, const struct gate_eval *wev, size_t n,
                               const cJSON *inputs, const char *restored, int weakened,
                               const char *verdict)
{
    cJSON *d = cJSON_CreateObject(), *gates = cJSON_CreateArray(), *wg = NULL;
    cJSON *intro = cJSON_CreateArray(), *pre = cJSON_CreateArray(), *fixed = cJSON_CreateArray();
    /* "test" when some gate was compared per test case and no failing
     * gate had to be compared as a whole; else "gate" */
    int any_test = 0, failing_gate = 0, rc;
    const char *gran;

    for (size_t i = 0; i < n; i++) {
        cJSON *g = eval_json(&ev[i]);
        int t = ev[i].diff.granularity && !strcmp(ev[i].diff.granularity, "test");
        add_all(intro, cJSON_GetObjectItemCaseSensitive(g, "introduced"));
        add_all(intro, cJSON_GetObjectItemCaseSensitive(g, "new_failing"));
        add_all(pre, cJSON_GetObjectItemCaseSensitive(g, "pre_existing"));
        add_all(fixed, cJSON_GetObjectItemCaseSensitive(g, "fixed"));
        any_test |= t;
        failing_gate |= !t && !ev[i].r.passed;
        cJSON_AddItemToArray(gates, g);
    }
    gran = any_test && !failing_gate ? "test" : "gate";
    cJSON_AddStringToObject(d, "item", j->item->key);
    if (base[0])
        cJSON_AddStringToObject(d, "baseline", base);
    else
        cJSON_AddNullToObject(d, "baseline");
    cJSON_AddStringToObject(d, "tree_id", tree);
    cJSON_AddStringToObject(d, "granularity", gran);
    cJSON_AddItemToObject(d, "introduced", intro);
    cJSON_AddItemToObject(d, "pre_existing", pre);
    cJSON_AddItemToObject(d, "fixed", fixed);
    cJSON_AddItemToObject(d, "gate_inputs_changed", cJSON_Duplicate(inputs, 1));
    cJSON_AddBoolToObject(d, "tests_weakened", weakened);
    cJSON_AddStringToObject(d, "verdict", verdict);
    cJSON_AddItemToObject(d, "gates", gates);
    if (wev) {
        wg = cJSON_AddArrayToObject(d, "restored_inputs_gates");
        cJSON_AddStringToObject(d, "restored_tree_id", restored);
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(wg, eval_json(&wev[i]));
    }
    rc = verify_decision(j, "verification", NULL, NULL, verdict, d);
    cJSON_Delete(d);
    return rc;
}

void verify_state_release(struct verify_state *vs)
{
    for (size_t i = 0; vs->ev && i < vs->plan.n; i++)
        gate_eval_release(&vs->ev[i]);
    for (size_t i = 0; vs->wev && i < vs->plan.n; i++)
        gate_eval_release(&vs->wev[i]);
    free(vs->ev);
    free(vs->wev);
    gates_plan_release(&vs->plan);
    cJSON_Delete(vs->crit);
    cJSON_Delete(vs->inputs);
    memset(vs, 0, sizeof(*vs));
}

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
    item_baseline(j, ws, vs->base);
    vs->crit = cJSON_Parse(j->goal->success_criteria ? j->goal->success_criteria : "[]");
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
            why_tail(blame, e);
        }
        snprintf(vs->gates_line + o, sizeof(vs->gates_line) - o, "%s%s=%s", o ? " " : "",
                 e->r.name,
                 e->r.passed                 ? "pass"
                 : e->r.classification[0] ? e->r.classification
                                           : "fail");
    }
    return blamed;
}

/* The gate inputs among the item's changes (into vs->inputs), and of
 * them the paths to put back as they were at the baseline (into restore,
 * nch + 1 entries: modified and deleted ones, and added build and
 * configuration files; added tests stay).  Returns how many. */
static size_t inputs_changed(struct verify_state *vs, const struct vcs_tree_change *ch,
                             size_t nch, const char **restore)
{
    size_t n = 0;

    for (size_t i = 0; i < nch; i++)
        if (gate_input(ch[i].path, &vs->plan, vs->ev)) {
            cJSON_AddItemToArray(vs->inputs, cJSON_CreateString(ch[i].path));
            if (ch[i].status != 'A' || config_input(ch[i].path))
                restore[n++] = ch[i].path;
        }
    return n;
}

/* The gates judged again on the item's tree with the restore paths as
 * they were at the baseline: a gate the item is blamed for there means its
 * tests were weakened (reasons into blame, *weakened counts them).  0, or
 * ERR_FAIL after job_fail(). */
static int restored_pass(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
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
    if ((rc = judge_all(j, ws, vs, vs->restored, vs->ev, vs->wev)) != 0)
        goto out;
    for (size_t i = 0; i < vs->plan.n; i++) {
        if (!vs->wev[i].blame)
            continue;
        if (!(*weakened)++)
            strbuf_addf_cut(blame,
                            "tests weakened: %s: with these files as they were at "
                            "the baseline %.12s the gates fail:\n",
                            strbuf_cstr(&files), vs->base);
        why_tail(blame, &vs->wev[i]);
    }
    p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "gate_inputs_changed", cJSON_Duplicate(vs->inputs, 1));
    cJSON_AddBoolToObject(p, "tests_weakened", *weakened > 0);
    job_event_or_warn(j, "gate_inputs.checked", p);
    cJSON_Delete(p);
out:
    strbuf_release(&files);
    return rc;
}

/* A test that passed at the baseline and is absent now, even with the
 * gate inputs restored: deselected or deleted, never silently. */
static void tests_removed(const struct verify_state *vs, strbuf *blame, int *weakened)
{
    for (size_t i = 0; !*weakened && i < vs->plan.n; i++) {
        const struct gate_eval *e = vs->wev ? &vs->wev[i] : &vs->ev[i];
        if (!e->r.must_pass || !e->diff.n_removed)
            continue;
        if (!(*weakened)++)
            strbuf_adds_cut(blame, "tests removed: ");
        else
            strbuf_adds_cut(blame, "; ");
        strbuf_addf_cut(blame, "gate %s: ", e->r.name);
        list_add(blame, e->diff.removed, e->diff.n_removed, 50);
    }
    if (*weakened && strncmp(strbuf_cstr(blame), "tests removed: ", 15) == 0)
        strbuf_addf_cut(blame, " passed at the baseline %.12s and no longer run\n", vs->base);
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
    if ((rc = judge_all(j, ws, vs, vs->tree, NULL, vs->ev)) != 0)
        goto out;
    blamed = first_pass_tally(vs, &blame);
    restore = xcalloc(nch + 1, sizeof(*restore));
    nrestore = inputs_changed(vs, ch, nch, restore);
    /* nothing to restore (no input changed, or only tests added): the
     * restored tree is the item's, judged already */
    if (!blamed && vs->plan.n && vs->base[0] && nrestore &&
        (rc = restored_pass(vs, j, ws, restore, nrestore, &blame, &weakened)) != 0)
        goto out;
    if (!blamed && !weakened)
        tests_removed(vs, &blame, &weakened);
    if ((rc = record_verification(j, vs->base, vs->tree, vs->ev, vs->wev, vs->plan.n, vs->inputs,
                                  vs->restored, weakened > 0,
                                  blamed ? "gate" : weakened ? "tests weakened" : "ok")) != 0) {
        rc = job_fail(j, "internal", "verification: %s", err_last());
        goto out;
    }
    if (blamed || weakened)
        rc = job_fail(j, "gate", "%s", strbuf_cstr(&blame));
out:
    free(restore);
    vcs_tree_changes_free(ch, nch);
    strbuf_release(&blame);
    return rc;
}

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    struct verify_state vs;
    int rc;

    memset(&vs, 0, sizeof(vs));
    if ((rc = item_to_verify(j, summary)) != 0) {
        rc = job_fail(j, "internal", "verification: %s", err_last());
        goto out;
    }
    if ((rc = verify_gates(&vs, j, ws)) != 0)
        goto out;
    review_item(j, ws, summary);             /* advisory, only after the gates */
    rc = evaluate_item(j, ws, summary, &vs); /* evidence, the commit, done */
out:
    verify_state_release(&vs);
    return rc;
}

/* The goal's starting commit: the baseline of the first item verified
 * (nothing was committed on the goal branch before it). */
static void goal_start(struct job_ctx *j, char *out, size_t n)
{
    if (store_decision_first_verification_baseline(j->st, j->goal->id, out, n) != 0)
        err_clear();
}

/* One must-pass gate on a final tree: the branch head, or (restored) the
 * head with the gate inputs the goal changed as they were at its start.
 * Adds to gates, failures and blame; *blocked when the gate fails in a way
 * the goal is to blame for.  0, or the job's failure. */
static int final_judge(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                       const struct gate_plan *plan, const struct gate_spec *gs,
                       const char *tree, const char *head, const char *start, const cJSON *crit,
                       int restored, strbuf *blame, cJSON *gates, cJSON *failures, int *blocked)
{
    const struct goal *g = j->goal;
    struct gate_result r = {0};
    struct test_cases bc = {0};
    struct case_diff diff = {0};
    int base_passed = 0, base_known = 0, targeted = 0, introduced, rc = 0;
    cJSON *gj, *ids = NULL;

    if ((rc = run_on_tree(j, ws, gc, gs, tree, &r)) != 0) {
        gate_result_release(&r);
        return job_fail(j, "sandbox", "final check: %s", err_last());
    }
    if (!r.passed) {
        struct gate_result again = {0};
        if (run_on_tree(j, ws, gc, gs, tree, &again) == 0 && again.passed)
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
    cJSON_AddItemToArray(gates, gj);
    if (r.passed || !strcmp(r.classification, "flaky")) {
        if ((rc = gates_store(gc, &r, tree, NULL)) != 0)
            rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    if (start[0] && baseline_get(j, ws, gs, start, &base_passed, &bc) == 0)
        base_known = 1;
    err_clear();
    gates_compare(&diff, &bc, &r.cases);
    introduced = !base_known || base_passed || diff.n_introduced || diff.n_new_failing ||
                 format_lost(&bc, &r.cases);
    snprintf(r.classification, sizeof(r.classification), "%s",
             introduced ? "introduced" : "pre-existing");
    if ((rc = gates_store(gc, &r, tree, NULL)) != 0) {
        rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    ids = cJSON_CreateArray();
    for (size_t k = 0; k < diff.n_pre_existing; k++) {
        cJSON_AddItemToArray(ids, cJSON_CreateString(diff.pre_existing[k]));
        if (case_targeted(g, crit, diff.pre_existing[k]))
            targeted = 1;
    }
    if (gate_targeted(g, crit, plan, gs))
        targeted = 1;
    cJSON_AddStringToObject(gj, "classification", r.classification);
    cJSON_AddStringToObject(gj, "granularity", diff.granularity);
    if (introduced || targeted) {
        *blocked = 1;
        strbuf_addf_cut(
            blame, "gate %s fails on the final branch head %.12s%s (exit %d)%s", r.name, head,
            restored ? " with the gate inputs as they were when the goal started" : "", r.exit_code,
            introduced ? ", and it did not fail like this when the goal started"
                       : ": the goal set out to fix it");
        if (diff.n_introduced || diff.n_new_failing) {
            strbuf_adds_cut(blame, "; failing now: ");
            list_add(blame, diff.introduced, diff.n_introduced, 50);
            if (diff.n_introduced && diff.n_new_failing)
                strbuf_adds_cut(blame, ", ");
            list_add(blame, diff.new_failing, diff.n_new_failing, 50);
        } else if (diff.n_pre_existing) {
            strbuf_adds_cut(blame, "; still failing: ");
            list_add(blame, diff.pre_existing, diff.n_pre_existing, 50);
        }
        strbuf_adds_cut(blame, "\n");
    } else if (!restored) {
        /* a failure the goal did not set out to fix: completed as partial
         * (on the restored tree it was counted on the head already) */
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "gate", r.name);
        cJSON_AddStringToObject(f, "granularity", diff.granularity);
        cJSON_AddItemToObject(f, "tests", ids);
        ids = NULL;
        cJSON_AddItemToArray(failures, f);
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
        if (gate_input(ch[i].path, plan, NULL) && (ch[i].status != 'A' || config_input(ch[i].path)))
            paths[n++] = ch[i].path;
    if (n)
        rc = vcs_tree_restore(restored, j->repo, head, start, paths, n);
    free(paths);
    vcs_tree_changes_free(ch, nch);
    return rc;
}

int verify_goal_final(struct job_ctx *j, int *partial)
{
    const struct goal *g = j->goal;
    struct gate_plan plan = {0};
    struct workspace ws;
    struct gates_ctx gc = {j->st, g->id, NULL, j->claim.run_id, NULL, NULL};
    char head[VCS_OID_HEX] = "", start[VCS_OID_HEX] = "", restored[VCS_OID_HEX] = "";
    cJSON *crit = NULL, *failures = cJSON_CreateArray(), *gates = cJSON_CreateArray(), *d = NULL;
    strbuf blame;
    int rc = 0, blocked = 0;

    *partial = 0;
    strbuf_init(&blame, 1 << 20); /* the reason of a failure: cut at its cap */
    memset(&ws, 0, sizeof(ws));
    if (!g->repo || !g->branch)
        goto out; /* no repository: the items' own verification stands */
    if ((rc = verify_plan(j, &plan)) != 0) {
        rc = job_fail(j, "config", "%s", err_last());
        goto out;
    }
    if (plan.n == 0)
        goto out; /* no gate to run again */
    /* the gates run bound at the worktree's path, with the same git
     * folders as an item's (from goald's records): fail closed without it */
    if (!j->worktree || vcs_worktree_open(&ws.wt, j->repo, j->worktree) != 0) {
        rc =
            job_fail(j, "vcs", "final check: the goal's worktree %s: %s",
                     j->worktree ? j->worktree : "(none)", j->worktree ? err_last() : "never made");
        goto out;
    }
    snprintf(ws.root, sizeof(ws.root), "%s", vcs_worktree_path(ws.wt));
    ws.git_common = gc.git_common = vcs_worktree_git_common(ws.wt);
    ws.git_dir = gc.git_dir = vcs_worktree_git_dir(ws.wt);
    if (vcs_rev_commit(head, j->repo, g->branch) != 0) {
        rc = job_fail(j, "vcs", "final check: %s", err_last());
        goto out;
    }
    goal_start(j, start, sizeof(start));
    if (start[0] && strcmp(start, head) != 0 &&
        final_restored(j, &plan, start, head, restored) != 0) {
        rc = job_fail(j, "vcs", "final check: restoring the gate inputs: %s", err_last());
        goto out;
    }
    crit = cJSON_Parse(g->success_criteria ? g->success_criteria : "[]");
    for (size_t i = 0; i < plan.n; i++) {
        if (!plan.gates[i].must_pass)
            continue;
        if ((rc = final_judge(j, &ws, &gc, &plan, &plan.gates[i], head, head, start, crit, 0,
                              &blame, gates, failures, &blocked)) != 0)
            goto out;
    }
    /* the goal's start -> head, as an item's baseline -> tree: a test the
     * goal rewrote, or a conftest.py it added, does not pass the goal */
    for (size_t i = 0; restored[0] && i < plan.n; i++) {
        if (!plan.gates[i].must_pass)
            continue;
        if ((rc = final_judge(j, &ws, &gc, &plan, &plan.gates[i], restored, head, start, crit, 1,
                              &blame, gates, failures, &blocked)) != 0)
            goto out;
    }
    *partial = !blocked && cJSON_GetArraySize(failures) > 0;
    d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "head", head);
    if (start[0])
        cJSON_AddStringToObject(d, "baseline", start);
    if (restored[0])
        cJSON_AddStringToObject(d, "restored_tree_id", restored);
    cJSON_AddBoolToObject(d, "passed", !blocked && !*partial);
    cJSON_AddBoolToObject(d, "partial", *partial);
    cJSON_AddItemToObject(d, "partial_failures", failures);
    failures = NULL;
    cJSON_AddItemToObject(d, "gates", gates);
    gates = NULL;
    if ((rc = verify_decision(j, "final_check", NULL, NULL, blocked ? "blocked" : "ok", d)) != 0) {
        rc = job_fail(j, "internal", "final check: %s", err_last());
        goto out;
    }
    if (blocked)
        rc = job_fail(j, "gate", "the goal's must-pass gates fail on its final tree: %s",
                      strbuf_cstr(&blame));
out:
    vcs_worktree_free(ws.wt);
    gates_plan_release(&plan);
    cJSON_Delete(crit);
    cJSON_Delete(failures);
    cJSON_Delete(gates);
    cJSON_Delete(d);
    strbuf_release(&blame);
    return rc;
}
