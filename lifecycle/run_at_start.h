/*
 * run_at_start.h - the run_at_start tool of the ReAct loop: a command in
 * the sandbox on the item's starting tree (the worktree's head commit)
 * with chosen files of the worktree laid over it, in a throw-away copy
 * beside the database; the worktree is never touched.
 */
#ifndef GOALD_LIFECYCLE_RUN_AT_START_H
#define GOALD_LIFECYCLE_RUN_AT_START_H

struct job_ctx;
struct workspace;
struct cJSON;
struct tool_result;

/* Run it for args ({command, files, timeout_s}, checked against the
 * tool's schema) and fill res: the exit code and the output's tail, or a
 * refusal (a path absolute, with "..", a link, not a regular file, git
 * metadata: class policy).  What ran is a run_at_start.completed event.
 * Returns 0 (the envelope is filled). */
int run_at_start(struct job_ctx *j, struct workspace *ws, const struct cJSON *args,
                 struct tool_result *res);

#endif
