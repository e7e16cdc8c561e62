/*
 * merge.h - items of one goal that ran side by side, brought onto the
 * goal branch one after another (lifecycle/workspace.c).
 *
 * Such an item works in a worktree of its own, on a branch of its own
 * that started at the goal's head.  When it is done the goal's head may
 * have moved on (another item landed): its changes are merged onto that
 * head (a three-way merge of trees, in memory) before it is verified and
 * committed, and the goal branch is then moved to its commit only if it
 * still is where the merge took it from.
 */
#ifndef GOALD_VCS_MERGE_H
#define GOALD_VCS_MERGE_H

#include <stddef.h>

#include "vcs/worktree.h"

/* Bring the worktree's uncommitted changes (against its HEAD) onto commit
 * onto: the three-way merge of HEAD's tree (the base), onto's tree and
 * the worktree's tree; then the worktree's branch is pointed at onto, the
 * folder made again from it (vcs_worktree_reset(), nothing followed) and
 * the merged tree checked out over it, the index at onto: the changes are
 * the worktree's again, now against onto.  *moved = 1 when HEAD was not
 * onto already (0: nothing done).  A path both sides changed in ways that
 * do not merge: ERR_FAIL, "conflict with <onto12>: PATH, PATH..." in the
 * error slot and *conflict = 1, nothing changed.  The worktree's branch
 * must be its own: never a branch another worktree has checked out.
 *
 * journal (may be NULL): a file in a folder goald owns, outside the
 * worktree.  Once the merge is made, onto and the merged tree are written
 * there (flushed, renamed into place) before the branch moves, and the
 * file is removed when the folder holds the merged tree: a process killed
 * between the two leaves it for vcs_worktree_catch_up_resume(). */
int vcs_worktree_catch_up(int *moved, int *conflict, vcs_worktree *wt, const char *onto,
                          const char *journal);

/* Finish the catch-up a killed process left half done: when journal
 * exists and the worktree's HEAD is where that catch-up started or
 * ended, the worktree's branch is pointed at its onto, the folder made
 * again there and its merged tree checked out over it (*resumed = 1);
 * at any other HEAD (the worktree was made again since), or when the
 * journal does not read as one or names objects the repository lacks
 * (it could never be finished), nothing is done.  Either way the journal
 * is then removed: it never holds a run back.  Without a journal (no
 * catch-up was under way): 0, nothing done.  Without this the next run
 * would find the branch at onto and the folder still at the old head: its
 * leftovers would read as undoing what the other items landed. */
int vcs_worktree_catch_up_resume(int *resumed, vcs_worktree *wt, const char *journal);

/* *stale = 1 when the worktree's index is not at its HEAD's tree: its
 * branch was moved by another process (an item landed from a worktree of
 * its own) while this worktree was idle, and its files are the old
 * head's.  The index is goald's (the sandbox binds it read-only). */
int vcs_worktree_stale(int *stale, vcs_worktree *wt);

/* Move refs/heads/<branch> of the repository at repo_path from commit
 * from to commit to, only if it still points at from: ERR_BUSY ("the
 * branch moved") when it does not, and nothing is changed. */
int vcs_branch_move(const char *repo_path, const char *branch, const char *from, const char *to);

/* *yes = 1 when commit sha is the commit head or one of its ancestors
 * (in the repository at repo_path). */
int vcs_commit_reaches(int *yes, const char *repo_path, const char *head, const char *sha);

/* Delete refs/heads/<branch> (0 when there is no such branch). */
int vcs_branch_delete(const char *repo_path, const char *branch);

/* Delete every refs/heads/<prefix>* branch (prefix at least 8 bytes);
 * *n: how many. */
int vcs_branch_delete_prefix(const char *repo_path, const char *prefix, int *n);

#endif
