/*
 * internal.h - shared by the vcs module's .c files only; not part of its API.
 */
#ifndef GOALD_VCS_INTERNAL_H
#define GOALD_VCS_INTERNAL_H

#include <git2.h>

#include "util/err.h"
#include "util/strbuf.h"

struct vcs_worktree {
    git_repository *repo; /* the worktree's repository, opened from admin */
    char *path;           /* absolute, no final '/' */
    char *repo_path;      /* the main work folder of the repository (goald's record) */
    char *common;         /* realpath of the repository's common folder */
    char *admin;          /* realpath of <common>/worktrees/<name> */
    char branch[256];     /* refreshed by vcs_worktree_branch() */
    char rebuilt[512];    /* why the folder was made again on open; "" if not */
};

/* Refuse a change that goald must not snapshot or commit: a changed file
 * (new or modified, not ignored) larger than tools.max_file_mb
 * (ERR_TOOBIG, the message names the path and both sizes), or a
 * .gitignore, .gitattributes or .gitmodules that is not a regular file
 * (ERR_POLICY: libgit2 would follow a link or block on a FIFO there).
 * Walks the working folder of repo without following links. */
int vcs_guard_changes(git_repository *repo);

/* The tree id the working folder would be committed as, computed without
 * writing anything into the repository: the objects go to an in-memory
 * store that keeps trees and only the ids and sizes of blobs, and is
 * dropped afterwards.  vcs_guard_changes() first. */
int vcs_snapshot_tree(git_oid *out, struct vcs_worktree *wt);

/* Put "WHAT: <libgit2's last message>" into the error slot and return
 * code: the single place where libgit2 errors become ours. */
int vcs_git_err(int code, const char *fmt, ...) GOALD_PRINTF(2, 3);

/* Stage every change of the working folder honouring .gitignore
 * (additions, modifications, deletions) into the repository's index and
 * write the index's tree into tree_out.  persist 1 writes the index to
 * disk; 0 reloads it from disk afterwards, so nothing is changed but new
 * objects in the object database (vcs_snapshot_tree() writes none). */
int vcs_stage_all(git_oid *tree_out, git_repository *repo, int persist);

/* Open the repository at path itself (no search upwards): 0 with *out
 * set (git_repository_free), or vcs_repo_open_err()'s error, which names
 * an ownership refusal or an unreadable folder.  The one place a
 * repository goald was given is opened. */
int vcs_repo_open(git_repository **out, const char *path);

/* The HEAD commit's tree into *tree_out (free with git_tree_free). */
int vcs_head_tree(git_tree **tree_out, git_repository *repo);

/* Check tree out over the worktree's folder (libgit2's safe checkout:
 * links as links, paths checked), then the index back at HEAD's tree: the
 * changes are the worktree's, uncommitted.  HEAD does not move. */
int vcs_checkout_changes(struct vcs_worktree *wt, git_tree *tree);

/* The tree rev names in r (a commit id, a branch...) into *out
 * (git_tree_free); ERR_NOTFOUND naming rev. */
int vcs_rev_tree_get(git_tree **out, git_repository *r, const char *rev);

/* Credentials for a remote, as push.h describes them, for libgit2's
 * credential callback (payload: a zeroed struct vcs_auth): push and fetch
 * both use it.  A kind asked for twice was rejected: the callback gives
 * up, with why set. */
struct vcs_auth {
    int tried_agent;
    int tried_token;
    int tried_user;
    char why[512];      /* our reason when the callback gives up */
    char rejected[512]; /* a ref the remote refused, and its status */
};
int vcs_auth_cb(git_credential **out, const char *url, const char *user_from_url,
                unsigned int allowed, void *payload);

/* Worktree operations (add, reuse, remove, prune) on the repository main
 * take turns across processes: an exclusive lock of a file in
 * <worktree root>/.locks named by a hash of main's common git folder
 * (vcs/lock.c).  Returns the descriptor to give vcs_wt_unlock(), or a
 * negative error: ERR_BUSY when another process held it for a minute.  Not reentrant: a process that holds it and asks again
 * waits for ever, so only the public functions of worktree.c take it. */
/* An absolute, symlink-free spelling of path into out (n bytes), which
 * need not exist: its longest existing prefix resolved with realpath(),
 * the rest appended.  0, or an error (too long). */
int vcs_abs_path(char *out, size_t n, const char *path);
/* a and b are the same folder (compared as realpaths). */
int vcs_same_dir(const char *a, const char *b);

int vcs_wt_lock(git_repository *main);
void vcs_wt_unlock(int fd);

/* A stale lock file a killed process left (git takes one for a writer at
 * work and refuses its file for ever) removed: only when its folder
 * resolves beneath common (a git folder's realpath) and it is a regular
 * file (unlink never follows the last link).  0 when removed or absent;
 * ERR_INVALID, naming it, for anything else there (left alone). */
int vcs_lock_clear_stale(const char *common, const char *lock);

/* Tests only: when set, called at named points inside the worktree
 * operations ("remove.before_prune": the folder deleted, the
 * registration not yet pruned), so a test can hold a process there. */
extern void (*vcs_test_pause)(const char *point);

#endif
