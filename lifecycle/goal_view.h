/*
 * goal_view.h - a goal's JSON columns that the stages read, parsed once
 * per job into typed structs: its success criteria (an array of strings)
 * and its elaboration (an object, or none before stage 2).  job_run()
 * loads them with the goal (goal_view_load()) and hands them to the
 * stages through the job (job.h); a malformed column (a hand-edited
 * database) is one error naming the goal and the column, not a guess in
 * each reader.
 */
#ifndef GOALD_LIFECYCLE_GOAL_VIEW_H
#define GOALD_LIFECYCLE_GOAL_VIEW_H

#include <stddef.h>

#include "store/goal.h"

/* The goal's success criteria, in order: the plan refers to them by
 * index.  text[0..n) are owned; criteria_release() frees them. */
struct criteria {
    size_t n;
    char **text;
};

/* What the stages read of the elaboration.  Owned strings, freed by
 * elaboration_release(). */
struct elaboration {
    int present;               /* 0: the goal is not elaborated (the rest is empty) */
    char *verification_source; /* where the gates came from ("goal", "detected", ...);
                                  NULL when the elaboration does not say */
    char *for_plan;            /* the elaboration as JSON text without the criteria
                                  and verification_source, for the plan prompt */
};

/* Parse json (a JSON array of strings; NULL is no criterion) into *out.
 * ERR_INVALID with the reason (no field name) when it is not one; *out
 * is then empty.  criteria_release() frees *out either way. */
int criteria_parse(struct criteria *out, const char *json);
void criteria_release(struct criteria *c);

/* Parse json (a JSON object; NULL: not elaborated) into *out.
 * ERR_INVALID with the reason when it is not an object; *out is then
 * empty.  elaboration_release() frees *out either way. */
int elaboration_parse(struct elaboration *out, const char *json);
void elaboration_release(struct elaboration *e);

/* Both of g's columns into *crit and *elab; on failure an error naming
 * the goal and the column ("goal ID: success_criteria: ...").  The
 * caller releases both either way. */
int goal_view_load(struct criteria *crit, struct elaboration *elab, const struct goal *g);

/* Is goal g in clone mode (docs/scaling.md: its repo a URL or a bare
 * repository)?  As recorded at submit (goals.clone); for a goal submitted
 * before that was recorded, its repository is asked (vcs_repo_is_shared(),
 * which opens it). */
int goal_view_clone(const struct goal *g);

#endif
