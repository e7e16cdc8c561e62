/*
 * elaborate.h - stage 2, elaboration (see elaborate.c).
 */
#ifndef GOALD_LIFECYCLE_ELABORATE_H
#define GOALD_LIFECYCLE_ELABORATE_H

struct job_ctx;

/* The elaborate unit of a queued goal: criteria, allowed actions and the
 * verification plan merged with the goal's, and the goal active.  0, or
 * ERR_FAIL after job_fail(). */
int stage_elaborate(struct job_ctx *j);

#endif
