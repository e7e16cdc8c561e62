/*
 * probe.h - the common case of checking a repository, without libgit2.
 *
 * `goald submit` checks the goal's repository and base branch.  Loading
 * libgit2 for that costs more than the rest of submit together (fifteen
 * shared libraries, and git_libgit2_init() parses the whole CA bundle for
 * mbedTLS), so the plain layout is read here with a few stat()s and small
 * reads: a work folder with a `.git` folder, HEAD, a loose or packed
 * branch ref, and a config that sets nothing that changes the layout.
 *
 * These functions only ever answer "yes, certainly": whenever anything is
 * unusual (a `.git` file, a linked worktree, core.worktree, core.bare,
 * extensions, includes, another owner, a symbolic branch ref, a name
 * outside the plain character set, a missing branch) they return 0 and
 * the caller asks libgit2, which stays the authority and writes the error
 * messages.  Nothing is allocated; outputs are the caller's buffers.
 */
#ifndef GOALD_VCS_PROBE_H
#define GOALD_VCS_PROBE_H

#include <stddef.h>

/* 1 when name is certainly a valid branch name: "/"-separated components,
 * each non-empty, starting with a letter, digit or '_', made of letters,
 * digits, '_', '.', '-', without "..", not ending with '.' or ".lock",
 * and the whole at most 200 bytes.  0 means "ask libgit2", not
 * "invalid". */
int vcs_quick_branch_name(const char *name);

/* 1 when path (not searched upwards) is certainly a plain non-bare git
 * repository owned by this user and, when branch is not NULL, has
 * refs/heads/<branch> (loose or packed); then abs_out (may be NULL)
 * receives the work folder's real path and head_out (may be NULL) the
 * branch HEAD points at ("" when detached), as vcs_repo_probe() gives
 * them.  0 means "ask libgit2": the outputs are then unspecified. */
int vcs_quick_probe(const char *path, const char *branch, char *abs_out, size_t abs_n,
                    char *head_out, size_t head_n);

#endif
