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
 */
#ifndef GOALD_LIFECYCLE_VERIFY_H
#define GOALD_LIFECYCLE_VERIFY_H

#include <stddef.h>

#include "gates/gates.h"
#include "util/strbuf.h"
#include "vcs/worktree.h"

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
 * the worktree is staged once per call, not once per gate. */
int verify_gate_run(struct job_ctx *j, struct workspace *ws, const struct gate_spec *g,
                    char *tree, struct gate_result *out);

/* The one gate loop (the run_gates tool and verification): each gate of
 * plan run once with verify_gate_run() on tree, in order, its result
 * handed to fn, which owns it (gate_result_release).  Stops at the first
 * gate that could not be run (its error; err_last names it) or at fn's
 * first non-zero return, which is returned. */
int verify_gates_each(struct job_ctx *j, struct workspace *ws, const struct gate_plan *plan,
                      char *tree, int (*fn)(void *arg, size_t i, struct gate_result *r),
                      void *arg);

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

/* Record an artifact of j's goal (and item, when j has one) once: a second
 * call with the same type, item, hash and path changes nothing. */
int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta) GOALD_MUST_CHECK;

/* Record a decision of j's goal (item and run when j has them); aspect,
 * severity and note may be NULL; data (may be NULL) is borrowed. */
int verify_decision(struct job_ctx *j, const char *kind, const char *aspect, const char *severity,
                    const char *note, const struct cJSON *data) GOALD_MUST_CHECK;

/* needle appears in hay as a whole word (case-insensitive); 0 when either
 * is NULL or empty. */
int verify_word_in(const char *hay, const char *needle);

/* One gate judged on one tree against the item's baseline. */
struct gate_eval {
    struct gate_result r;
    int base_known, base_passed;
    struct case_diff diff;
    int blame;              /* the item fails for this gate */
    int pinned_only;        /* on the product-only tree: its only failures are tests whose
                               new version pins the new behaviour (verify_pins.c) */
    int inconclusive;       /* on the product-only tree: the baseline ran no test case of
                               this gate, so its original tests cannot judge the product */
    strbuf why;             /* the reason, for the next attempt */
    struct cJSON *targeted; /* the failing tests (or the gate) the goal is about */
};

/* A gate's cases judged with the baseline's product (verify_pins.c):
 * the lists hold case ids, owned here. */
struct gate_pins {
    int ran;                /* the gate ran on the baseline with the item's tests */
    char output_hash[HASH_HEX_SIZE]; /* of that run's output */
    char **fail_to_pass;    size_t n_fail_to_pass;   /* new: fail before, pass after */
    char **not_exercising;  size_t n_not_exercising; /* new: pass before and after */
    char **pinned;          size_t n_pinned;         /* changed: new version pins */
};

/* What the deterministic gates found for an item, handed to the
 * evaluation: ev[i] judged gate i of plan on tree, wev[i] (wev NULL when
 * nothing was restored) on restored, the product-only tree: the item's
 * tree with its changes that are not product as they were at base.  Everything is owned here and freed
 * by verify_state_release(). */
struct verify_state {
    struct gate_plan plan;
    struct gate_eval *ev, *wev;
    char tree[64], base[VCS_OID_HEX], restored[VCS_OID_HEX];
    char old_product[VCS_OID_HEX]; /* the baseline with the item's tests, "" when none */
    struct gate_pins *pins;        /* plan.n entries, or NULL when not run */
    struct cJSON *waived;          /* case ids a human accepted for the item (an array) */
    char gates_line[1024]; /* "name=pass name=introduced ..." for the commit */
    struct cJSON *crit;    /* the goal's success criteria (an array) */
    struct cJSON *inputs;  /* the item's changes that are not product (paths) */
    struct cJSON *roles;   /* {path: role} of those (gates/roles.h) */
    int n_det;             /* deterministic gates run */
    int only_new_tests;    /* every change put back for the product-only run is a test
                              module the item added (no config, support or shadow file,
                              nothing that was there at the baseline) */
};

void verify_state_release(struct verify_state *vs);

#endif
