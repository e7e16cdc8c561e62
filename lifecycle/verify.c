/*
 * verify.c - stages 5 and 6 for one work item: deterministic gates, the
 * baseline check of a failing gate, the advisory LLM review, evaluation
 * with evidence, and the item's commit.
 *
 * Order matters: no model opinion is asked before every must-pass gate
 * has passed (or failed only in ways not blamed on the item), and the
 * review can only add findings, never change a gate's verdict.
 */
#include "lifecycle/verify.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gates/gates.h"
#include "lifecycle/intake.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "sandbox/path.h"
#include "store/event.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/export.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

#define REVIEW_DIFF_MAX (200 * 1024)

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
    if ((rc = vcs_export(j->goal->repo, tree, copy)) == 0 && g->report)
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

    if (!ws->wt || !j->goal->repo)
        return gates_run(&gc, g, ws->root, out); /* no git: no snapshot to copy */
    if (!tree[0] && (rc = workspace_store(ws, tree, VCS_OID_HEX)) != 0)
        return rc;
    return run_on_tree(j, ws, &gc, g, tree, out);
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
    c->v = calloc(n + 1, sizeof(*c->v));
    if (!c->v)
        abort();
    cJSON_ArrayForEach(it, a)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetArrayItem(it, 0));
        const char *st = cJSON_GetStringValue(cJSON_GetArrayItem(it, 1));
        const char *file = cJSON_GetStringValue(cJSON_GetArrayItem(it, 2));
        if (!id || !st)
            continue;
        c->v[c->n].id = strdup(id);
        c->v[c->n].file = file ? strdup(file) : NULL;
        if (!c->v[c->n].id || (file && !c->v[c->n].file))
            abort();
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
    if (!t)
        abort();
    return t;
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

/* The result of g on the commit base (cached per goal, gate command and
 * commit in gate_baselines: a retry, or the next item on the same head,
 * does not run it again). */
static int baseline_get(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                        const char *base, int *passed, struct test_cases *cases)
{
    static const char q[] = "SELECT passed, format, cases FROM gate_baselines WHERE goal_id = ?"
                            " AND gate = ? AND command = ? AND baseline = ?";
    static const char ins[] =
        "INSERT OR REPLACE INTO gate_baselines(goal_id, gate, command, baseline, passed,"
        " exit_code, format, cases, output_hash, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)";
    /* no store: the baseline run is recorded as gate.baseline, not as one
     * of the item's gate.completed */
    struct gates_ctx gc = {NULL,           j->goal->id,    j->item ? j->item->id : NULL,
                           j->claim.run_id, ws->git_common, ws->git_dir};
    struct gate_result r = {0}, again = {0};
    sqlite3_stmt *s;
    cJSON *p;
    char *cj;
    int rc, found = 0;

    memset(cases, 0, sizeof(*cases));
    if ((rc = store_prepare(j->st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, g->name);
    store_bind_text(s, 3, g->command);
    store_bind_text(s, 4, base);
    if (sqlite3_step(s) == SQLITE_ROW) {
        found = 1;
        *passed = sqlite3_column_int(s, 0);
        cases_from_json(cases, (const char *)sqlite3_column_text(s, 1),
                        (const char *)sqlite3_column_text(s, 2));
    }
    store_done(s);
    if (found)
        return 0;
    if ((rc = run_on_tree(j, ws, &gc, g, base, &r)) != 0) {
        gate_result_release(&r);
        return rc;
    }
    if (!r.passed) {
        /* once more before it is cached: a case that passed in either run
         * passed (a flaky baseline must not excuse a failure) */
        if ((rc = run_on_tree(j, ws, &gc, g, base, &again)) != 0) {
            gate_result_release(&again);
            gate_result_release(&r);
            return rc;
        }
        r.timed_out |= again.timed_out;
        if (again.passed) {
            r.passed = 1;
            r.exit_code = again.exit_code;
            test_cases_release(&r.cases);
            r.cases = again.cases;
            memset(&again.cases, 0, sizeof(again.cases));
        } else {
            cases_merge_passed(&r.cases, &again.cases);
        }
        gate_result_release(&again);
    }
    *passed = r.passed;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "gate", g->name);
    cJSON_AddStringToObject(p, "baseline", base);
    cJSON_AddBoolToObject(p, "passed", r.passed);
    cJSON_AddNumberToObject(p, "exit_code", r.exit_code);
    cJSON_AddNumberToObject(p, "cases", (double)r.cases.n);
    store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                    "gate.baseline", p, NULL);
    cJSON_Delete(p);
    cj = cases_to_json(&r.cases);
    /* a timed-out run says nothing lasting about the baseline: not cached */
    if (!r.timed_out && (rc = store_prepare(j->st, &s, ins)) == 0) {
        store_bind_text(s, 1, j->goal->id);
        store_bind_text(s, 2, g->name);
        store_bind_text(s, 3, g->command);
        store_bind_text(s, 4, base);
        sqlite3_bind_int(s, 5, r.passed);
        sqlite3_bind_int(s, 6, r.exit_code);
        store_bind_text(s, 7, r.cases.format);
        store_bind_text(s, 8, cj);
        store_bind_text(s, 9, r.output_hash);
        sqlite3_bind_int64(s, 10, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "gate baseline");
        store_done(s);
    }
    cJSON_free(cj);
    *cases = r.cases;
    memset(&r.cases, 0, sizeof(r.cases));
    gate_result_release(&r);
    return rc;
}

/* needle appears in hay as a whole word (case-insensitive). */
static int word_in(const char *hay, const char *needle)
{
    size_t n = strlen(needle);

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

    cJSON_ArrayForEach(c, crit) if (word_in(cJSON_GetStringValue(c), what)) return 1;
    return !criteria_only && (word_in(g->description, what) || word_in(g->title, what));
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
        strbuf_addf(sb, "%s%s", i ? ", " : "", v[i]);
    if (n > max)
        strbuf_addf(sb, " and %zu more", n - max);
}

static cJSON *list_json(char **v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

/* One gate judged on one tree against the item's baseline. */
struct gate_eval {
    struct gate_result r;
    int base_known, base_passed;
    struct case_diff diff;
    int blame;   /* the item fails for this gate */
    strbuf why;  /* the reason, for the next attempt */
    cJSON *targeted; /* the failing tests (or the gate) the goal is about */
};

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
        if (word_in(j->item->title, t->valuestring) ||
            word_in(j->item->description, t->valuestring))
            return 1;
    }
    return 0;
}

/* Are other items of the goal still to run (queued, ready, in progress,
 * blocked)? */
static int others_left(struct job_ctx *j)
{
    static const char q[] = "SELECT count(*) FROM work_items WHERE goal_id = ? AND id <> ?"
                            " AND status IN ('queued', 'ready', 'in_progress', 'verify', 'blocked')";
    sqlite3_stmt *s;
    int n = 0;

    if (store_prepare(j->st, &s, q) != 0) {
        err_clear();
        return 0;
    }
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, j->item->id);
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int(s, 0);
    store_done(s);
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

/* Run gs on tree (or in place without git), re-run a must-pass failure
 * once (flaky), compare with the baseline per test case (or per gate) and
 * decide whether the item is to blame. */
static int gate_judge(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      const struct gate_spec *gs, const char *tree, const char *base,
                      const cJSON *crit, const struct gate_eval *main, struct gate_eval *e)
{
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item->id,
                           j->claim.run_id, ws->git_common, ws->git_dir};
    struct test_cases bc = {0};
    int rc, lost = 0, git = ws->wt && j->goal->repo && tree && tree[0];

    memset(e, 0, sizeof(*e));
    strbuf_init(&e->why, 1 << 20);
    rc = git ? run_on_tree(j, ws, &gc, gs, tree, &e->r) : gates_run(&gc, gs, ws->root, &e->r);
    if (rc)
        return rc;
    if (!e->r.passed && e->r.must_pass) {
        struct gate_result again = {0};
        rc = git ? run_on_tree(j, ws, &gc, gs, tree, &again) : gates_run(&gc, gs, ws->root, &again);
        if (rc == 0 && again.passed) {
            /* flaky: it still had to pass once; judged on the passing run */
            snprintf(e->r.classification, sizeof(e->r.classification), "flaky");
            test_cases_release(&e->r.cases);
            e->r.cases = again.cases;
            memset(&again.cases, 0, sizeof(again.cases));
        }
        gate_result_release(&again); /* zeroed by run_on_tree: safe on its error too */
        err_clear();
        rc = 0;
    }
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
        lost) {
        snprintf(e->r.classification, sizeof(e->r.classification), "introduced");
        e->blame = 1;
        strbuf_addf(&e->why, "gate %s failed (exit %d%s)", e->r.name, e->r.exit_code,
                    e->r.timed_out ? ", timed out" : "");
        if (e->diff.n_introduced) {
            strbuf_addf(&e->why, "; tests that passed at the baseline %.12s fail now: ", base);
            list_add(&e->why, e->diff.introduced, e->diff.n_introduced, 50);
        }
        if (e->diff.n_new_failing) {
            strbuf_adds(&e->why, "; new tests that fail: ");
            list_add(&e->why, e->diff.new_failing, e->diff.n_new_failing, 50);
        }
        if (e->base_known && e->base_passed)
            strbuf_addf(&e->why, "; the gate passed at the baseline %.12s", base);
        else if (lost)
            strbuf_addf(&e->why, "; its test cases at the baseline %.12s are not in its "
                                 "output now (the runner crashed, or the output is not its own)",
                        base);
        strbuf_adds(&e->why, ":\n");
        return 0;
    }
    snprintf(e->r.classification, sizeof(e->r.classification), "pre-existing");
    /* failing at the baseline too: blamed only when the goal is about it */
    e->targeted = cJSON_CreateArray();
    if (!strcmp(e->diff.granularity, "test")) {
        for (size_t i = 0; i < e->diff.n_pre_existing; i++)
            if (case_targeted(j->goal, crit, e->diff.pre_existing[i]))
                cJSON_AddItemToArray(e->targeted, cJSON_CreateString(e->diff.pre_existing[i]));
    }
    if (cJSON_GetArraySize(e->targeted) == 0 && gate_targeted(j->goal, crit, plan, gs)) {
        if (!strcmp(e->diff.granularity, "test") && e->diff.n_pre_existing)
            for (size_t i = 0; i < e->diff.n_pre_existing; i++)
                cJSON_AddItemToArray(e->targeted,
                                     cJSON_CreateString(e->diff.pre_existing[i]));
        else
            cJSON_AddItemToArray(e->targeted, cJSON_CreateString(gs->name));
    }
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
        const cJSON *t;
        cJSON_ArrayForEach(t, e->targeted)
        {
            if (main && !failed_in(main, gs, t->valuestring))
                cJSON_AddItemToArray(keep, cJSON_CreateString(t->valuestring));
        }
        cJSON_Delete(e->targeted);
        e->targeted = keep;
    }
    if (cJSON_GetArraySize(e->targeted) > 0) {
        const cJSON *t;
        int k = 0;
        e->blame = 1;
        strbuf_addf(&e->why, "gate %s failed (exit %d): the failing test the goal is about still "
                             "fails: ",
                    e->r.name, e->r.exit_code);
        cJSON_ArrayForEach(t, e->targeted) strbuf_addf(&e->why, "%s%s", k++ ? ", " : "",
                                                       t->valuestring);
        strbuf_adds(&e->why, ":\n");
    }
    return 0;
}

static void why_tail(strbuf *sb, const struct gate_eval *e)
{
    size_t len = strlen(e->r.output_tail ? e->r.output_tail : ""), from = len > 3000 ? len - 3000 : 0;

    while (from < len && ((unsigned char)e->r.output_tail[from] & 0xc0) == 0x80)
        from++;
    strbuf_addf(sb, "%s%s\n", strbuf_cstr(&e->why), len ? e->r.output_tail + from : "");
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

static int gate_input(const char *path, const struct gate_plan *plan, const struct gate_eval *ev)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t pl = strlen(path);

    if (config_input(path))
        return 1;
    if (!strncmp(path, "tests/", 6) || !strncmp(path, "test/", 5) || strstr(path, "/tests/") ||
        strstr(path, "/test/") || !strncmp(base, "test_", 5) || strstr(base, "_test.") ||
        strstr(base, ".test."))
        return 1;
    for (size_t g = 0; g < plan->n; g++) {
        /* tokens of the command that name this path or a folder above it */
        const char *c = plan->gates[g].command;
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
        for (size_t k = 0; ev && k < ev[g].r.cases.n; k++) {
            const char *f = ev[g].r.cases.v[k].file;
            size_t fl = f ? strlen(f) : 0;
            if (f && (!strcmp(f, path) || (fl < pl && !strncmp(f, path, fl) && path[fl] == '/')))
                return 1;
        }
    }
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

static int add_decision(struct job_ctx *j, const char *kind, const char *aspect,
                        const char *severity, const char *note, const cJSON *data)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *text = data ? cJSON_PrintUnformatted(data) : NULL;
    int rc = store_prepare(j->st, &s, sql);

    if (rc == 0) {
        store_bind_text(s, 1, j->goal->id);
        store_bind_text(s, 2, j->item ? j->item->id : NULL);
        store_bind_text(s, 3, j->claim.run_id);
        store_bind_text(s, 4, kind);
        store_bind_text(s, 5, aspect);
        store_bind_text(s, 6, severity);
        store_bind_text(s, 7, note);
        store_bind_text(s, 8, text ? text : "{}");
        sqlite3_bind_int64(s, 9, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "decision");
        store_done(s);
    }
    cJSON_free(text);
    return rc;
}

/* The advisory review: findings become decisions; a failed call is noted
 * and does not block. */
static void review(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    strbuf user, diff;
    char *red; /* the diff holds what the model wrote: redacted like any tool result */
    cJSON *answer = NULL;
    const cJSON *f;
    int turns, rc;

    strbuf_init(&user, 1 << 20);
    strbuf_init(&diff, REVIEW_DIFF_MAX);
    if (ws->wt && vcs_diff_text(&diff, ws->wt) == ERR_TOOBIG)
        strbuf_adds(&diff, "\n[diff cut at 200 KiB]\n");
    red = redact_str(diff.len ? strbuf_cstr(&diff) : "(no git diff)", NULL);
    strbuf_addf(&user, "Work item: %s\nSummary: %s\nDiff:\n%s\n", j->item->title,
                summary ? summary : "", red);
    free(red);
    /* the review has its own budget of turns, but its call still counts
     * among the run's model calls (runs.turns) */
    turns = j->usage.turns;
    j->usage.turns = 0;
    rc = job_ask_json(j, "review", prompt_review, strbuf_cstr(&user), schema_review, &answer);
    j->usage.turns += turns;
    if (rc != 0) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "error_class", j->error_class);
        add_decision(j, "review_unavailable", NULL, NULL, strbuf_cstr(&j->failure), d);
        cJSON_Delete(d);
        j->error_class[0] = '\0';
        strbuf_reset(&j->failure);
        goto out;
    }
    add_decision(j, "review_verdict", NULL, NULL,
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")), answer);
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(answer, "findings"))
    {
        add_decision(j, "review_finding",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "aspect")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "severity")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "note")), f);
    }
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(
            p, "verdict", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")));
        cJSON_AddNumberToObject(
            p, "findings", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(answer, "findings")));
        store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id, "review.completed", p,
                        NULL);
        cJSON_Delete(p);
    }
out:
    cJSON_Delete(answer);
    strbuf_release(&diff);
    strbuf_release(&user);
}

/* Did the item leave something behind?  A non-empty diff; for doc and
 * analysis items also a file its summary names; without git, a non-empty
 * work folder. */
static int has_artifact(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    int empty = 1;

    if (!ws->wt) {
        int found = 0;
        DIR *d = opendir(ws->root);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                found = 1;
        if (d)
            closedir(d);
        return found;
    }
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
    if ((!strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")) && summary) {
        /* a path named in the summary that exists in the worktree */
        char word[512];
        const char *p = summary;
        while (*p) {
            size_t n = strcspn(p, " \t\n,;:()`'\"");
            if (n > 0 && n < sizeof(word) - 1) {
                char path[4700];
                memcpy(word, p, n);
                word[n] = '\0';
                snprintf(path, sizeof(path), "%s/%s", ws->root, word);
                if (strchr(word, '.') && !strstr(word, "..") && fs_exists(path) &&
                    !fs_is_dir(path))
                    return 1;
            }
            p += n ? n : 1;
        }
    }
    return 0;
}

static int insert_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                           const char *hash, const char *url, const cJSON *meta)
{
    static const char exists[] =
        "SELECT 1 FROM artifacts WHERE goal_id = ? AND type = ? AND ifnull(item_id, '') = ?"
        " AND ifnull(hash, '') = ifnull(?, '') AND ifnull(path, '') = ifnull(?, '')";
    static const char ins[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, ref, path, hash, url, meta,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *mt = meta ? cJSON_PrintUnformatted(meta) : NULL;
    int rc, found = 0;

    /* once per item, type, hash and path: a re-run does not record twice */
    if ((rc = store_prepare(j->st, &s, exists)) != 0)
        goto out;
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, type);
    store_bind_text(s, 3, j->item ? j->item->id : "");
    store_bind_text(s, 4, hash);
    store_bind_text(s, 5, path);
    found = sqlite3_step(s) == SQLITE_ROW;
    store_done(s);
    if (found)
        goto out;
    if ((rc = store_prepare(j->st, &s, ins)) != 0)
        goto out;
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, j->item ? j->item->id : NULL);
    store_bind_text(s, 3, j->claim.run_id);
    store_bind_text(s, 4, type);
    store_bind_text(s, 5, ref);
    store_bind_text(s, 6, path);
    store_bind_text(s, 7, hash);
    store_bind_text(s, 8, url);
    store_bind_text(s, 9, mt ? mt : "{}");
    sqlite3_bind_int64(s, 10, time_now_ms());
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "artifact");
    store_done(s);
out:
    cJSON_free(mt);
    return rc;
}

int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta)
{
    return insert_artifact(j, type, ref, path, hash, url, meta);
}

/* The item's baseline: the goal branch head before the item, i.e. the
 * head, or the parent of the item's own commit when a run that died after
 * committing left it on the branch.  "" without git. */
static void item_baseline(struct job_ctx *j, struct workspace *ws, char base[VCS_OID_HEX])
{
    char mine[VCS_OID_HEX], rev[VCS_OID_HEX + 2];

    base[0] = '\0';
    if (!ws->wt || !j->goal->repo)
        return;
    if (vcs_commit_find_by_trailer(mine, ws->wt, j->goal->base_branch, VCS_TRAILER_ITEM,
                                   j->item->id) == 0) {
        snprintf(rev, sizeof(rev), "%s^", mine);
        if (vcs_rev_commit(base, j->goal->repo, rev) != 0)
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
    rc = add_decision(j, "verification", NULL, NULL, verdict, d);
    cJSON_Delete(d);
    return rc;
}

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    struct gate_plan plan = {0};
    struct gate_eval *ev = NULL, *wev = NULL;
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item->id,
                           j->claim.run_id, ws->git_common, ws->git_dir};
    struct vcs_tree_change *ch = NULL;
    size_t nch = 0;
    char tree[64] = "", base[VCS_OID_HEX] = "", restored[VCS_OID_HEX] = "", gates_line[1024] = "";
    cJSON *crit = NULL, *inputs = cJSON_CreateArray(), *spec = NULL;
    const char **restore = NULL;
    size_t nrestore = 0;
    strbuf blame;
    int rc = 0, n_det = 0, blamed = 0, weakened = 0, verified;

    strbuf_init(&blame, 1 << 20);
    /* in_progress -> verify, with the model's summary */
    {
        static const char sql[] = "UPDATE work_items SET summary = ? WHERE id = ?";
        sqlite3_stmt *s;
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "summary", summary ? summary : "");
        if ((rc = store_tx_begin(j->st)) != 0 || (rc = store_prepare(j->st, &s, sql)) != 0) {
            cJSON_Delete(p);
            goto internal;
        }
        store_bind_text(s, 1, summary);
        store_bind_text(s, 2, j->item->id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "summary");
        store_done(s);
        if (rc == 0)
            rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "verify", "in_progress", p);
        cJSON_Delete(p);
        if (rc) {
            store_tx_rollback(j->st);
            goto internal;
        }
        if ((rc = store_tx_commit(j->st)) != 0)
            goto internal;
    }
    if ((rc = workspace_store(ws, tree, sizeof(tree))) != 0) {
        /* a change goald will not snapshot (a file over tools.max_file_mb) */
        rc = job_fail(j, rc == ERR_TOOBIG || rc == ERR_POLICY ? "policy" : "vcs", "%s: %s",
                      j->item->key, err_last());
        goto out;
    }
    item_baseline(j, ws, base);
    crit = cJSON_Parse(j->goal->success_criteria ? j->goal->success_criteria : "[]");

    /* 0. what the item changed against its baseline; protected paths */
    if (base[0] && tree[0] && vcs_tree_changes(&ch, &nch, j->goal->repo, base, tree) != 0) {
        rc = job_fail(j, "vcs", "changes against the baseline %.12s: %s", base, err_last());
        goto out;
    }
    spec = j->goal->spec ? cJSON_Parse(j->goal->spec) : NULL;
    for (size_t i = 0; i < nch; i++)
        if (path_protected(cJSON_GetObjectItemCaseSensitive(spec, "protected_paths"),
                           ch[i].path)) {
            rc = job_fail(j, "policy",
                          "commit refused: %s is protected (the goal's protected_paths)",
                          ch[i].path);
            goto out;
        }

    /* 1. deterministic gates, each on a throw-away copy of the item's tree */
    if ((rc = verify_plan(j, &plan)) != 0) {
        rc = job_fail(j, "config", "%s", err_last());
        goto out;
    }
    ev = calloc(plan.n + 1, sizeof(*ev));
    if (!ev)
        abort();
    for (size_t i = 0; i < plan.n; i++) {
        size_t o = strlen(gates_line);
        if (gate_judge(j, ws, &plan, &plan.gates[i], tree, base, crit, NULL, &ev[i]) != 0) {
            rc = job_fail(j, "sandbox", "%s", err_last());
            goto out;
        }
        n_det++;
        if (ev[i].blame) {
            blamed++;
            why_tail(&blame, &ev[i]);
        }
        snprintf(gates_line + o, sizeof(gates_line) - o, "%s%s=%s", o ? " " : "", ev[i].r.name,
                 ev[i].r.passed ? "pass"
                 : ev[i].r.classification[0] ? ev[i].r.classification
                                             : "fail");
        if ((rc = gates_store(&gc, &ev[i].r, tree, NULL)) != 0)
            goto internal;
    }

    /* 2. gate inputs the item changed: judged again with them as they were
     * at the baseline (modified and deleted ones come back, added build and
     * configuration files are dropped; added tests stay) */
    restore = calloc(nch + 1, sizeof(*restore));
    if (!restore)
        abort();
    for (size_t i = 0; i < nch; i++)
        if (gate_input(ch[i].path, &plan, ev)) {
            cJSON_AddItemToArray(inputs, cJSON_CreateString(ch[i].path));
            if (ch[i].status != 'A' || config_input(ch[i].path))
                restore[nrestore++] = ch[i].path;
        }
    /* nothing to restore (no input changed, or only tests added): the
     * restored tree is the item's, judged already */
    if (!blamed && plan.n && base[0] && nrestore) {
        strbuf files;
        strbuf_init(&files, 8192);
        for (size_t i = 0; i < nrestore; i++)
            strbuf_addf(&files, "%s%s", i ? ", " : "", restore[i]);
        if (vcs_tree_restore(restored, j->goal->repo, tree, base, restore, nrestore) != 0) {
            strbuf_release(&files);
            rc = job_fail(j, "vcs", "restoring the gate inputs: %s", err_last());
            goto out;
        }
        wev = calloc(plan.n + 1, sizeof(*wev));
        if (!wev)
            abort();
        for (size_t i = 0; i < plan.n; i++) {
            if (gate_judge(j, ws, &plan, &plan.gates[i], restored, base, crit, &ev[i], &wev[i]) != 0) {
                strbuf_release(&files);
                rc = job_fail(j, "sandbox", "%s", err_last());
                goto out;
            }
            if ((rc = gates_store(&gc, &wev[i].r, restored, NULL)) != 0) {
                strbuf_release(&files);
                goto internal;
            }
            if (wev[i].blame) {
                if (!weakened++)
                    strbuf_addf(&blame, "tests weakened: %s: with these files as they were at "
                                        "the baseline %.12s the gates fail:\n",
                                strbuf_cstr(&files), base);
                why_tail(&blame, &wev[i]);
            }
        }
        strbuf_release(&files);
        {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddItemToObject(p, "gate_inputs_changed", cJSON_Duplicate(inputs, 1));
            cJSON_AddBoolToObject(p, "tests_weakened", weakened > 0);
            store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id,
                            "gate_inputs.checked", p, NULL);
            cJSON_Delete(p);
        }
    }
    /* a test that passed at the baseline and is absent now, even with the
     * gate inputs restored: deselected or deleted, never silently */
    for (size_t i = 0; !blamed && !weakened && i < plan.n; i++) {
        const struct gate_eval *e = wev ? &wev[i] : &ev[i];
        if (!e->r.must_pass || !e->diff.n_removed)
            continue;
        if (!weakened++)
            strbuf_adds(&blame, "tests removed: ");
        else
            strbuf_adds(&blame, "; ");
        strbuf_addf(&blame, "gate %s: ", e->r.name);
        list_add(&blame, e->diff.removed, e->diff.n_removed, 50);
    }
    if (weakened && !blamed && strncmp(strbuf_cstr(&blame), "tests removed: ", 15) == 0)
        strbuf_addf(&blame, " passed at the baseline %.12s and no longer run\n", base);
    if ((rc = record_verification(j, base, tree, ev, wev, plan.n, inputs, restored, weakened > 0,
                                  blamed ? "gate" : weakened ? "tests weakened" : "ok")) != 0)
        goto internal;
    if (blamed || weakened) {
        rc = job_fail(j, "gate", "%s", strbuf_cstr(&blame));
        goto out;
    }

    /* 3. the review: advisory, only after the gates */
    review(j, ws, summary);

    /* 4. evaluation: an artifact, and evidence for each criterion */
    if (!has_artifact(j, ws, summary)) {
        rc = job_fail(j, "no_artifact", "the item left no change behind (no diff%s)",
                      !strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")
                          ? " and no file named in its summary"
                          : "");
        goto out;
    }
    /* 1: every must-pass gate passed (a flaky one on its re-run), also with
     * changed gate inputs restored; 0: no deterministic gate at all; -1
     * (stored as NULL): a must-pass gate failed the same way at the
     * baseline, so nothing proves the item */
    verified = n_det > 0;
    for (size_t i = 0; i < plan.n; i++) {
        if (!ev[i].r.passed && ev[i].r.must_pass &&
            !strcmp(ev[i].r.classification, "pre-existing"))
            verified = -1;
        if (wev && !wev[i].r.passed && wev[i].r.must_pass &&
            strcmp(wev[i].r.classification, "flaky") != 0)
            verified = -1;
    }
    {
        const cJSON *c;
        cJSON_ArrayForEach(c, crit)
        {
            const char *text = cJSON_GetStringValue(c);
            cJSON *e = cJSON_CreateObject(), *gs = cJSON_AddArrayToObject(e, "gates");
            cJSON *backed = cJSON_CreateArray(), *tests = cJSON_CreateArray();
            int named = 0;
            cJSON_AddStringToObject(e, "criterion", text);
            cJSON_AddStringToObject(e, "item", j->item->key);
            if (base[0])
                cJSON_AddStringToObject(e, "baseline", base);
            for (size_t i = 0; i < plan.n; i++)
                named += word_in(text, ev[i].r.name);
            for (size_t i = 0; i < plan.n; i++) {
                cJSON *g = cJSON_CreateObject();
                int pass = ev[i].r.passed || !strcmp(ev[i].r.classification, "flaky");
                if (wev && !(wev[i].r.passed || !strcmp(wev[i].r.classification, "flaky")))
                    pass = 0;
                cJSON_AddStringToObject(g, "gate", ev[i].r.name);
                cJSON_AddNumberToObject(g, "exit_code", ev[i].r.exit_code);
                cJSON_AddBoolToObject(g, "passed", ev[i].r.passed);
                cJSON_AddStringToObject(g, "classification", ev[i].r.classification);
                cJSON_AddStringToObject(g, "granularity", ev[i].diff.granularity);
                cJSON_AddStringToObject(g, "output_hash", ev[i].r.output_hash);
                cJSON_AddStringToObject(g, "tree_id", tree);
                cJSON_AddItemToArray(gs, g);
                /* a gate backs the criterion when it passed and the
                 * criterion names it (or names no gate at all) */
                if (pass && (!named || word_in(text, ev[i].r.name)))
                    cJSON_AddItemToArray(backed, cJSON_CreateString(ev[i].r.name));
                for (size_t k = 0; k < ev[i].r.cases.n; k++)
                    if (ev[i].r.cases.v[k].status == TEST_PASS &&
                        (word_in(text, ev[i].r.cases.v[k].id)))
                        cJSON_AddItemToArray(tests, cJSON_CreateString(ev[i].r.cases.v[k].id));
            }
            cJSON_AddItemToObject(e, "backed_by", backed);
            cJSON_AddItemToObject(e, "tests", tests);
            cJSON_AddStringToObject(e, "evidence",
                                    cJSON_GetArraySize(backed)  ? "gates"
                                    : cJSON_GetArraySize(tests) ? "tests"
                                                                : "none");
            cJSON_AddItemToObject(e, "gate_inputs_changed", cJSON_Duplicate(inputs, 1));
            cJSON_AddBoolToObject(e, "unverified", verified == 0);
            if ((rc = add_decision(j, "evidence", NULL, NULL, text, e)) != 0) {
                cJSON_Delete(e);
                goto internal;
            }
            cJSON_Delete(e);
        }
    }

    /* 4. the item's commit (idempotent: found by its Work-Item-Id trailer) */
    {
        struct vcs_commit_result cr = {0};
        char *sha = NULL;
        if (ws->wt) {
            struct vcs_commit_msg msg;
            strbuf body;
            strbuf_init(&body, 1 << 20);
            strbuf_addf(&body, "%s\n\nEvidence: %s%s", summary ? summary : "",
                        gates_line[0] ? gates_line : "no deterministic gate",
                        verified == 0 ? " (UNVERIFIED)" : "");
            memset(&msg, 0, sizeof(msg));
            msg.title = j->item->title;
            msg.body = strbuf_cstr(&body);
            msg.goal_id = j->goal->id;
            msg.work_item_id = j->item->id;
            msg.gates = gates_line[0] ? gates_line : "none";
            rc = vcs_commit_item(&cr, ws->wt, j->goal->base_branch, &msg);
            strbuf_release(&body);
            if (rc) {
                vcs_commit_result_release(&cr);
                rc = rc == ERR_TOOBIG || rc == ERR_POLICY
                         ? job_fail(j, "policy", "%s: %s", j->item->key, err_last())
                         : job_fail(j, "vcs", "commit: %s", err_last());
                goto out;
            }
            if (cr.sha[0]) {
                cJSON *meta = cJSON_CreateObject();
                cJSON_AddBoolToObject(meta, "created", cr.created);
                cJSON_AddStringToObject(meta, "gates", gates_line);
                insert_artifact(j, "commit", j->goal->branch, NULL, cr.sha, NULL, meta);
                cJSON_Delete(meta);
                for (size_t i = 0; i < cr.nfiles; i++) {
                    cJSON *fm = cJSON_CreateObject();
                    char st[2] = {cr.files[i].status, '\0'};
                    cJSON_AddStringToObject(fm, "status", st);
                    cJSON_AddStringToObject(fm, "commit", cr.sha);
                    insert_artifact(j, "file", NULL, cr.files[i].path,
                                    cr.files[i].sha256[0] ? cr.files[i].sha256 : NULL, NULL, fm);
                    cJSON_Delete(fm);
                }
                sha = cr.sha;
            }
        }
        fault_point("verify.after_commit");
        for (size_t i = 0; i < plan.n; i++) {
            const struct gate_result *r = &ev[i].r;
            if (r->counts.format) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddStringToObject(m, "gate", r->name);
                cJSON_AddStringToObject(m, "format", r->counts.format);
                cJSON_AddNumberToObject(m, "passed", r->counts.passed);
                cJSON_AddNumberToObject(m, "failed", r->counts.failed);
                cJSON_AddNumberToObject(m, "skipped", r->counts.skipped);
                cJSON_AddNumberToObject(m, "total", r->counts.total);
                insert_artifact(j, "test_results", r->name, NULL, r->output_hash, NULL, m);
                cJSON_Delete(m);
            }
        }

        /* 5. done, in one transaction with its evidence flags */
        {
            static const char sql[] = "UPDATE work_items SET verified = ?, commit_sha = ?"
                                      " WHERE id = ?";
            sqlite3_stmt *s;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddBoolToObject(p, "verified", verified == 1);
            cJSON_AddStringToObject(p, "gates", gates_line);
            if (sha)
                cJSON_AddStringToObject(p, "commit", sha);
            if ((rc = store_tx_begin(j->st)) == 0) {
                if ((rc = store_prepare(j->st, &s, sql)) == 0) {
                    if (verified < 0)
                        sqlite3_bind_null(s, 1);
                    else
                        sqlite3_bind_int(s, 1, verified);
                    store_bind_text(s, 2, sha);
                    store_bind_text(s, 3, j->item->id);
                    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "verified");
                    store_done(s);
                }
                if (rc == 0)
                    rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "done", "verify", p);
                if (rc == 0)
                    rc = plan_promote_ready(j->st, j->goal->id, NULL);
                if (rc == 0)
                    rc = store_tx_commit(j->st);
                else
                    store_tx_rollback(j->st);
            }
            cJSON_Delete(p);
        }
        vcs_commit_result_release(&cr);
        if (rc)
            goto internal;
    }

    /* publishing the goal, once every item is finished, is a unit of its
     * own (claim.c), so that a failed push is retried without redoing the
     * item */
    goto out;
internal:
    rc = job_fail(j, "internal", "verification: %s", err_last());
out:
    for (size_t i = 0; ev && i < plan.n; i++)
        gate_eval_release(&ev[i]);
    for (size_t i = 0; wev && i < plan.n; i++)
        gate_eval_release(&wev[i]);
    free(ev);
    free(wev);
    free(restore);
    vcs_tree_changes_free(ch, nch);
    gates_plan_release(&plan);
    cJSON_Delete(crit);
    cJSON_Delete(inputs);
    cJSON_Delete(spec);
    strbuf_release(&blame);
    return rc;
}

/* The goal's starting commit: the baseline of the first item verified
 * (nothing was committed on the goal branch before it). */
static void goal_start(struct job_ctx *j, char *out, size_t n)
{
    static const char q[] = "SELECT json_extract(data, '$.baseline') FROM decisions"
                            " WHERE goal_id = ? AND kind = 'verification'"
                            " AND json_extract(data, '$.baseline') IS NOT NULL ORDER BY id LIMIT 1";
    sqlite3_stmt *s;

    out[0] = '\0';
    if (store_prepare(j->st, &s, q) != 0) {
        err_clear();
        return;
    }
    store_bind_text(s, 1, j->goal->id);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, n, "%s", sqlite3_column_text(s, 0));
    store_done(s);
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
        strbuf_addf(blame, "gate %s fails on the final branch head %.12s%s (exit %d)%s", r.name,
                    head, restored ? " with the gate inputs as they were when the goal started"
                                   : "",
                    r.exit_code,
                    introduced ? ", and it did not fail like this when the goal started"
                               : ": the goal set out to fix it");
        if (diff.n_introduced || diff.n_new_failing) {
            strbuf_adds(blame, "; failing now: ");
            list_add(blame, diff.introduced, diff.n_introduced, 50);
            if (diff.n_introduced && diff.n_new_failing)
                strbuf_adds(blame, ", ");
            list_add(blame, diff.new_failing, diff.n_new_failing, 50);
        } else if (diff.n_pre_existing) {
            strbuf_adds(blame, "; still failing: ");
            list_add(blame, diff.pre_existing, diff.n_pre_existing, 50);
        }
        strbuf_adds(blame, "\n");
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
    if ((rc = vcs_tree_changes(&ch, &nch, j->goal->repo, start, head)) != 0)
        return rc;
    paths = calloc(nch + 1, sizeof(*paths));
    if (!paths)
        abort();
    for (size_t i = 0; i < nch; i++)
        if (gate_input(ch[i].path, plan, NULL) && (ch[i].status != 'A' || config_input(ch[i].path)))
            paths[n++] = ch[i].path;
    if (n)
        rc = vcs_tree_restore(restored, j->goal->repo, head, start, paths, n);
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
    strbuf_init(&blame, 1 << 20);
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
    if (!g->worktree || vcs_worktree_open(&ws.wt, g->repo, g->worktree) != 0) {
        rc = job_fail(j, "vcs", "final check: the goal's worktree %s: %s",
                      g->worktree ? g->worktree : "(none)",
                      g->worktree ? err_last() : "never made");
        goto out;
    }
    snprintf(ws.root, sizeof(ws.root), "%s", vcs_worktree_path(ws.wt));
    ws.git_common = gc.git_common = vcs_worktree_git_common(ws.wt);
    ws.git_dir = gc.git_dir = vcs_worktree_git_dir(ws.wt);
    if (vcs_rev_commit(head, g->repo, g->branch) != 0) {
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
    if ((rc = add_decision(j, "final_check", NULL, NULL, blocked ? "blocked" : "ok", d)) != 0) {
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
