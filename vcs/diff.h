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
 * binary files as git binary patches, links as links) to out: `git
 * apply` accepts it against HEAD.  A file larger than out's cap is shown
 * as "Binary files ... differ", and with a cap under 1 MiB (a diff to
 * read, not to apply) binary files carry no patch, so the memory stays
 * near the cap whatever the files' sizes.  Nothing is appended when there are no
 * changes.  ERR_TOOBIG when out's cap is reached (out is then left as it
 * was) or a changed file is over tools.max_file_mb; ERR_POLICY as for
 * vcs_worktree_state_tree(). */
int vcs_diff_text(strbuf *out, vcs_worktree *wt);

/* Append the committed change from commit base_sha (40 hex) to the
 * worktree's HEAD as a unified diff to out (for a model to read: no
 * binary patches), whole lines as long as they fit out's cap; *cut = 1
 * when some did not.  Uncommitted changes are not shown. */
int vcs_diff_commits(strbuf *out, int *cut, vcs_worktree *wt, const char *base_sha);

/* Append the change of one file (path, '/' separated, matched exactly)
 * between the trees of from_rev and to_rev in the repository at
 * repo_path, as vcs_diff_commits() does (whole lines up to out's cap;
 * *cut = 1 when some did not fit).  Nothing is appended when it did not
 * change. */
int vcs_diff_path(strbuf *out, int *cut, const char *repo_path, const char *from_rev,
                  const char *to_rev, const char *path);

/* Give up the worktree's uncommitted changes after a failed or aborted
 * run: when there are changes and patch_path is not NULL, they are first
 * written to patch_path (atomically, mode 0600, parent folders created)
 * as by vcs_diff_text(); then the worktree folder is removed without
 * following any link and checked out again from the branch (like `git
 * worktree remove --force` + `git worktree add`): a tracked folder the run
 * replaced by a link to elsewhere comes back as the folder, and nothing is
 * ever written through a link.  Ignored files (build output) go too.
 * *saved_out (may be NULL) = 1 when a patch was written, 0 when there was
 * nothing to save, -1 when the changes were too large (tools.max_file_mb,
 * the strbuf cap) or unsafe to save: the reset happens anyway, so a retry
 * never starts from the same state.  When the patch cannot be written
 * (disk full) nothing is reset. */
int vcs_worktree_reset(int *saved_out, vcs_worktree *wt, const char *patch_path);

/* Apply the patch at patch_path (one vcs_diff_text() saved before a
 * reset) to the worktree, which must have no changes: the patched tree
 * is made in memory from HEAD's and checked out by libgit2 (HEAD and the
 * index stay), so the changes are the worktree's, uncommitted.
 * ERR_FAIL when the worktree has changes or the patch does not apply;
 * ERR_INVALID when it does not parse. */
int vcs_worktree_apply(vcs_worktree *wt, const char *patch_path);

#endif
