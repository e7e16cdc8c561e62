/*
 * execute.h - stage 4, execution (see execute.c).
 */
#ifndef GOALD_LIFECYCLE_EXECUTE_H
#define GOALD_LIFECYCLE_EXECUTE_H

struct job_ctx;

/* The execute unit of a ready item: the ReAct loop in the goal's
 * worktree, then verification (or the human's question).  0, or
 * ERR_FAIL after job_fail(). */
int stage_execute(struct job_ctx *j);

#endif
