/*
 * plan_stage.h - stage 3's unit (plan_stage.c): an elaborated goal's work
 * items asked of the model and stored as a DAG (plan.h).
 */
#ifndef GOALD_LIFECYCLE_PLAN_STAGE_H
#define GOALD_LIFECYCLE_PLAN_STAGE_H

struct job_ctx;

/* The plan unit of an elaborated goal: the model's DAG checked (one
 * repair request carrying the error) and stored.  0, or ERR_FAIL after
 * job_fail(). */
int stage_plan(struct job_ctx *j);

#endif
