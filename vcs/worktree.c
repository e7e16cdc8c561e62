#include "vcs/worktree.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/path.h"
#include "util/xalloc.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

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
int vcs_abs_path(char *out, size_t n, const char *path)
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
int vcs_same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];

    if (!realpath(a, ra) || !realpath(b, rb))
        return 0;
    return strcmp(ra, rb) == 0;
}

static int wt_new(vcs_worktree **out, git_repository *repo, const char *path, const char *repo_path,
                  const char *common, const char *admin)
{
    vcs_worktree *wt = xcalloc(1, sizeof(*wt));

    wt->path = xstrdup(path);
    wt->repo_path = xstrdup(repo_path);
    wt->common = xstrdup(common);
    wt->admin = xstrdup(admin);
    wt->repo = repo;
    *out = wt;
    return 0;
}

const char *vcs_worktree_branch(vcs_worktree *wt)
{
    git_reference *ref = NULL;

    wt->branch[0] = '\0';
    /* a name too long for the buffer is left "", never cut to another */
    if (git_repository_head(&ref, wt->repo) == 0 && git_reference_is_branch(ref) &&
        path_fmt(wt->branch, sizeof(wt->branch), "%s", git_reference_shorthand(ref)) != 0)
        wt->branch[0] = '\0';
    git_reference_free(ref);
    return wt->branch;
}

const char *vcs_worktree_path(const vcs_worktree *wt)
{
    return wt->path;
}

const char *vcs_worktree_git_common(const vcs_worktree *wt)
{
    return wt->common;
}

const char *vcs_worktree_git_dir(const vcs_worktree *wt)
{
    return wt->admin;
}

const char *vcs_worktree_rebuilt(const vcs_worktree *wt)
{
    return wt->rebuilt[0] ? wt->rebuilt : NULL;
}

void vcs_worktree_free(vcs_worktree *wt)
{
    if (!wt)
        return;
    git_repository_free(wt->repo);
    free(wt->path);
    free(wt->repo_path);
    free(wt->common);
    free(wt->admin);
    free(wt);
}

/* realpath of p without a final '/' into out (PATH_MAX); 0 or -1. */
static int real_dir(char *out, const char *p)
{
    return realpath(p, out) ? 0 : -1;
}

/* Whether path is dir or lies beneath it (both realpaths). */
static int is_beneath(const char *dir, const char *path)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The main repository named by goald's record: its main work folder. */
static int open_main(git_repository **main, const char *repo_path)
{
    int rc = vcs_repo_open(main, repo_path);

    if (rc)
        return rc;
    if (git_repository_is_worktree(*main) || git_repository_is_bare(*main)) {
        git_repository_free(*main);
        *main = NULL;
        return err_set(ERR_INVALID, "%s: expected the main work folder of a repository", repo_path);
    }
    return 0;
}

/* The worktree's .git must be what goald wrote: a regular file (not a
 * link, FIFO or folder) whose one line names the admin folder.  It is read
 * without following a link and without blocking.  0, or 1 with why set. */
static int gitlink_changed(const char *abs, const char *admin, char *why, size_t n)
{
    char p[PATH_MAX + 8], text[PATH_MAX + 16], named[PATH_MAX];
    struct stat st;
    ssize_t got;
    int fd;

    if (path_fmt(p, sizeof(p), "%s/.git", abs) != 0) {
        snprintf(why, n, "its .git's path is too long"); /* truncation: ok, a message */
        return 1;
    }
    if (lstat(p, &st) != 0) {
        snprintf(why, n, "its .git is missing"); /* truncation: ok, a message */
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        /* truncation: ok, a message */
        snprintf(why, n, "its .git is a %s, not goald's gitlink file",
                 S_ISLNK(st.st_mode)   ? "symbolic link"
                 : S_ISDIR(st.st_mode) ? "folder"
                                       : "special file");
        return 1;
    }
    if (st.st_size <= 8 || (size_t)st.st_size >= sizeof(text)) {
        snprintf(why, n, "its .git was changed"); /* truncation: ok, a message */
        return 1;
    }
    fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        snprintf(why, n, "its .git cannot be read"); /* truncation: ok, a message */
        return 1;
    }
    got = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (got <= 8) {
        snprintf(why, n, "its .git was changed"); /* truncation: ok, a message */
        return 1;
    }
    text[got] = '\0';
    if (got > 0 && text[got - 1] == '\n')
        text[--got] = '\0';
    if (strncmp(text, "gitdir: ", 8) != 0 || strchr(text, '\n') || text[8] != '/' ||
        !realpath(text + 8, named) || strcmp(named, admin) != 0) {
        /* truncation: ok, a message */
        snprintf(why, n, "its .git names a git folder other than %s", admin);
        return 1;
    }
    return 0;
}

enum { RECORD_OK = 0, RECORD_NONE = 1, RECORD_CHANGED = 2, RECORD_UNREGISTERED = 3 };

/* Open the worktree at abs through goald's records only: the admin folder
 * <common>/worktrees/<basename of abs> of the main repository, checked to
 * lie beneath the common folder and to name abs as its work folder.
 * Nothing in the worktree decides what is opened: libgit2 opens the admin
 * folder itself, and the worktree's own .git is only compared with what it
 * must say.  RECORD_OK: *out is the open repository (common and admin
 * filled).  RECORD_NONE: the repository has no worktree registered for
 * abs (why says so; nothing about abs is known to be ours).  RECORD_CHANGED:
 * the registration names abs but the folder was tampered with (why).
 * Negative: an error. */
static int open_recorded(git_repository **out, char common[PATH_MAX], char admin[PATH_MAX],
                         git_repository *main, const char *abs, char *why, size_t n)
{
    git_worktree *gwt = NULL;
    git_repository *repo = NULL;
    char p[PATH_MAX * 2], rp[PATH_MAX];
    const char *name = base_name(abs);
    int rc = RECORD_OK;

    *out = NULL;
    if (real_dir(common, git_repository_commondir(main)) != 0)
        return err_set(ERR_IO, "%s: %s", git_repository_commondir(main), strerror(errno));
    if (git_worktree_lookup(&gwt, main, name) < 0) {
        git_error_clear();
        /* truncation: ok, a message */
        snprintf(why, n, "no worktree \"%s\" is registered in %s", name, common);
        return RECORD_UNREGISTERED;
    }
    if (vcs_abs_path(rp, sizeof(rp), git_worktree_path(gwt)) != 0 || strcmp(rp, abs) != 0) {
        err_clear();
        /* truncation: ok, a message */
        snprintf(why, n, "worktree name \"%s\" is already used by %s", name,
                 git_worktree_path(gwt));
        rc = RECORD_NONE;
        goto out;
    }
    if (path_fmt(p, sizeof(p), "%s/worktrees/%s", common, name) != 0) {
        rc = err_wrap(ERR_INVALID, "the worktree's git folder");
        goto out;
    }
    if (real_dir(admin, p) != 0 || !is_beneath(common, admin) || !fs_is_dir(admin)) {
        rc = err_set(ERR_INVALID, "%s: the worktree's git folder is not beneath %s", p, common);
        goto out;
    }
    if (gitlink_changed(abs, admin, why, n)) {
        rc = RECORD_CHANGED;
        goto out;
    }
    if (git_repository_open_ext(&repo, admin, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: cannot open the worktree's git folder", admin);
        goto out;
    }
    if (!git_repository_is_worktree(repo) || !git_repository_workdir(repo) ||
        real_dir(rp, git_repository_path(repo)) != 0 || strcmp(rp, admin) != 0 ||
        real_dir(rp, git_repository_workdir(repo)) != 0 || strcmp(rp, abs) != 0 ||
        real_dir(rp, git_repository_commondir(repo)) != 0 || strcmp(rp, common) != 0) {
        /* truncation: ok, a message */
        snprintf(why, n, "its git folders are not the ones goald made");
        rc = RECORD_CHANGED;
        goto out;
    }
    *out = repo;
    repo = NULL;
out:
    git_repository_free(repo);
    git_worktree_free(gwt);
    return rc;
}

int vcs_worktree_open(vcs_worktree **out, const char *repo_path, const char *wt_path)
{
    git_repository *main = NULL, *repo = NULL;
    char abs[PATH_MAX], common[PATH_MAX], admin[PATH_MAX], why[512];
    int rc;

    if ((rc = vcs_init()) != 0 || (rc = vcs_abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    if ((rc = open_main(&main, repo_path)) != 0)
        return rc;
    rc = open_recorded(&repo, common, admin, main, abs, why, sizeof(why));
    if (rc == RECORD_NONE || rc == RECORD_UNREGISTERED)
        rc = err_set(ERR_NOTFOUND, "%s: not a worktree of %s: %s", abs, repo_path, why);
    else if (rc == RECORD_CHANGED)
        rc = err_set(ERR_INVALID, "worktree %s was tampered with: %s", abs, why);
    else if (rc == 0 && (rc = wt_new(out, repo, abs, repo_path, common, admin)) == 0)
        repo = NULL;
    git_repository_free(repo);
    git_repository_free(main);
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
    int rc = vcs_snapshot_tree(&oid, wt);

    /* a refused change is named relative to the worktree, for the model */
    if (rc == ERR_TOOBIG || rc == ERR_POLICY)
        return rc;
    if (rc)
        return err_wrap(rc, "%s", wt->path);
    git_oid_tostr(out, VCS_OID_HEX, &oid);
    return 0;
}

int vcs_worktree_store_tree(char out[VCS_OID_HEX], vcs_worktree *wt)
{
    git_oid oid;
    int rc = vcs_guard_changes(wt->repo);

    if (rc == ERR_TOOBIG || rc == ERR_POLICY)
        return rc;
    if (rc == 0)
        rc = vcs_stage_all(&oid, wt->repo, 0);
    if (rc)
        return err_wrap(rc, "%s", wt->path);
    git_oid_tostr(out, VCS_OID_HEX, &oid);
    return 0;
}

/* 1 when path is a folder directly inside root (or the configured worktree
 * root when root is NULL), compared as realpaths, whose name is an id;
 * that id in id. */
static int id_in_root(const char *path, const char *root, char id[ID_SIZE])
{
    char cfg[PATH_MAX], rr[PATH_MAX], parent[PATH_MAX], rp[PATH_MAX];
    const char *slash = strrchr(path, '/');

    if (!slash || (size_t)(slash - path) >= sizeof(parent) || strlen(slash + 1) != ID_LEN ||
        !id_prefix_valid(slash + 1))
        return 0;
    if (!root) {
        if (vcs_worktree_root(cfg, sizeof(cfg)) != 0) {
            err_clear();
            return 0;
        }
        root = cfg;
    }
    if (!realpath(root, rr))
        return 0;
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    if (!realpath(parent, rp) || strcmp(rp, rr) != 0)
        return 0;
    memcpy(id, slash + 1, ID_SIZE);
    return 1;
}

int vcs_worktree_goal_id(const char *path, char id[ID_SIZE])
{
    return id_in_root(path, NULL, id);
}

/* 1 when abs is a folder goald made in root (NULL: the configured worktree
 * root): a goal's (<root>/<goal id>) or an item's (<root>/<goal
 * id>.items/<item id>).  Nobody else has reason to make folders of those
 * names there. */
static int own_folder(const char *abs, const char *root)
{
    char id[ID_SIZE], parent[PATH_MAX];
    const char *slash = strrchr(abs, '/');
    struct stat sb;
    size_t plen;

    if (id_in_root(abs, root, id))
        return 1;
    /* an item's: its name an id, its parent "<goal id>.items" in the root */
    if (!slash || strlen(slash + 1) != ID_LEN || !id_prefix_valid(slash + 1))
        return 0;
    plen = (size_t)(slash - abs);
    if (plen < sizeof(".items") || plen >= sizeof(parent) ||
        strncmp(abs + plen - (sizeof(".items") - 1), ".items", sizeof(".items") - 1) != 0)
        return 0;
    /* the parent without ".items" names a goal's folder in the root, and
     * the parent itself is a real folder there, not a link elsewhere */
    memcpy(parent, abs, plen - (sizeof(".items") - 1));
    parent[plen - (sizeof(".items") - 1)] = '\0';
    if (!id_in_root(parent, root, id))
        return 0;
    memcpy(parent, abs, plen);
    parent[plen] = '\0';
    return lstat(parent, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The lock file of the goal's own branch (refs/heads/BRANCH.lock), left by
 * a job killed while it created or moved the branch, is removed: git
 * takes such a file for a writer at work and refuses the branch for ever.
 * Only goald writes its goal branch, and only the one job a goal has at a
 * time (the claim rule), so at the start of a job a lock there is stale. */
static int clear_branch_lock(git_repository *main, const char *branch)
{
    char common[PATH_MAX], lock[PATH_MAX + 64];

    if (real_dir(common, git_repository_commondir(main)) != 0)
        return 0; /* nothing to look at: the branch operations will say */
    if (snprintf(lock, sizeof(lock), "%s/refs/heads/%s.lock", common, branch) >= (int)sizeof(lock))
        return 0;
    return vcs_lock_clear_stale(common, lock);
}

/* A worktree taken up again: what a job killed in its commit left, the
 * branch's lock and the worktree's index lock (in its admin folder, which
 * the sandbox binds read-only: only goald writes there). */
static int clear_commit_locks(git_repository *main, const vcs_worktree *wt, const char *branch)
{
    char lock[PATH_MAX + 16];
    int rc = clear_branch_lock(main, branch);

    if (rc || snprintf(lock, sizeof(lock), "%s/index.lock", wt->admin) >= (int)sizeof(lock))
        return rc;
    return vcs_lock_clear_stale(wt->common, lock);
}

/* What vcs_worktree_create works with while it makes room at abs. */
struct room {
    git_repository *main;
    const char *repo_path, *abs, *branch;
    const char *root; /* the worktree root goald's records put abs in; NULL: configured */
    char *rebuilt;    /* why the folder was made again, when it was */
    size_t rn;
};

/* wt_path exists and is not an empty folder.  A worktree of main that
 * goald's records name is reused (0, *out set) when it is intact and on
 * branch; when it was tampered with (its .git rewritten, a forged git
 * folder) it is removed without following any link and 1 is returned: the
 * caller makes it again.  Anything else is not goald's to touch:
 * ERR_INVALID. */
static int reuse_existing(vcs_worktree **out, const struct room *r)
{
    git_repository *main = r->main, *repo = NULL;
    const char *abs = r->abs, *branch = r->branch;
    vcs_worktree *wt = NULL;
    char common[PATH_MAX], admin[PATH_MAX], why[512];
    int rc;

    rc = open_recorded(&repo, common, admin, main, abs, why, sizeof(why));
    /* a folder of goald's own worktree root that no worktree is registered
     * for was left half-made by a job killed in git_worktree_add (the
     * model cannot unregister one: the common folder is read-only in the
     * sandbox): made again, like a tampered one */
    if (rc == RECORD_UNREGISTERED && own_folder(abs, r->root)) {
        snprintf(r->rebuilt, r->rn, "%.400s: left half-made", why); /* truncation: ok, a message */
        if ((rc = fs_remove_tree(abs)) != 0)
            return err_wrap(rc, "removing the half-made worktree %s", abs);
        return 1;
    }
    if (rc == RECORD_NONE || rc == RECORD_UNREGISTERED)
        return err_set(ERR_INVALID, "%s exists and is not a worktree of %s (%s)", abs,
                       git_repository_workdir(main), why);
    if (rc == RECORD_CHANGED) {
        snprintf(r->rebuilt, r->rn, "%s", why); /* truncation: ok, a message */
        if ((rc = fs_remove_tree(abs)) != 0)
            return err_wrap(rc, "removing the tampered worktree %s", abs);
        return 1;
    }
    if (rc != 0)
        return rc;
    if ((rc = wt_new(&wt, repo, abs, r->repo_path, common, admin)) != 0)
        goto out;
    repo = NULL;
    if (strcmp(vcs_worktree_branch(wt), branch) != 0) {
        rc = err_set(ERR_INVALID, "%s is a worktree on branch \"%s\", not \"%s\"", abs, wt->branch,
                     branch);
        goto out;
    }
    if ((rc = clear_commit_locks(main, wt, branch)) != 0)
        goto out;
    *out = wt;
    wt = NULL;
out:
    vcs_worktree_free(wt);
    git_repository_free(repo);
    return rc;
}

/* The registration folder (GIT/worktrees/NAME) that a job killed inside
 * git_worktree_add left without the files that make it a registration
 * (libgit2 then neither finds it nor makes it again: "directory exists")
 * is removed: only a real folder whose parent resolves to the git folder's
 * worktrees/ (fs_remove_tree follows no link inside it).  A link there,
 * or anything else, is left alone and refused. */
static int clear_half_registered(git_repository *main, const char *name)
{
    char common[PATH_MAX], admin[PATH_MAX + 300], dir[PATH_MAX], rdir[PATH_MAX];
    struct stat sb;

    if (real_dir(common, git_repository_commondir(main)) != 0)
        return 0;
    if (snprintf(admin, sizeof(admin), "%s/worktrees/%s", common, name) >= (int)sizeof(admin) ||
        lstat(admin, &sb) != 0)
        return 0;
    if (!S_ISDIR(sb.st_mode) || fs_dirname(dir, sizeof(dir), admin) != 0 ||
        real_dir(rdir, dir) != 0 || !is_beneath(common, rdir))
        return err_set(ERR_INVALID, "%s: a half-made worktree registration that is not a "
                                    "folder goald can clear: left alone",
                       admin);
    return fs_remove_tree(admin);
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
        return clear_half_registered(main, name);
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

/* What a killed job can leave before the worktree is made: a stale
 * registration (clear_stale) and a stale lock of the branch. */
static int clear_leftovers(git_repository *main, const char *name, const char *abs,
                           const char *branch)
{
    int rc = clear_stale(main, name, abs);

    return rc ? rc : clear_branch_lock(main, branch);
}

/* Before a worktree is made at abs (under the lock): an intact worktree
 * of main on branch there is reused (*out set, 1); a tampered or
 * half-made one is removed, an empty folder too (libgit2 wants to make
 * the folder itself), and what a killed job left is cleared (0: make it);
 * anything else there is refused. */
static int make_room(vcs_worktree **out, const struct room *r)
{
    const char *abs = r->abs;
    int rc;

    if (fs_exists(abs)) {
        if (!(fs_is_dir(abs) && dir_is_empty(abs))) {
            rc = reuse_existing(out, r);
            if (rc != 1)
                return rc == 0 ? 1 : rc;
            /* tampered with and removed: made again */
        } else if (rmdir(abs) != 0) {
            return err_set(ERR_IO, "%s: %s", abs, strerror(errno));
        }
    }
    return clear_leftovers(r->main, base_name(abs), abs, r->branch);
}

int vcs_worktree_create(vcs_worktree **out, const char *repo_path, const char *base_branch,
                        const char *branch, const char *wt_path)
{
    return vcs_worktree_create_in(out, NULL, repo_path, base_branch, branch, wt_path);
}

int vcs_worktree_create_in(vcs_worktree **out, const char *root, const char *repo_path,
                           const char *base_branch, const char *branch, const char *wt_path)
{
    struct room room;
    git_repository *main = NULL, *repo = NULL;
    git_reference *ref = NULL, *base_ref = NULL;
    git_commit *base_commit = NULL;
    git_worktree *gwt = NULL;
    git_worktree_add_options ao;
    char abs[PATH_MAX], parent[PATH_MAX], common[PATH_MAX], admin[PATH_MAX], why[512];
    char rebuilt[512] = "";
    const char *name;
    vcs_worktree *wt = NULL;
    int lock = -1, rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!branch || !vcs_branch_name_valid(branch))
        return err_set(ERR_INVALID, "\"%s\" is not a valid branch name", branch ? branch : "");
    if ((rc = vcs_abs_path(abs, sizeof(abs), wt_path)) != 0)
        return rc;
    name = base_name(abs);
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return err_set(ERR_INVALID, "%s: not a usable worktree folder", wt_path);
    if ((rc = open_main(&main, repo_path)) != 0)
        goto out;
    if (vcs_same_dir(git_repository_workdir(main), abs)) {
        rc = err_set(ERR_INVALID, "%s is the repository's own work folder", abs);
        goto out;
    }
    /* from the look at the folder to the new worktree, no other process
     * adds, removes or prunes a worktree of this repository */
    if ((lock = vcs_wt_lock(main)) < 0) {
        rc = lock;
        goto out;
    }

    room = (struct room){main, repo_path, abs, branch, root, rebuilt, sizeof(rebuilt)};
    if ((rc = make_room(out, &room)) != 0) {
        rc = rc == 1 ? 0 : rc; /* 1: reused as it was */
        goto out;
    }

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
    fault_point("vcs.worktree_added");
    rc = open_recorded(&repo, common, admin, main, abs, why, sizeof(why));
    if (rc > 0)
        rc = err_set(ERR_FAIL, "cannot open the new worktree %s: %s", abs, why);
    if (rc != 0 || (rc = wt_new(&wt, repo, abs, repo_path, common, admin)) != 0)
        goto out;
    repo = NULL;
    snprintf(wt->rebuilt, sizeof(wt->rebuilt), "%s", rebuilt); /* truncation: ok, a message */
    *out = wt;
out:
    vcs_wt_unlock(lock);
    git_worktree_free(gwt);
    git_repository_free(repo);
    git_commit_free(base_commit);
    git_reference_free(base_ref);
    git_reference_free(ref);
    git_repository_free(main);
    return rc;
}

int vcs_folder_git_dirs(const char *folder, char *common, size_t cn, char *admin, size_t an)
{
    git_repository *repo = NULL;
    char c[PATH_MAX], a[PATH_MAX], w[PATH_MAX], f[PATH_MAX];
    int rc = 0;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!realpath(folder, f))
        return err_set(ERR_NOTFOUND, "%s: %s", folder, strerror(errno));
    if (git_repository_open_ext(&repo, f, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        git_error_clear();
        return err_set(ERR_NOTFOUND, "%s: not a git work folder", f);
    }
    if (!git_repository_workdir(repo) || real_dir(w, git_repository_workdir(repo)) != 0 ||
        strcmp(w, f) != 0 || real_dir(c, git_repository_commondir(repo)) != 0 ||
        real_dir(a, git_repository_path(repo)) != 0) {
        rc = err_set(ERR_NOTFOUND, "%s: not a git work folder", f);
        goto out;
    }
    if (!is_beneath(c, a)) {
        rc = err_set(ERR_INVALID, "%s: its git folder %s is not beneath %s", f, a, c);
        goto out;
    }
    if ((size_t)snprintf(common, cn, "%s", c) >= cn || (size_t)snprintf(admin, an, "%s", a) >= an)
        rc = err_set(ERR_INVALID, "%s: path too long", f);
out:
    git_repository_free(repo);
    return rc;
}
