/*
 * export.h - a commit's files in a plain folder, for running a gate on the
 * base commit (the baseline check) without a second branch or worktree
 * registration in the user's repository.
 */
#ifndef GOALD_VCS_EXPORT_H
#define GOALD_VCS_EXPORT_H

/* Check out the tree of rev (a branch, tag or sha) of the repository at
 * repo_path into dir (created; it must not exist or be empty).  The
 * caller removes dir.  ERR_NOTFOUND for an unknown rev. */
int vcs_export(const char *repo_path, const char *rev, const char *dir);

#endif
