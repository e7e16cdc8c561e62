/*
 * stages.h - the lifecycle as a table (stages.c): each kind of unit a
 * job runs, the lane that claims it, whether it needs a model, and its
 * stage function; and job_run, the job that runs one unit.  A stage
 * function returns 0 after writing its success (the run's own status is
 * written by job_run), or ERR_FAIL after job_fail() recorded why.
 */
#ifndef GOALD_LIFECYCLE_STAGES_H
#define GOALD_LIFECYCLE_STAGES_H

#include "lifecycle/job.h"

struct stage_def {
    const char *kind;  /* the runs' kind: elaborate, plan, execute, publish */
    const char *lane;  /* the daemon's lane that claims it: plan or work */
    int needs_model;   /* a model client is opened before the stage */
    int (*run)(struct job_ctx *j);
};

/* The table, ended by a row whose kind is NULL.  Static. */
extern const struct stage_def stage_defs[];

/* The row of kind, or NULL. */
const struct stage_def *stage_find(const char *kind);

/* Run run_id to a terminal state.  Returns 0 when the run was carried
 * through (it may have failed: see out); an error only when the job
 * itself could not run (no such run, the database gone). */
int job_run(store *st, const char *run_id, struct job_outcome *out);

#endif
