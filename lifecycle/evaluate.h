/*
 * evaluate.h - stage 6, evaluation: the decision on an item whose gates
 * passed (see evaluate.c).
 */
#ifndef GOALD_LIFECYCLE_EVALUATE_H
#define GOALD_LIFECYCLE_EVALUATE_H

struct job_ctx;
struct workspace;
struct verify_state;

/* Decide on j's item after its gates (vs, borrowed) and the review: it
 * must have left an artifact (else ERR_FAIL, class no_artifact); each
 * success criterion gets an evidence decision; the item is committed
 * (with commit, file and test_results artifacts) and goes verify -> done
 * with its evidence flags.  0, or ERR_FAIL after job_fail(). */
int evaluate_item(struct job_ctx *j, struct workspace *ws, const char *summary,
                  const struct verify_state *vs);

#endif
