/*
 * diff.h - what a run changed in a worktree, and undoing it.
 *
 * "Changes" always means the working folder as it would be committed now
 * (tracked and untracked files, .gitignore honoured, deletions included)
 * against HEAD: exactly what vcs_commit_item() would commit.  None of
 * these functions changes the on-disk index, except vcs_worktree_reset().
 */
#ifndef GOALD_VCS_DIFF_H
#define GOALD_VCS_DIFF_H

#include "util/strbuf.h"
#include "vcs/worktree.h"

/* *empty_out = 1 when there is nothing to commit, else 0. */
int vcs_diff_is_empty(int *empty_out, vcs_worktree *wt);

/* Append the changes as a unified diff (git format, a/ and b/ prefixes,
 * binary files as git binary patches) to out: `git apply` accepts it
 * against HEAD.  Nothing is appended when there are no changes.
 * ERR_TOOBIG when out's cap is reached (out is then left as it was). */
int vcs_diff_text(strbuf *out, vcs_worktree *wt);

/* Give up the worktree's uncommitted changes after a failed or aborted
 * run: when there are changes and patch_path is not NULL, they are first
 * written to patch_path (atomically, mode 0600, parent folders created)
 * as by vcs_diff_text(); then the worktree is hard-reset to HEAD and the
 * untracked files that are not ignored are removed (like `git reset
 * --hard && git clean -fd`; ignored files such as build output stay).
 * *saved_out (may be NULL) = 1 when a patch was written, else 0.  When
 * the patch cannot be written nothing is reset. */
int vcs_worktree_reset(int *saved_out, vcs_worktree *wt, const char *patch_path);

#endif
