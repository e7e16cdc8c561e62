#include "vcs/worktree.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

int vcs_git_err(int code, const char *fmt, ...)
{
    const git_error *e = git_error_last();
    char what[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return err_set(code, "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}

int vcs_stage_all(git_oid *tree_out, git_repository *repo, int persist)
{
    git_index *idx = NULL;
    int rc = 0;

    if (git_repository_index(&idx, repo) < 0)
        return vcs_git_err(ERR_FAIL, "cannot open the index");
    /* start from what is on disk, not from a cached in-memory state */
    if (git_index_read(idx, 1) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot read the index");
        goto out;
    }
    /* add_all: new and modified files, .gitignore honoured for untracked
     * ones; update_all: drops entries whose files were deleted */
    if (git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, NULL, NULL) < 0 ||
        git_index_update_all(idx, NULL, NULL, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot stage the changes");
        goto out;
    }
    if (git_index_write_tree(tree_out, idx) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot write the tree");
        goto out;
    }
    if (persist ? git_index_write(idx) < 0 : git_index_read(idx, 1) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot %s the index", persist ? "write" : "reload");
        goto out;
    }
out:
    if (rc && idx)
        git_index_read(idx, 1); /* never leave half-staged state in memory */
    git_index_free(idx);
    return rc;
}

int vcs_head_tree(git_tree **tree_out, git_repository *repo)
{
    git_object *obj = NULL;
    int rc = 0;

    if (git_revparse_single(&obj, repo, "HEAD^{tree}") < 0)
        return vcs_git_err(ERR_NOTFOUND, "HEAD has no commit");
    *tree_out = (git_tree *)obj;
    return rc;
}

int vcs_worktree_root(char *out, size_t n)
{
    const char *cfg = config_str(CFG_VCS_WORKTREE_ROOT);
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int w;

    if (cfg && *cfg)
        w = snprintf(out, n, "%s", cfg);
    else if (xdg && *xdg)
        w = snprintf(out, n, "%s/goald/worktrees", xdg);
    else if (home && *home)
        w = snprintf(out, n, "%s/.local/state/goald/worktrees", home);
    else
        return err_set(ERR_INVALID, "neither vcs.worktree_root, XDG_STATE_HOME nor HOME is set");
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "worktree root too long");
    return 0;
}

/* An absolute, symlink-free spelling of path, which need not exist (its
 * parent need not either): the longest existing prefix is resolved with
 * realpath() and the rest appended. */
static int abs_path(char *out, size_t n, const char *path)
{
    char full[PATH_MAX], buf[PATH_MAX], cwd[PATH_MAX], res[PATH_MAX];
    size_t cut;
    int w;

    if (path[0] == '/')
        w = snprintf(full, sizeof(full), "%s", path);
    else if (getcwd(cwd, sizeof(cwd)))
        w = snprintf(full, sizeof(full), "%s/%s", cwd, path);
    else
        return err_set(ERR_IO, "getcwd: %s", strerror(errno));
    if (w < 0 || (size_t)w >= sizeof(full))
        return err_set(ERR_INVALID, "path too long: %s", path);
    cut = strlen(full);
    while (cut > 1 && full[cut - 1] == '/')
        full[--cut] = '\0';
    /* resolve the deepest existing ancestor, append the rest as given */
    for (;;) {
        char *slash;
        memcpy(buf, full, cut);
        buf[cut] = '\0';
        if (realpath(buf, res)) {
            const char *rest = full[cut] ? full + cut + 1 : "";
            w = snprintf(out, n, "%s%s%s", strcmp(res, "/") ? res : "", *rest ? "/" : "", rest);
            if (w == 0)
                w = snprintf(out, n, "/");
            break;
        }
        slash = strrchr(buf, '/');
        if (!slash || slash == buf) {
            w = snprintf(out, n, "%s", full);
            break;
        }
        cut = (size_t)(slash - buf);
    }
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "path too long: %s", path);
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int empty = 1;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    }
    closedir(d);
    return empty;
}

/* Same folder?  Compares realpaths (libgit2 ends folders with '/'). */
static int same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];

    if (!realpath(a, ra) || !realpath(b, rb))
        return 0;
    return strcmp(ra, rb) == 0;
}

static int wt_new(vcs_worktree **out, git_repository *repo, const char *path)
{
    vcs_worktree *wt = calloc(1, sizeof(*wt));

    if (!wt || !(wt->path = strdup(path))) {
        free(wt);
        return err_set(ERR_NOMEM, "out of memory");
    }
    wt->repo = repo;
    *out = wt;
    return 0;
}

const char *vcs_worktree_branch(vcs_worktree *wt)
{
    git_reference *ref = NULL;

    wt->branch[0] = '\0';
    if (git_repository_head(&ref, wt->repo) == 0 && git_reference_is_branch(ref))
        snprintf(wt->branch, sizeof(wt->branch), "%s", git_reference_shorthand(ref));
    git_reference_free(ref);
    return wt->branch;
}

const char *vcs_worktree_path(const vcs_worktree *wt)
{
    return wt->path;
}

void vcs_worktree_free(vcs_worktree *wt)
{
    if (!wt)
        return;
    git_repository_free(wt->repo);
    free(wt->path);
    free(wt);
}

int vcs_worktree_open(vcs_worktree **out, const char *wt_path)
{
    git_repository *repo = NULL;
    char abs[PATH_MAX];
    int rc;

    if ((rc = vcs_init()) != 0 || (rc = abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    if (git_repository_open_ext(&repo, abs, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
        return vcs_git_err(ERR_NOTFOUND, "%s: not a worktree", abs);
    if (git_repository_is_bare(repo)) {
        git_repository_free(repo);
        return err_set(ERR_NOTFOUND, "%s: a bare repository has no worktree", abs);
    }
    if ((rc = wt_new(out, repo, abs)) != 0)
        git_repository_free(repo);
    return rc;
}

int vcs_worktree_head(char out[VCS_OID_HEX], vcs_worktree *wt)
{
    git_oid oid;

    if (git_reference_name_to_id(&oid, wt->repo, "HEAD") < 0)
        return vcs_git_err(ERR_NOTFOUND, "%s: HEAD", wt->path);
    git_oid_tostr(out, VCS_OID_HEX, &oid);
    return 0;
}

int vcs_worktree_state_tree(char out[VCS_OID_HEX], vcs_worktree *wt)
{
    git_oid oid;
    int rc = vcs_stage_all(&oid, wt->repo, 0);

    if (rc)
        return err_wrap(rc, "%s", wt->path);
    git_oid_tostr(out, VCS_OID_HEX, &oid);
    return 0;
}

/* The repository's common folder (".git" of the main work folder). */
static const char *common_dir(git_repository *r)
{
    return git_repository_commondir(r);
}

/* wt_path exists: reuse it when it is a worktree of repo on branch. */
static int reuse_existing(vcs_worktree **out, git_repository *main, const char *abs,
                          const char *branch)
{
    git_repository *repo = NULL;
    vcs_worktree *wt = NULL;
    int rc;

    if (git_repository_open_ext(&repo, abs, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        git_error_clear();
        return err_set(ERR_INVALID, "%s exists and is not a git worktree", abs);
    }
    if (!git_repository_is_worktree(repo) || !same_dir(common_dir(repo), common_dir(main))) {
        rc = err_set(ERR_INVALID, "%s exists and is not a worktree of %s", abs,
                     git_repository_workdir(main));
        goto out;
    }
    if ((rc = wt_new(&wt, repo, abs)) != 0)
        goto out;
    repo = NULL;
    if (strcmp(vcs_worktree_branch(wt), branch) != 0) {
        rc = err_set(ERR_INVALID, "%s is a worktree on branch \"%s\", not \"%s\"", abs, wt->branch,
                     branch);
        goto out;
    }
    *out = wt;
    wt = NULL;
out:
    vcs_worktree_free(wt);
    git_repository_free(repo);
    return rc;
}

/* A registration named name that no longer has a valid folder is pruned;
 * one whose folder is elsewhere and valid is a clash. */
static int clear_stale(git_repository *main, const char *name, const char *abs)
{
    git_worktree *gwt = NULL;
    git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    int rc = 0;

    if (git_worktree_lookup(&gwt, main, name) < 0) {
        git_error_clear();
        return 0;
    }
    if (git_worktree_validate(gwt) == 0) {
        rc = err_set(ERR_INVALID, "worktree name \"%s\" is already used by %s", name,
                     git_worktree_path(gwt));
        goto out;
    }
    git_error_clear();
    po.flags = GIT_WORKTREE_PRUNE_VALID;
    if (git_worktree_prune(gwt, &po) < 0)
        rc = vcs_git_err(ERR_FAIL, "%s: cannot prune the stale worktree \"%s\"", abs, name);
out:
    git_worktree_free(gwt);
    return rc;
}

int vcs_worktree_create(vcs_worktree **out, const char *repo_path, const char *base_branch,
                        const char *branch, const char *wt_path)
{
    git_repository *main = NULL, *repo = NULL;
    git_reference *ref = NULL, *base_ref = NULL;
    git_commit *base_commit = NULL;
    git_worktree *gwt = NULL;
    git_worktree_add_options ao;
    char abs[PATH_MAX], parent[PATH_MAX];
    const char *name;
    vcs_worktree *wt = NULL;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!branch || !vcs_branch_name_valid(branch))
        return err_set(ERR_INVALID, "\"%s\" is not a valid branch name", branch ? branch : "");
    if ((rc = abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    name = base_name(abs);
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return err_set(ERR_INVALID, "%s: not a usable worktree folder", wt_path);
    if ((rc = git_repository_open_ext(&main, repo_path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) < 0) {
        rc = vcs_repo_open_err(rc, repo_path); /* names ownership (vcs/repo.h) */
        goto out;
    }
    if (git_repository_is_worktree(main) || git_repository_is_bare(main)) {
        rc = err_set(ERR_INVALID, "%s: expected the main work folder of a repository", repo_path);
        goto out;
    }
    if (same_dir(git_repository_workdir(main), abs)) {
        rc = err_set(ERR_INVALID, "%s is the repository's own work folder", abs);
        goto out;
    }

    if (fs_exists(abs)) {
        if (!(fs_is_dir(abs) && dir_is_empty(abs))) {
            rc = reuse_existing(out, main, abs, branch);
            goto out;
        }
        if (rmdir(abs) != 0) { /* libgit2 wants to create the folder itself */
            rc = err_set(ERR_IO, "%s: %s", abs, strerror(errno));
            goto out;
        }
    }
    if ((rc = clear_stale(main, name, abs)) != 0)
        goto out;

    if (git_branch_lookup(&ref, main, branch, GIT_BRANCH_LOCAL) < 0) {
        git_error_clear();
        if (!base_branch || git_branch_lookup(&base_ref, main, base_branch, GIT_BRANCH_LOCAL) < 0) {
            git_error_clear();
            rc = err_set(ERR_NOTFOUND, "no base branch \"%s\" in %s",
                         base_branch ? base_branch : "", repo_path);
            goto out;
        }
        if (git_reference_peel((git_object **)&base_commit, base_ref, GIT_OBJECT_COMMIT) < 0) {
            rc = vcs_git_err(ERR_NOTFOUND, "base branch \"%s\"", base_branch);
            goto out;
        }
        if (git_branch_create(&ref, main, branch, base_commit, 0) < 0) {
            rc = vcs_git_err(ERR_FAIL, "cannot create branch \"%s\"", branch);
            goto out;
        }
    }

    if ((rc = fs_dirname(parent, sizeof(parent), abs)) != 0 || (rc = fs_mkdir_p(parent, 0700)) != 0)
        goto out;
    if (git_worktree_add_options_init(&ao, GIT_WORKTREE_ADD_OPTIONS_VERSION) < 0) {
        rc = vcs_git_err(ERR_FAIL, "worktree options");
        goto out;
    }
    ao.ref = ref;
    if (git_worktree_add(&gwt, main, name, abs, &ao) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot add worktree %s on branch \"%s\"", abs, branch);
        goto out;
    }
    if (git_repository_open_from_worktree(&repo, gwt) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot open worktree %s", abs);
        goto out;
    }
    if ((rc = wt_new(&wt, repo, abs)) != 0)
        goto out;
    repo = NULL;
    *out = wt;
out:
    git_worktree_free(gwt);
    git_repository_free(repo);
    git_commit_free(base_commit);
    git_reference_free(base_ref);
    git_reference_free(ref);
    git_repository_free(main);
    return rc;
}

int vcs_worktree_remove(const char *repo_path, const char *wt_path)
{
    git_repository *main = NULL;
    git_worktree *gwt = NULL;
    git_strarray names = {NULL, 0};
    git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    char abs[PATH_MAX], p[PATH_MAX];
    int rc;

    if ((rc = vcs_init()) != 0 || (rc = abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    if (git_repository_open_ext(&main, repo_path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "%s: not a git repository", repo_path);
        goto out;
    }
    if (git_repository_workdir(main) && same_dir(git_repository_workdir(main), abs)) {
        rc = err_set(ERR_INVALID, "%s is the repository's own work folder", abs);
        goto out;
    }
    if (git_worktree_list(&names, main) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: cannot list worktrees", repo_path);
        goto out;
    }
    for (size_t i = 0; i < names.count && !gwt; i++) {
        if (git_worktree_lookup(&gwt, main, names.strings[i]) < 0) {
            git_error_clear();
            continue;
        }
        if (abs_path(p, sizeof(p), git_worktree_path(gwt)) != 0 || strcmp(p, abs) != 0) {
            git_worktree_free(gwt);
            gwt = NULL;
        }
    }
    if (!gwt)
        goto out; /* already gone: nothing to do */
    if (git_worktree_is_locked(NULL, gwt) > 0) {
        rc = err_set(ERR_BUSY, "worktree %s is locked", abs);
        goto out;
    }
    if (fs_exists(abs) && (rc = fs_remove_tree(abs)) != 0)
        goto out;
    po.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_WORKING_TREE;
    if (git_worktree_prune(gwt, &po) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot prune worktree %s", abs);
        goto out;
    }
out:
    git_strarray_dispose(&names);
    git_worktree_free(gwt);
    git_repository_free(main);
    return rc;
}
