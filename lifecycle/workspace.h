/*
 * workspace.h - where a work item's run happens.
 *
 * A goal with a repository works in its own git worktree (vcs/worktree.h)
 * on the goal branch, under vcs.worktree_root; the path is remembered on
 * the goal.  A run starts from the branch head: changes left by an earlier
 * run that died are saved as a patch artifact and reset first; but the
 * changes of the item's own last run, when it ended by asking a human,
 * are kept for the run after the answer (ws->kept).  A goal
 * without a repository works in a plain folder beside the database.
 *
 * Items side by side (goal.max_parallel_items): an item that starts
 * while another item of its goal runs or is ready works in a worktree of
 * its own,
 * <worktree root>/<goal id>.items/<item id>, on a branch of its own
 * (<goal branch>-item-<item id8>) started at the goal's head; its later
 * runs use it too, until the item lands.  The goal branch is moved only
 * under the goal's branch lock (<goal folder>/branch.lock, flock): the
 * run in the goal's own worktree holds it from its start to its end (its
 * HEAD is the goal branch, which must not move under it); an item in a
 * worktree of its own takes it to land: its changes are merged onto the
 * goal's head as it is then (workspace_catch_up), judged there, committed
 * on its branch, and the goal branch moved to that commit.  The goal's
 * own worktree, idle while the branch moved, is brought to the new head
 * at its next opening.  In clone mode and without a repository items
 * take turns (lifecycle/select.c).
 *
 * Clone mode (the goal's repo is a git URL or a bare repository,
 * vcs/clone.h, docs/scaling.md): the worktree is one of this node's clone
 * of the repo, fetched before every run, and the goal branch is set to the
 * goal's head as the database records it (goals.head_commit; the base
 * branch before the first done item), whatever the branch or the remote
 * held.
 */
#ifndef GOALD_LIFECYCLE_WORKSPACE_H
#define GOALD_LIFECYCLE_WORKSPACE_H

#include <stddef.h>

#include "store/goal.h"
#include "store/store.h"
#include "vcs/worktree.h"

struct job_ctx;
struct vcs_worktree;

struct workspace {
    char root[4096];
    struct vcs_worktree *wt; /* NULL without a repository */
    /* the git folders bound read-only into the sandbox, from goald's
     * records (vcs_worktree_git_common/_dir); NULL without a repository */
    const char *git_common, *git_dir;
    /* 1 when the worktree holds the item's changes from its run that
     * asked a human (kept for the run after the answer, not reset) */
    int kept;
    /* 1 when the item runs in a worktree of its own, on a branch of its
     * own (items of the goal run side by side: see above) */
    int own;
    /* the goal's branch lock, held (lock_held, its descriptor lock_fd)
     * while this run may move the goal branch: for the whole run in the
     * goal's worktree, from the last catch-up to the landing in an
     * item's own; workspace_close() releases it */
    int lock_held, lock_fd;
};

/* Where goal g's code is on this node.  *repo: the repository its
 * worktrees are made from (the goal's repo; in clone mode this node's
 * clone, vcs_clone_path() under store_local_dir()).  *worktree: the
 * worktree folder (the one recorded on the goal, NULL before its first
 * run; in clone mode always vcs.worktree_root/<goal id>, whatever path
 * another node recorded).  *clone: 1 in clone mode.  The strings are
 * malloc'd (free()); both NULL for a goal without a repository.  Nothing
 * is made or fetched here. */
int workspace_locate(store *st, const struct goal *g, char **repo, char **worktree, int *clone);

/* Open (creating) j's goal workspace, clean at the branch head (in clone
 * mode: fetched, at the goal's head), or holding the changes of the
 * item's run that asked a human (ws->kept, a "worktree.kept" event). */
int workspace_open(struct workspace *ws, struct job_ctx *j);
void workspace_close(struct workspace *ws);

/* The goal's worktree for a goal-level step (the final check, the
 * evaluation's diff), through attach: reused as it is, made again when it
 * was tampered with or left half-made, made at its recorded path when it
 * is missing (a run killed between recording the path and making it).
 * 0 with *out set (free it with vcs_worktree_free), or an error. */
int workspace_goal_open(vcs_worktree **out, struct job_ctx *j);

/* For an item in a worktree of its own (ws->own): bring its changes onto
 * the goal's head (vcs_worktree_catch_up), taking the goal's branch lock
 * first when lock is 1 (kept until workspace_close).  *moved = 1 when the
 * head had moved.  A conflict is ERR_FAIL after job_fail() (class
 * "conflict": the item runs again, on the goal's head).  Without an own
 * worktree: 0, nothing done. */
int workspace_catch_up(struct workspace *ws, struct job_ctx *j, int lock, int *moved);

/* The item's commit sha onto the goal branch (the goal's branch lock is
 * held): for an item in a worktree of its own, the goal branch moved
 * from sha's parent to sha (ERR_BUSY when it is not there), unless sha
 * is on it already (a run killed after landing it).  head: the goal
 * branch's head after it, which the database records (other items may
 * have landed on top of sha); sha itself in clone mode, where the
 * database's head is the truth.  Without a repository: sha. */
int workspace_land(struct workspace *ws, struct job_ctx *j, const char *sha,
                   char head[VCS_OID_HEX]);

/* After the item landed: its worktree and branch go (a failure is only
 * logged: the goal's end removes what is left, workspace_remove_items). */
void workspace_drop_own(struct workspace *ws, struct job_ctx *j);

/* Remove every item worktree of goal g (in repo, its worktrees' main
 * repository) and their branches: the goal ended. */
void workspace_remove_items(const struct goal *g, const char *repo);

/* Remove goal goal_id's warm build folders (<goal folder>/builds,
 * lifecycle/verify_warm.c) on this node: the goal ended.  A failure is
 * only logged. */
void workspace_remove_builds(store *st, const char *goal_id);

/* The tree id of the folder as it would be committed ("" without git). */
int workspace_state(struct workspace *ws, char *out, size_t n);

/* The same tree with its objects stored in the repository (for
 * verification: exported to gate copies, compared, committed). */
int workspace_store(struct workspace *ws, char *out, size_t n);

/* Save the run's changes as a patch artifact and reset to the branch head
 * (after a failed run).  Without git, nothing. */
int workspace_discard(struct workspace *ws, struct job_ctx *j);

/* The folder beside the database for goal files (patches, scratch work):
 * "<dir of the database>/goals/<goal id>". */
int workspace_goal_dir(char *out, size_t n, struct job_ctx *j);

#endif
