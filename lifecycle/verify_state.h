/*
 * verify_state.h - what stage 5 hands on: the gates of an item judged
 * against its baseline (struct verify_state, filled by verify.c and the
 * verify_*.c files), which the review (review.c), the evidence
 * (evidence.c) and the evaluation (evaluate.c) read; and the records a
 * job's stages write of its goal (verify_decision(), verify_artifact():
 * verify_record.c), and whole-word matching (verify_word_in():
 * verify_blame.c).  verify.h, the stage's entry points, includes it;
 * what is here includes no stage.  verify_state_release() frees a
 * verify_state's contents.
 */
#ifndef GOALD_LIFECYCLE_VERIFY_STATE_H
#define GOALD_LIFECYCLE_VERIFY_STATE_H

#include <stddef.h>

#include "gates/gates.h"
#include "util/hash.h"
#include "util/strbuf.h"
#include "vcs/worktree.h"

struct job_ctx;
struct cJSON;
struct criteria;

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
    const struct criteria *crit; /* the goal's success criteria (the job's, borrowed) */
    struct cJSON *inputs;  /* the item's changes that are not product (paths) */
    struct cJSON *roles;   /* {path: role} of those (gates/roles.h) */
    int n_det;             /* deterministic gates run */
    int only_new_tests;    /* every change put back for the product-only run is a test
                              module the item added (no config, support or shadow file,
                              nothing that was there at the baseline) */
};

void verify_state_release(struct verify_state *vs);

#endif
