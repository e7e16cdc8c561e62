/*
 * repo.h - opening and inspecting git repositories with libgit2.
 *
 * vcs_init() initialises libgit2 once per process (idempotent; the
 * matching shutdown happens at exit).  Errors from libgit2 are converted
 * here, with git_error_last(), into the error slot.
 */
#ifndef GOALD_VCS_REPO_H
#define GOALD_VCS_REPO_H

#include <stddef.h>

int vcs_init(void);

/* Put why libgit2 could not open the repository at path into the error
 * slot and return the error code: code is git_repository_open_ext()'s
 * return.  A folder or .git owned by another user (libgit2's ownership
 * check, GIT_EOWNER) says whose it is and how to fix it (chown, or
 * safe.directory in the user's ~/.gitconfig or /etc/gitconfig), and
 * returns ERR_INVALID; a folder the user cannot read says so
 * (ERR_INVALID); anything else is "not a git repository: PATH"
 * (ERR_NOTFOUND). */
int vcs_repo_open_err(int code, const char *path);

/* Check that path is a git repository (not searching upwards) and, when
 * branch is not NULL, that refs/heads/<branch> exists.  abs_out (may be
 * NULL) receives the repository's work folder as an absolute path;
 * head_branch_out (may be NULL) the branch HEAD points at ("" when
 * detached).  Errors: ERR_NOTFOUND (no repository; no branch, the
 * message listing the branches it has), ERR_INVALID (a repository with
 * no commits; bad branch name; owned by another user, or unreadable:
 * vcs_repo_open_err()). */
int vcs_repo_probe(const char *path, const char *branch, char *abs_out, size_t abs_n,
                   char *head_branch_out, size_t head_n);

/* 1 when name is a valid branch name for git (libgit2's rules for
 * refs/heads/<name>). */
int vcs_branch_name_valid(const char *name);

/* A goal's branch name, "goald/<slug>-<id8>", into out: slug is the title
 * in lowercase ASCII letters and digits, other runs of characters become
 * one '-', at most 40 characters, "goal" when nothing is left; id8 is the
 * first 8 letters or digits of goal_id.  The result is always a valid
 * branch name.  0, or ERR_INVALID (no usable id, out too small). */
int vcs_branch_name_for_goal(char *out, size_t n, const char *title, const char *goal_id);

/* Make a new repository at path (created) on branch with one commit of
 * every file already in the folder (author from vcs.author_*).  For the
 * demo.  ERR_INVALID when path already holds a repository. */
int vcs_repo_init_commit(const char *path, const char *branch, const char *message);

/* A bare repository at path (created), e.g. a local remote.  Idempotent. */
int vcs_repo_init_bare(const char *path);

/* Add (or update) a remote name -> url in the repository at path. */
int vcs_remote_set(const char *repo_path, const char *name, const char *url);

#endif
