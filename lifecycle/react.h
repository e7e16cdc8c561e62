/*
 * react.h - the ReAct loop the execute stage (execute.c) runs: a model
 * calling tools in the goal's worktree, turn by turn, until it calls
 * complete or ask_human, or a limit stops it.
 */
#ifndef GOALD_LIFECYCLE_REACT_H
#define GOALD_LIFECYCLE_REACT_H

struct job_ctx;
struct workspace;

/* How the loop ended when it returned 0: completed (the model called
 * complete: summary set) or blocked (it called ask_human: question set).
 * Both strings are malloc'd; react_outcome_release() frees them. */
struct react_outcome {
    int completed;
    int blocked;
    char *summary;
    char *question;
};

/* Run the loop for j's item in ws, the task being user (the first user
 * message after the system prompt).  0 with *out saying how it ended; or
 * ERR_FAIL after job_fail() (a limit, the budget, a model error, no
 * progress, a change goald will not snapshot), with out->completed and
 * out->blocked 0.  Release *out in both cases. */
int react_run(struct react_outcome *out, struct job_ctx *j, struct workspace *ws, const char *user);
void react_outcome_release(struct react_outcome *o);

#endif
