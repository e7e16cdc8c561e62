/*
 * export.h - a commit's files in a plain folder, for running a gate on the
 * base commit (the baseline check) without a second branch or worktree
 * registration in the user's repository.
 */
#ifndef GOALD_VCS_EXPORT_H
#define GOALD_VCS_EXPORT_H

#include <time.h>

/* Check out the tree of rev (a branch, tag or sha) of the repository at
 * repo_path into dir (created; it must not exist or be empty).  The
 * caller removes dir.  ERR_NOTFOUND for an unknown rev. */
int vcs_export(const char *repo_path, const char *rev, const char *dir);

/* Stable file times for a build kept warm (docs/verification.md "Warm
 * build folders"): in dir, an export of rev, every file (a blob or a
 * link) that the tree `same` has at the same path with the same blob and
 * mode gets the modification time old; every other one keeps the time it
 * was written.  same NULL: every file gets old.  Each file's folder is
 * opened one component at a time, never through a link. */
int vcs_export_times(const char *repo_path, const char *rev, const char *same, const char *dir,
                     time_t old);

#endif
