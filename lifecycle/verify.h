/*
 * verify.h - stage 5, verification: the deterministic gates of a completed work
 * item (verify.c and the verify_*.c files it drives; what they share is in
 * verify_internal.h): gates in the sandbox on throw-away copies of the
 * item's tree, baseline classification of failures, the gate inputs the
 * item changed judged again as they were, and a failure of class `gate`
 * whose reason (the failing output) goes into the next attempt.  Then the
 * advisory review (review.c) and the evaluation (evaluate.c: evidence per
 * success criterion, the item's commit, `done`).  Also the goal's final
 * check of its must-pass gates on the branch head before publishing.
 * What the gates found, and the records every stage writes (decisions,
 * artifacts), are in verify_state.h, which this header includes.
 */
#ifndef GOALD_LIFECYCLE_VERIFY_H
#define GOALD_LIFECYCLE_VERIFY_H

#include <stddef.h>

#include "gates/gates.h"
#include "lifecycle/verify_state.h"

struct job_ctx;
struct workspace;
struct cJSON;

/* The gates this goal's items are verified with: the goal's verification,
 * except that a read-only goal (allowed actions without bash, write and
 * edit) never runs gates the model proposed or goald detected — only the
 * goal author's own.  Release with gates_plan_release(). */
int verify_plan(struct job_ctx *j, struct gate_plan *plan);

/* Run g on a throw-away copy of the worktree as it would be committed
 * (exported from git into a folder beside the database, bound at the
 * worktree's path in the sandbox): what the gate writes or deletes is
 * discarded.  Without git, in the work folder itself.  tree (at least
 * 41 bytes) caches the stored snapshot across the gates of one run_gates
 * call: "" the first time (it is filled), then passed back as it is, so
 * the worktree is staged once per call, not once per gate.  It always
 * runs (a re-run of a failing gate is never a reused pass); when it is
 * the first run of g on that tree in the goal, it is recorded as such
 * (lifecycle/verify_reuse.c). */
int verify_gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, struct gate_result *out);

/* Who asked for a gate run: goald itself (verification, a baseline, the
 * final check) or the model (its run_gates tool).  Each keeps first runs
 * of its own: the model chooses when its runs happen and on which trees
 * (it can make a new tree at will), so a pass it ran never stands for a
 * run goald would have made. */
enum verify_origin { VERIFY_BY_GOALD = 0, VERIFY_BY_MODEL = 1 };

/* The one gate loop (the run_gates tool and verification): each gate of
 * plan run once with verify_gate_run() on tree, in order (a gate whose
 * first run on that tree in the goal, by the same origin, passed at once
 * is not run again: that pass is its result, "reused from run X"), its
 * result handed to fn, which owns it (gate_result_release).  Stops at the
 * first gate that could not be run (its error; err_last names it) or at
 * fn's first non-zero return, which is returned. */
int verify_gates_each(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      char *tree, enum verify_origin by,
                      int (*fn)(void *arg, size_t i, struct gate_result *r), void *arg);

/* The completion rule (docs/lifecycle.md): run the goal's must-pass gates
 * once more on the final branch head.  0 with *partial = 0 when they pass
 * (a flaky one on its re-run); 0 with *partial = 1 when one still fails
 * only with failures that were there when the goal started and that the
 * goal did not set out to fix (a "final_check" decision lists them);
 * ERR_FAIL (job_fail class gate) otherwise.  Without a repository or
 * worktree, nothing is run. */
int verify_goal_final(struct job_ctx *j, int *partial);

/* Stages 5 and 6 for the item the model completed with summary: its
 * gates (here), the review (review.c), the evaluation and commit
 * (evaluate.c).  0 when the item is done; ERR_FAIL after job_fail(). */
int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary);

#endif
