/*
 * verify_run.c - stage 5, verification: which gates run, and a gate run on
 * a given tree.
 *
 * Top to bottom: the goal's gate plan (verify_plan: a read-only goal runs
 * only the gates its author wrote); a gate run on a tree of the goal's
 * repository exported to a throw-away copy beside the database, its
 * committed report file dropped first so only what the gate writes is read
 * (verify_run_on_tree); the same once per tree, a reusable first run
 * standing for a later one (verify_run_once, verify_reuse.c); the same on
 * the worktree as it would be committed, stored once per call
 * (verify_gate_run: a re-run, never reused); and the one gate loop that
 * the run_gates tool and verification share (verify_gates_each: a
 * reusable first run on the tree stands for the run).
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/intake.h"
#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "sandbox/path.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "vcs/export.h"
#include "vcs/tree.h"

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
    const char *source = j->elab->verification_source ? j->elab->verification_source : "goal";
    int rc;

    if ((rc = gates_plan_parse(plan, j->goal->verification)) == 0 && goal_readonly(j->goal) &&
        strcmp(source, "goal") != 0)
        gates_plan_release(plan); /* model-chosen commands never run for a read-only goal */
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
 * to a folder beside the database and bound at the worktree's path, warm
 * or cold as w says (verify_warm.c): the gate's side effects stay in that
 * copy, which is removed afterwards (a trusted run's build folders moved
 * out of it first). */
static int run_on_tree_as(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                          const struct gate_spec *g, const char *tree,
                          const struct warm_run *w, struct gate_result *out)
{
    static unsigned seq;
    char dir[4096], copy[4400];
    int rc, keep = w->mode == WARM_TRUSTED;

    memset(out, 0, sizeof(*out));
    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
        return rc;
    if ((rc = path_fmt(copy, sizeof(copy), "%s/gate-%s-%u", dir, j->claim.run_id, seq++)) != 0)
        return err_wrap(rc, "the gate's copy of the tree");
    fs_remove_tree(copy);
    if ((rc = vcs_export(j->repo, tree, copy)) == 0 && g->report)
        rc = drop_report(copy, g->report);
    if (rc == 0 && verify_warm_enter(w, j, g, tree, copy) != 0) {
        log_warn("gate %s: its build folders: %s", g->name, err_last());
        err_clear(); /* colder than planned, never warmer: it runs, nothing is kept */
        keep = 0;
    }
    if (rc == 0)
        rc = gates_run_at(gc, g, ws->root, copy, out);
    if (rc == 0 && keep)
        verify_warm_keep(w, j, g, copy, out);
    if (fs_remove_tree(copy) != 0)
        log_warn("gate copy %s not removed: %s", copy, err_last());
    return rc;
}

int verify_run_on_tree(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                       const struct gate_spec *g, const char *tree, struct gate_result *out)
{
    struct warm_run w;

    verify_warm_plan(&w, j, ws, gc, g, tree);
    return run_on_tree_as(j, ws, gc, g, tree, &w, out);
}

int verify_run_once(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                    const struct gate_spec *g, const char *tree, int reuse,
                    enum verify_origin by, struct gate_result *out)
{
    char tree_id[VCS_OID_HEX];
    struct verify_run_key k = {tree_id, ws->root, by, NULL};
    struct warm_run w;
    int rc, found = 0;

    memset(out, 0, sizeof(*out));
    if (vcs_rev_tree(tree_id, j->repo, tree) != 0) {
        err_clear(); /* no tree to key it by: it just runs */
        return verify_run_on_tree(j, ws, gc, g, tree, out);
    }
    /* planned once: the key names the warm folder the run gets */
    verify_warm_plan(&w, j, ws, gc, g, tree);
    if (verify_warm_prime(&w)) {
        /* no warm folder at this path yet: the gate on the user's tree
         * first (a trusted run, recorded as that tree's first run), so
         * that this run and the later ones here build only what changed */
        struct gates_ctx quiet = *gc;
        struct gate_result start;
        quiet.st = NULL; /* not one of this run's gate.completed: as a baseline's */
        if (verify_run_once(j, ws, &quiet, g, w.start, 1, VERIFY_BY_GOALD, &start) != 0) {
            log_warn("gate %s: its build folders not made on the start: %s", g->name,
                     err_last());
            err_clear(); /* this run builds from nothing, then */
        }
        gate_result_release(&start);
        verify_warm_plan(&w, j, ws, gc, g, tree);
    }
    k.warm = w.mode == WARM_COPY ? w.id : NULL;
    if (reuse && verify_tree_reused(j, g, &k, out, NULL, &found) != 0) {
        log_warn("gate %s: its first run on tree %.12s not read: %s", g->name, tree_id,
                 err_last());
        err_clear(); /* it runs, then */
        found = 0;
    }
    if (found)
        return 0;
    if ((rc = run_on_tree_as(j, ws, gc, g, tree, &w, out)) != 0)
        return rc;
    return verify_tree_record(j, g, &k, out);
}

/* g on the worktree as it would be committed (stored into tree once),
 * stored as the item's; reuse: a reusable first run on that tree
 * stands for it. */
static int gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, int reuse, enum verify_origin by, struct gate_result *out)
{
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item ? j->item->id : NULL,
                           j->claim.run_id, ws->git_common, ws->git_dir, 0};
    int rc;

    if (!ws->wt || !j->repo)
        return gates_run(&gc, g, ws->root, out); /* no git: no snapshot to copy */
    if (!tree[0] && (rc = workspace_store(ws, tree, VCS_OID_HEX)) != 0)
        return rc;
    return verify_run_once(j, ws, &gc, g, tree, reuse, by, out);
}

int verify_gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, struct gate_result *out)
{
    return gate_run(j, ws, g, tree, 0, VERIFY_BY_GOALD, out);
}

int verify_gates_each(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      char *tree, enum verify_origin by,
                      int (*fn)(void *arg, size_t i, struct gate_result *r), void *arg)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct gate_result r = {0};
        int rc;
        if ((rc = gate_run(j, ws, &plan->gates[i], tree, 1, by, &r)) != 0) {
            gate_result_release(&r);
            return rc;
        }
        if ((rc = fn(arg, i, &r)) != 0)
            return rc;
    }
    return 0;
}
