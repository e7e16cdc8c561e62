/*
 * verify.h - verification and evaluation of a completed work item (see
 * verify.c): gates in the sandbox, baseline classification of failures,
 * the advisory review, evidence per success criterion, the item's commit,
 * and `done` — or a failure of class `gate` / `no_artifact` whose reason
 * (the failing output) goes into the next attempt.
 */
#ifndef GOALD_LIFECYCLE_VERIFY_H
#define GOALD_LIFECYCLE_VERIFY_H

struct job_ctx;
struct workspace;
struct cJSON;
struct gate_plan;
struct gate_spec;
struct gate_result;

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
 * the worktree is staged once per call, not once per gate. */
int verify_gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, struct gate_result *out);

/* The completion rule (docs/lifecycle.md): run the goal's must-pass gates
 * once more on the final branch head.  0 with *partial = 0 when they pass
 * (a flaky one on its re-run); 0 with *partial = 1 when one still fails
 * only with failures that were there when the goal started and that the
 * goal did not set out to fix (a "final_check" decision lists them);
 * ERR_FAIL (job_fail class gate) otherwise.  Without a repository or
 * worktree, nothing is run. */
int verify_goal_final(struct job_ctx *j, int *partial);

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary);

/* Record an artifact of j's goal (and item, when j has one) once: a second
 * call with the same type, item, hash and path changes nothing. */
int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta);

#endif
