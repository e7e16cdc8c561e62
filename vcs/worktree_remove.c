/*
 * worktree_remove.c - a goal's worktree removed (vcs_worktree_remove) and
 * the worktrees of a repository pruned (vcs_worktree_prune): each folder
 * deleted without following a link, then its registration, found through
 * the repository's own records (never the worktree's .git); under the
 * repository's worktree lock.
 */
#include "vcs/worktree.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

/* The registered worktree gwt, whose folder is abs, removed: the folder
 * (never following a link) and then the registration.  Under the lock. */
static int drop_registered(git_worktree *gwt, const char *abs)
{
    git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    struct stat sb;
    int rc;

    if (git_worktree_is_locked(NULL, gwt) > 0)
        return err_set(ERR_BUSY, "worktree %s is locked", abs);
    if (lstat(abs, &sb) == 0 && (rc = fs_remove_tree(abs)) != 0)
        return err_wrap(rc, "removing worktree %s", abs);
    if (vcs_test_pause)
        vcs_test_pause("remove.before_prune");
    /* the folder is gone already (fs_remove_tree never follows a link);
     * libgit2's own removal of the working tree is not asked for */
    po.flags = GIT_WORKTREE_PRUNE_VALID;
    if (git_worktree_prune(gwt, &po) < 0)
        return vcs_git_err(ERR_FAIL, "cannot prune worktree %s", abs);
    return 0;
}

/* Each worktree registered in main, with its folder as an absolute path
 * (goald's record of it, in the common folder), handed to fn until it
 * returns non-zero (returned).  Under the lock. */
static int each_registered(git_repository *main, const char *repo_path,
                           int (*fn)(git_worktree *gwt, const char *abs, void *ctx), void *ctx)
{
    git_strarray names = {NULL, 0};
    char p[PATH_MAX];
    int rc = 0;

    if (git_worktree_list(&names, main) < 0)
        return vcs_git_err(ERR_FAIL, "%s: cannot list worktrees", repo_path);
    for (size_t i = 0; i < names.count && rc == 0; i++) {
        git_worktree *gwt = NULL;
        if (git_worktree_lookup(&gwt, main, names.strings[i]) < 0) {
            git_error_clear();
            continue;
        }
        if (vcs_abs_path(p, sizeof(p), git_worktree_path(gwt)) == 0)
            rc = fn(gwt, p, ctx);
        else
            err_clear();
        git_worktree_free(gwt);
    }
    git_strarray_dispose(&names);
    return rc;
}

struct remove_one {
    const char *abs;
    int found;
};

static int remove_if_named(git_worktree *gwt, const char *abs, void *ctx)
{
    struct remove_one *r = ctx;

    if (strcmp(abs, r->abs) != 0)
        return 0;
    r->found = 1;
    return drop_registered(gwt, abs);
}

int vcs_worktree_remove(const char *repo_path, const char *wt_path)
{
    git_repository *main = NULL;
    struct remove_one r = {NULL, 0};
    char abs[PATH_MAX];
    int lock = -1, rc;

    if ((rc = vcs_init()) != 0 || (rc = vcs_abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    if ((rc = vcs_repo_open(&main, repo_path)) != 0)
        goto out;
    if (git_repository_workdir(main) && vcs_same_dir(git_repository_workdir(main), abs)) {
        rc = err_set(ERR_INVALID, "%s is the repository's own work folder", abs);
        goto out;
    }
    if ((lock = vcs_wt_lock(main)) < 0) {
        rc = lock;
        goto out;
    }
    r.abs = abs;
    /* none registered there: already gone, nothing to do */
    rc = each_registered(main, repo_path, remove_if_named, &r);
out:
    vcs_wt_unlock(lock);
    git_repository_free(main);
    return rc;
}

struct prune_ctx {
    int (*doomed)(const char *path, void *ctx);
    void *ctx;
    int removed;
};

static int prune_if_doomed(git_worktree *gwt, const char *abs, void *ctx)
{
    struct prune_ctx *p = ctx;
    int rc;

    if (!p->doomed(abs, p->ctx))
        return 0;
    if ((rc = drop_registered(gwt, abs)) == 0)
        p->removed++;
    return rc;
}

int vcs_worktree_prune(const char *repo_path, int (*doomed)(const char *path, void *ctx), void *ctx,
                       int *removed)
{
    git_repository *main = NULL;
    struct prune_ctx p = {doomed, ctx, 0};
    int lock = -1, rc;

    *removed = 0;
    if ((rc = vcs_init()) != 0 || (rc = vcs_repo_open(&main, repo_path)) != 0)
        return rc;
    if ((lock = vcs_wt_lock(main)) < 0) {
        rc = lock;
        goto out;
    }
    rc = each_registered(main, repo_path, prune_if_doomed, &p);
    *removed = p.removed;
out:
    vcs_wt_unlock(lock);
    git_repository_free(main);
    return rc;
}

