/*
 * stages.h - the stage functions a job runs.  Each returns 0 after writing
 * its success (the run's own status is written by job_run), or ERR_FAIL
 * after job_fail() recorded why.
 */
#ifndef GOALD_LIFECYCLE_STAGES_H
#define GOALD_LIFECYCLE_STAGES_H

#include "lifecycle/job.h"

int stage_elaborate(struct job_ctx *j); /* elaborate.c */
int stage_plan(struct job_ctx *j);      /* plan.c */
int stage_execute(struct job_ctx *j);   /* execute.c */

#endif
