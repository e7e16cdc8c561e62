/*
 * verify_internal.h - what the files of stage 5 share, and nothing else
 * includes: verify.c (the item's orchestration), verify_run.c (gates on
 * throw-away copies of a tree), verify_baseline.c (the baseline and its
 * cache), verify_blame.c (what the goal targets, comparing and blaming,
 * the judge loop), verify_weakened.c (gate inputs, the restored run,
 * removed tests), verify_record.c (decisions, artifacts, the verification
 * record) and verify_final.c (the goal's final judgement).
 */
#ifndef GOALD_LIFECYCLE_VERIFY_INTERNAL_H
#define GOALD_LIFECYCLE_VERIFY_INTERNAL_H

#include <stddef.h>

#include "gates/gates.h"
#include "gates/roles.h"
#include "lifecycle/verify.h"
#include "util/hash.h"
#include "util/id.h"
#include "util/strbuf.h"
#include "vcs/tree.h"

struct cJSON;
struct criteria;
struct goal;
struct job_ctx;
struct workspace;

/* ---- verify_run.c: a gate on a given tree ---- */

/* Run g with gc (the store in gc may be NULL: nothing is recorded) on
 * the tree (or commit) `tree` of the goal's repository, exported to a
 * folder beside the database and bound at the worktree's path: the gate's
 * side effects stay in that copy, which is removed afterwards.  *out is
 * zeroed first, so the caller releases it (gate_result_release) on error
 * too. */
int verify_run_on_tree(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                       const struct gate_spec *g, const char *tree, struct gate_result *out);

/* verify_run_on_tree(), once per tree: tree (a tree or a commit) peeled
 * to its tree id; with reuse, a reusable first run of g on that tree in
 * the goal (verify_tree_reused) is the result and nothing runs; else g
 * runs and, when it is the tree's first run, is recorded
 * (verify_tree_record).  by: whose first runs these are (verify.h).
 * A warm run (verify_warm.c) is keyed apart from a cold one.
 * Without a tree id (no git) g just runs.  *out is zeroed first: the
 * caller releases it, also on error. */
int verify_run_once(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                    const struct gate_spec *g, const char *tree, int reuse,
                    enum verify_origin by, struct gate_result *out);

/* ---- verify_warm.c: warm build folders ---- */

enum warm_mode {
    WARM_NONE = 0, /* cold: as every run was before build folders were kept */
    WARM_TRUSTED,  /* the start's tree, no warm folder yet: this run's build folders are kept */
    WARM_COPY      /* a copy of the start's build folders is laid into the run's copy */
};

struct warm_run {
    enum warm_mode mode;
    char start[VCS_OID_HEX]; /* the trusted tree: the base branch tip's */
    char dir[4400];          /* the warm folder: where it is (WARM_COPY) or goes (WARM_TRUSTED) */
    char id[HASH_HEX_SIZE];  /* WARM_COPY: the warm folder's identity, in the reuse key */
    /* WARM_NONE on another tree than the start, with no warm folder at
     * this path yet: a trusted run on the start first would make this run
     * warm (verify_warm_prime) */
    int primable;
};

/* How g's run on tree (a tree or a commit) goes, into w: cold when g
 * declares no build folder, gc->cold (the final check), or without a
 * repository or base branch; trusted when tree is the base branch tip's
 * and no warm folder of g at ws's path was kept yet; warm when one was. */
void verify_warm_plan(struct warm_run *w, struct job_ctx *j, const struct workspace *ws,
                      const struct gates_ctx *gc, const struct gate_spec *g, const char *tree);

/* 1 when this caller is the one to make w's warm folder by a trusted run
 * on w->start first (w->primable): at most one such attempt per gate,
 * path and start, whatever it leaves (a run that timed out, or a build
 * over the cap, keeps nothing and is not tried again). */
int verify_warm_prime(const struct warm_run *w);

/* Before g runs in copy, an export of tree: the files' times set (all
 * old when trusted; the start's files old when warm) and, when warm, a
 * copy of the kept build folders laid in (what the export has is kept).
 * Nothing for a cold run.  An error leaves the run colder, never warmer
 * than planned: the caller may go on (no folder is kept then). */
int verify_warm_enter(const struct warm_run *w, struct job_ctx *j, const struct gate_spec *g,
                      const char *tree, const char *copy);

/* After a trusted run r (not timed out) in copy: its build folders that
 * are folders (not links) moved out, and kept as the warm folder unless
 * one was kept first or they exceed the cap; a gate.build_kept event
 * names them.  Failures are logged: the runs stay cold. */
void verify_warm_keep(const struct warm_run *w, struct job_ctx *j, const struct gate_spec *g,
                      const char *copy, const struct gate_result *r);

/* ---- verify_reuse.c: a gate runs once per tree ---- */

/* What a gate's first run on a tree is keyed by besides the gate (all
 * borrowed): the tree, the folder its copy is bound at, whose runs these
 * are (verify.h), and the warm folder it had (NULL: built from nothing). */
struct verify_run_key {
    const char *tree_id;
    const char *root;
    enum verify_origin by;
    const char *warm; /* struct warm_run's id when WARM_COPY, else NULL */
};

/* The first run of g on k's tree in j's goal by the same origin, with the
 * same digest (gates_run_env) and its copy bound at the same root, when
 * it passed at once: *found 1 and *out filled as that pass (its note
 * "reused from run X"; the caller releases it), from (ID_SIZE bytes, may
 * be NULL) its run, and a gate.reused event.  A warm run (k->warm) is
 * first looked up cold: a cold first run on the tree decides when there
 * is one (a cold pass stands for a warm run, a warm pass never for a cold
 * one).  *found 0 when there is none or it failed.  An error of the
 * lookup is returned. */
int verify_tree_reused(struct job_ctx *j, const struct gate_spec *g,
                       const struct verify_run_key *k, struct gate_result *out,
                       char from[ID_SIZE], int *found);

/* r (borrowed), a run of g keyed by k, recorded as the tree's first run
 * by that origin, warm or cold, unless it has one (then nothing changes;
 * a warm run also records nothing when a cold first run is there);
 * reusable when it passed at once, did not time out and its test cases
 * are complete. */
int verify_tree_record(struct job_ctx *j, const struct gate_spec *g,
                       const struct verify_run_key *k,
                       const struct gate_result *r) GOALD_MUST_CHECK;

/* ---- verify_baseline.c: the baseline and its cache ---- */

/* The result of g on the commit base into *passed and *cases (the caller
 * releases them with test_cases_release, also on error), cached per goal,
 * gate command and tree in gate_baselines: a retry does not run it again,
 * nor the next item, whose baseline is the commit of an item whose gates
 * passed on that very tree (verify_baseline_cache). */
int verify_baseline_get(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                        const char *base, int *passed, struct test_cases *cases);

/* r (borrowed), g's result on the tree tree, cached in gate_baselines: a
 * timed-out run says nothing lasting and is not. */
int verify_baseline_cache(struct job_ctx *j, const struct gate_spec *g, const char *tree,
                          const struct gate_result *r);

/* c's cases as JSON text ([[id, status, file], ...]; cJSON_free it), and
 * back into c (format as stored; the caller releases c). */
char *verify_cases_to_json(const struct test_cases *c);
void verify_cases_from_json(struct test_cases *c, const char *format, const char *json);

/* The item's baseline into base: the goal branch head before the item,
 * i.e. the head, or the parent of the item's own commit when a run that
 * died after committing left it on the branch.  "" without git. */
void verify_item_baseline(struct job_ctx *j, struct workspace *ws, char base[VCS_OID_HEX]);

/* ---- verify_blame.c: what the goal targets, comparing and blaming ---- */

/* A test case the goal set out to fix: its id, or its last component
 * (after "::", " > " or "/", at least 4 characters), is named in a
 * criterion of crit (borrowed), the description or the title. */
int verify_case_targeted(const struct goal *g, const struct criteria *crit, const char *id);

/* The goal is about gate gs: it is the plan's only must-pass gate, or a
 * criterion names it. */
int verify_gate_targeted(const struct goal *g, const struct criteria *crit,
                         const struct gate_plan *plan, const struct gate_spec *gs);

/* The baseline's run had parsed test cases and this one has none, or
 * another format: the runner crashed, or its output was forged. */
int verify_format_lost(const struct test_cases *base, const struct test_cases *now);

/* The first max of v (n entries, borrowed) into sb, comma-separated, and
 * " and N more" when there are more. */
void verify_list_add(strbuf *sb, char **v, size_t n, size_t max);

/* Every gate of vs->plan judged on tree (vs->tree or vs->restored) into
 * out (vs->plan.n entries, zeroed; owned by vs and released by
 * verify_state_release), each result stored as evidence; main is NULL,
 * or vs->ev when judging the restored tree.  0, or ERR_FAIL after
 * job_fail(): sandbox when a gate could not be run, internal when its
 * result could not be stored. */
int verify_judge_all(struct job_ctx *j, struct workspace *ws, struct verify_state *vs, char *tree,
                     const struct gate_eval *main, struct gate_eval *out);

/* e's reason and the last 3000 bytes of its output into sb. */
void verify_why_tail(strbuf *sb, const struct gate_eval *e);

/* ---- verify_weakened.c: gate inputs, the restored run, removed tests ---- */

/* The role of path (gates/roles.c for the runners of plan; a path a
 * parsed test case of ev points at is a test; ev may be NULL).  added:
 * the change added it. */
enum path_role verify_path_role(const char *path, int added, const struct gate_plan *plan,
                                const struct gate_eval *ev);

/* The item's changes ch (nch, borrowed) that are not product appended to
 * vs->inputs and vs->roles, and all of them into restore (nch + 1
 * entries, the caller's; the paths are borrowed from ch): they go back to
 * the baseline for the product-only run.  Returns how many. */
size_t verify_inputs_changed(struct verify_state *vs, const struct vcs_tree_change *ch, size_t nch,
                             const char **restore);

/* The gates judged again (into vs->wev, owned by vs) on the product-only
 * tree: the item's tree with the restore paths as they were at the
 * baseline.  A gate the item is blamed for there means its tests were
 * weakened, or its product does not fix what the goal is about (reasons
 * into blame, *weakened counts them).  0, or ERR_FAIL after job_fail(). */
int verify_restored_pass(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                         const char **restore, size_t nrestore, strbuf *blame, int *weakened);

/* Tests that passed at the baseline and no longer run on the item's tree
 * or on the product-only tree (vs->wev), and failing tests the goal is
 * about that no longer run: named in blame, counted in *weakened. */
void verify_tests_removed(const struct verify_state *vs, const struct job_ctx *j, strbuf *blame,
                          int *weakened);

/* ---- verify_pins.c: the item's tests against the baseline's product ---- */

/* When the item changed tests (ch, nch: its changes), its must-pass gates
 * compared per test case run on the baseline with those changes laid over
 * it (vs->old_product), and vs->pins (owned by vs) says per gate which new
 * cases fail before and pass after, which pass on both, and which changed
 * cases pin the new behaviour.  0, or ERR_FAIL after job_fail(). */
int verify_new_tests(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                     const struct vcs_tree_change *ch, size_t nch);

/* 1 when every failing case of cases (gate i on the product-only tree) is
 * one vs->pins says the item's new version pins, or one a human accepted
 * (vs->waived), and one fails. */
int verify_pinned_only(const struct verify_state *vs, size_t i, const struct test_cases *cases);

void verify_pins_release(struct gate_pins *p);

/* The cases a human accepted for j's item (its latest waiver decision)
 * into vs->waived (an array, owned by vs; empty when none).  0, or
 * ERR_FAIL after job_fail(). */
int verify_load_waiver(struct verify_state *vs, struct job_ctx *j);

/* The accepted test changes of the goal's done items (their latest
 * verification's accepted_test_changes) into *out, an array of case ids
 * the caller deletes.  0, or the store's error. */
int verify_goal_accepted(store *st, const char *goal_id, struct cJSON **out);

/* 1 when cases has failures and every one is among accepted (case ids). */
int verify_failures_accepted(const struct cJSON *accepted, const struct test_cases *cases);

/* ---- verify_record.c: the verification record ---- */

/* The item's verification decision from vs (borrowed): the baseline, the
 * granularity, the test cases introduced / pre-existing / fixed, the gate
 * inputs changed, weakened (0 or 1) and verdict. */
int verify_record_verification(struct job_ctx *j, const struct verify_state *vs, int weakened,
                               const char *verdict) GOALD_MUST_CHECK;

#endif
