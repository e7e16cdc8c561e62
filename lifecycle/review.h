/*
 * review.h - the advisory LLM review of a verified item's diff, the end
 * of stage 5 (see review.c).
 */
#ifndef GOALD_LIFECYCLE_REVIEW_H
#define GOALD_LIFECYCLE_REVIEW_H

struct job_ctx;
struct workspace;
struct verify_state;

/* Ask the model to review the item's diff and summary: its verdict and
 * findings become decisions (review_verdict, review_finding) and a
 * review.completed event; a failed call is recorded as a
 * review_unavailable decision and cleared from j.  Advisory: it never
 * fails the item and cannot change a gate's verdict. */
/* vs (borrowed, may be NULL): what the gates found, shown to the model
 * with the criteria the item serves. */
void review_item(struct job_ctx *j, struct workspace *ws, const char *summary,
                 const struct verify_state *vs);

#endif
