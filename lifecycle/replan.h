/*
 * replan.h - the follow-up plan for success criteria the goal-level
 * evaluation found unmet (see replan.c).
 */
#ifndef GOALD_LIFECYCLE_REPLAN_H
#define GOALD_LIFECYCLE_REPLAN_H

#include <stddef.h>

struct job_ctx;
struct cJSON;

/* Ask the model (stage plan) for new work items serving the criteria
 * unmet[0..n) of j's goal (reasons, borrowed: why each is unmet), and
 * store them with a "replanned" decision and a goal.replanned event in
 * one transaction: the goal then goes on working.  A key the goal
 * already has gets a suffix (dependencies follow it).  *planned = 1 when
 * items were stored; 0 when the model could not be asked or its plan
 * was refused (recorded as goal.replan_failed: the goal is then left as
 * the evaluation found it).  0, or an error after job_fail(). */
int replan_for_criteria(int *planned, struct job_ctx *j, const int *unmet, size_t n,
                        const struct cJSON *reasons);

#endif
