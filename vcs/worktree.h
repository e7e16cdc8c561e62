/*
 * worktree.h - one git worktree per goal (libgit2, no git CLI).
 *
 * A goal's work happens in a linked worktree of its repository, on its own
 * branch (goald/<slug>-<id8>, named by the caller), created from the
 * goal's base branch.  The worktree's administrative name inside
 * .git/worktrees/ is the last component of its folder, so callers give
 * each goal its own folder (e.g. <worktree_root>/<goal-id>).
 *
 * A vcs_worktree is an opaque handle on an open worktree; vcs_worktree_free()
 * releases it (NULL is fine).  The handle locks nothing: the caller (the
 * lifecycle) makes sure one goal runs one item at a time.  The operations
 * that add, reuse, remove or prune worktrees of a repository
 * (vcs_worktree_create, vcs_worktree_remove, vcs_worktree_prune, and
 * vcs_worktree_reset's rebuild) take turns across processes: each holds an
 * exclusive flock() of <worktree root>/.locks/<hash of the repository's
 * git folder>.lock while it runs (freed on every return, and by the
 * kernel when the process dies); one that waits a minute for it gives up
 * with ERR_BUSY.
 *
 * Object ids are given as 40 lowercase hex characters and a NUL
 * (VCS_OID_HEX bytes).
 */
#ifndef GOALD_VCS_WORKTREE_H
#define GOALD_VCS_WORKTREE_H

#include <stddef.h>

#include "util/id.h"

#define VCS_OID_HEX 41

typedef struct vcs_worktree vcs_worktree;

/* The folder under which goals' worktrees live: vcs.worktree_root, else
 * $XDG_STATE_HOME/goald/worktrees, else ~/.local/state/goald/worktrees.
 * 0, or ERR_INVALID (no HOME, too long). */
int vcs_worktree_root(char *out, size_t n);

/* 1 when path is a folder directly inside the worktree root (compared as
 * realpaths) whose name is a goal id, with that id in id; else 0.  The
 * folder is not opened. */
int vcs_worktree_goal_id(const char *path, char id[ID_SIZE]);

/* Create, or reuse, the worktree at wt_path of the repository at
 * repo_path, checked out on branch.
 *
 * - branch does not exist yet: it is created at the head of base_branch
 *   (ERR_NOTFOUND when base_branch does not exist).
 * - branch exists (a re-run after a crash, or after vcs_worktree_remove):
 *   it is used as it is, never moved back to base_branch.
 * - wt_path already holds a worktree of this repository on branch: it is
 *   opened as it is (its uncommitted changes are kept), through goald's
 *   records as by vcs_worktree_open().
 * - wt_path is a registered worktree of this repository that was tampered
 *   with (its .git is not goald's gitlink, or names other git folders):
 *   the folder is removed without following any link and made again from
 *   the branch; vcs_worktree_rebuilt() says why.  Its changes are lost.
 * - wt_path exists and is something else (another repository, another
 *   branch, a plain folder that is not empty): ERR_INVALID, nothing touched.
 * - the worktree was registered but its folder was deleted: the stale
 *   registration is pruned and the worktree made again.
 *
 * Parent folders of wt_path are created.  On success *out is set; free it
 * with vcs_worktree_free(). */
int vcs_worktree_create(vcs_worktree **out, const char *repo_path, const char *base_branch,
                        const char *branch, const char *wt_path);

/* vcs_worktree_create, with root the worktree root goald's records put
 * wt_path in (the goal's recorded worktree's parent, which may be another
 * node's or an earlier setting's; NULL: vcs.worktree_root): a folder
 * named by a goal's or an item's id there, left half-made, is goald's to
 * make again. */
int vcs_worktree_create_in(vcs_worktree **out, const char *root, const char *repo_path,
                           const char *base_branch, const char *branch, const char *wt_path);

/* Open the existing worktree at wt_path of the repository at repo_path
 * through goald's records only: the repository's admin folder
 * <common>/worktrees/<basename of wt_path> (beneath its common folder)
 * must name wt_path as its work folder, and libgit2 opens that admin
 * folder, never what the worktree's own .git names.  The .git must still
 * be the gitlink goald wrote (a regular file naming the admin folder).
 * ERR_NOTFOUND when no worktree of the repository is registered there;
 * ERR_INVALID when it is but was tampered with (nothing is changed). */
int vcs_worktree_open(vcs_worktree **out, const char *repo_path, const char *wt_path);

/* The repository's common folder and the worktree's admin folder beneath
 * it (realpaths, from goald's records): the only git folders the sandbox
 * binds (struct sandbox_spec git_common, git_dir).  Owned by wt. */
const char *vcs_worktree_git_common(const vcs_worktree *wt);
const char *vcs_worktree_git_dir(const vcs_worktree *wt);

/* For a folder a person names on the command line (`goald tool --root`),
 * not a goal's worktree: the git folders of the repository whose work
 * folder is exactly folder, as libgit2 finds them (the common folder and
 * the folder's own git folder beneath it), into common and admin.
 * ERR_NOTFOUND when folder is not a work folder of a repository;
 * ERR_INVALID when its git folder is not beneath its common folder.  The
 * lifecycle never uses this: it binds what vcs_worktree_git_common/_dir
 * derive from its records. */
int vcs_folder_git_dirs(const char *folder, char *common, size_t cn, char *admin, size_t an);

/* Why vcs_worktree_create() or vcs_worktree_reset() found the worktree
 * tampered with and made it again ("its .git is a symbolic link, ..."), or
 * NULL when it did not. */
const char *vcs_worktree_rebuilt(const vcs_worktree *wt);

void vcs_worktree_free(vcs_worktree *wt);

/* The worktree's folder, absolute, without a final '/'.  Owned by wt. */
const char *vcs_worktree_path(const vcs_worktree *wt);

/* The branch checked out (e.g. "goald/fix-tests-0123abcd"), "" when
 * HEAD is detached.  Owned by wt; valid until the next call on wt. */
const char *vcs_worktree_branch(vcs_worktree *wt);

/* The commit the branch points at, as hex.  ERR_NOTFOUND when unborn. */
int vcs_worktree_head(char out[VCS_OID_HEX], vcs_worktree *wt);

/* The tree id of the working folder as it would be committed now: every
 * tracked and untracked file not ignored by .gitignore, deletions
 * included.  Equal to the head commit's tree when there is nothing to
 * commit.  Nothing is written into the repository (neither the index nor
 * objects: they are hashed in memory, blobs streamed).  ERR_TOOBIG when a
 * changed file is larger than tools.max_file_mb, ERR_POLICY for a
 * .gitignore/.gitattributes/.gitmodules that is not a regular file (the
 * message names the path).  FIFOs, sockets and devices are skipped, never
 * opened. */
int vcs_worktree_state_tree(char out[VCS_OID_HEX], vcs_worktree *wt);

/* The same tree, with its objects written into the repository's object
 * database (the index on disk is left as it was), so that it can be
 * exported, compared and committed: what verification judges.  Called
 * once per verification and once per run_gates call (for all its gates),
 * never per turn: vcs_worktree_state_tree() writes nothing.  The same
 * refusals, after the same guard. */
int vcs_worktree_store_tree(char out[VCS_OID_HEX], vcs_worktree *wt);

/* Remove the worktree of the repository at repo_path whose folder is
 * wt_path: delete the folder (never following a link: fs_remove_tree) and
 * prune the registration.  The branch and
 * its commits stay.  Uncommitted changes are lost: save them first with
 * vcs_worktree_reset() when they matter.  Idempotent: 0 when there is no
 * such worktree any more.  ERR_INVALID when wt_path is the main work
 * folder of the repository. */
int vcs_worktree_remove(const char *repo_path, const char *wt_path);

/* Each worktree registered in the repository at repo_path whose folder
 * (an absolute path, from the repository's records, not from anything in
 * the folder) doomed() picks (non-zero) is removed as vcs_worktree_remove()
 * does: its folder, if it is still there, without following any link, and
 * its registration.  doomed() is called under the repository's worktree
 * lock and must not call the worktree functions.  *removed: how many were
 * removed.  An error stops at that worktree. */
int vcs_worktree_prune(const char *repo_path, int (*doomed)(const char *path, void *ctx),
                       void *ctx, int *removed);

#endif
