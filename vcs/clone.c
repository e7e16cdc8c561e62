#include "vcs/clone.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/path.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

/* Spaces and control characters have no place in a URL goald is given. */
static int has_blank(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return 1;
    return 0;
}

int vcs_repo_is_url(const char *repo)
{
    const char *p = repo, *colon, *at, *slash;

    /* a leading '-' would read as an option to whatever transport runs */
    if (!repo || !*repo || *repo == '-' || has_blank(repo))
        return 0;
    /* scheme://rest */
    if (isalpha((unsigned char)*p)) {
        while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
            p++;
        if (!strncmp(p, "://", 3))
            return p[3] != '\0';
    }
    /* scp-like user@host:path: a ':' before any '/', a user before it */
    colon = strchr(repo, ':');
    at = strchr(repo, '@');
    slash = strchr(repo, '/');
    if (!colon || !at || at == repo || at > colon || (slash && slash < colon))
        return 0;
    return colon > at + 1 && colon[1] != '\0';
}

int vcs_repo_is_shared(const char *repo)
{
    git_repository *r = NULL;
    int bare;

    if (!repo || !*repo)
        return 0;
    if (vcs_repo_is_url(repo))
        return 1;
    if (vcs_init() != 0 ||
        git_repository_open_ext(&r, repo, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        git_error_clear();
        err_clear();
        return 0;
    }
    bare = git_repository_is_bare(r);
    git_repository_free(r);
    return bare;
}

int vcs_clone_path(char *out, size_t n, const char *dir, const char *repo)
{
    char hex[HASH_HEX_SIZE];

    hash_sha256_hex(hex, repo, strlen(repo));
    if (snprintf(out, n, "%s/repos/%.16s", dir, hex) >= (int)n)
        return err_set(ERR_INVALID, "clone path too long: %s", dir);
    return 0;
}

int vcs_clones_each(const char *dir, int (*fn)(const char *clone, void *ctx), void *ctx)
{
    char repos[PATH_MAX], path[PATH_MAX + 300];
    struct dirent *e;
    struct stat sb;
    DIR *d;
    int rc = 0;

    if (snprintf(repos, sizeof(repos), "%s/repos", dir) >= (int)sizeof(repos))
        return err_set(ERR_INVALID, "clone path too long: %s", dir);
    if (!(d = opendir(repos)))
        return errno == ENOENT ? 0 : err_set(ERR_IO, "%s: %s", repos, strerror(errno));
    while (rc == 0 && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        /* a clone's name: 16 hex digits (locks and half-made clones have
         * a suffix); a real folder, not a link */
        if (len != 16 || strspn(e->d_name, "0123456789abcdef") != len)
            continue;
        if ((rc = path_fmt(path, sizeof(path), "%s/%s", repos, e->d_name)) != 0) {
            err_wrap(rc, "a clone's folder");
            break;
        }
        if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        rc = fn(path, ctx);
    }
    closedir(d);
    return rc;
}

/* An exclusive lock on "<path>.lock" (its folder made): the fd to close,
 * or a negative error. */
static int lock_take(const char *path)
{
    char lock[PATH_MAX], dir[PATH_MAX];
    int fd, rc;

    if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock))
        return err_set(ERR_INVALID, "clone path too long: %s", path);
    if ((rc = fs_dirname(dir, sizeof(dir), path)) != 0 || (rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return err_set(ERR_IO, "%s: %s", lock, strerror(errno));
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            rc = err_set(ERR_IO, "%s: lock: %s", lock, strerror(errno));
            close(fd);
            return rc;
        }
    }
    return fd;
}

/* Add remote origin = url to repo, without the default fetch refspec:
 * every fetch names what it brings. */
static int origin_create(git_repository *repo, const char *url)
{
    git_remote_create_options o;
    git_remote *r = NULL;
    int rc = 0;

    git_remote_create_options_init(&o, GIT_REMOTE_CREATE_OPTIONS_VERSION);
    o.name = "origin";
    o.repository = repo;
    o.flags = GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
    if (git_remote_create_with_opts(&r, url, &o) < 0)
        rc = vcs_git_err(ERR_FAIL, "remote origin %s", url);
    git_remote_free(r);
    return rc;
}

/* The clone at path, open in *out, when it is one goald can use: a
 * repository with a work folder (never checked out), its origin set to
 * url when it names something else.  0; 1 when there is nothing usable
 * there (*out NULL); or an error. */
static int clone_open(git_repository **out, const char *path, const char *url)
{
    git_repository *repo = NULL;
    git_remote *r = NULL;
    int rc = 0;

    *out = NULL;
    if (!fs_exists(path))
        return 1;
    if (git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
        git_repository_is_bare(repo) || git_repository_is_worktree(repo)) {
        git_error_clear();
        git_repository_free(repo);
        return 1;
    }
    if (git_remote_lookup(&r, repo, "origin") < 0) {
        git_error_clear();
        rc = origin_create(repo, url);
    } else if (!git_remote_url(r) || strcmp(git_remote_url(r), url) != 0) {
        if (git_remote_set_url(repo, "origin", url) < 0)
            rc = vcs_git_err(ERR_FAIL, "%s: remote origin", path);
    }
    git_remote_free(r);
    if (rc)
        git_repository_free(repo);
    else
        *out = repo;
    return rc;
}

/* A new clone at path: a repository made in a folder beside it, with its
 * origin, then renamed into place.  Whatever was at path (not a usable
 * clone) is removed first, without following links. */
static int clone_make(git_repository **out, const char *path, const char *url)
{
    git_repository_init_options io;
    git_repository *repo = NULL;
    char tmp[PATH_MAX];
    int rc;

    if (snprintf(tmp, sizeof(tmp), "%s.new-%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return err_set(ERR_INVALID, "clone path too long: %s", path);
    if ((fs_exists(tmp) && (rc = fs_remove_tree(tmp)) != 0) ||
        (fs_exists(path) && (rc = fs_remove_tree(path)) != 0))
        return err_wrap(rc, "clone %s", path);
    git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    io.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
    if (git_repository_init_ext(&repo, tmp, &io) < 0) {
        rc = vcs_git_err(ERR_IO, "%s: init", tmp);
        goto out;
    }
    if ((rc = origin_create(repo, url)) != 0)
        goto out;
    git_repository_free(repo);
    repo = NULL;
    if (rename(tmp, path) != 0) {
        rc = err_set(ERR_IO, "clone %s: %s", path, strerror(errno));
        goto out;
    }
    if (git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
        rc = vcs_git_err(ERR_IO, "%s: open", path);
out:
    if (rc) {
        git_repository_free(repo);
        repo = NULL;
        if (fs_exists(tmp))
            fs_remove_tree(tmp);
    }
    *out = repo;
    return rc;
}

/* The locks of the refs a fetch writes (refs/heads/<base>, ref), left by
 * a fetch killed while it wrote them: only fetches write those refs in a
 * node's clone, each under the clone's lock, which the caller holds. */
static int clear_fetch_locks(git_repository *repo, const char *base_branch, const char *ref)
{
    char common[PATH_MAX], lock[PATH_MAX + 700];
    int rc;

    if (!realpath(git_repository_commondir(repo), common))
        return 0; /* nothing to look at: the fetch will say */
    if ((rc = path_fmt(lock, sizeof(lock), "%s/refs/heads/%s.lock", common, base_branch)) != 0 ||
        (rc = vcs_lock_clear_stale(common, lock)) != 0)
        return rc;
    if (ref && ((rc = path_fmt(lock, sizeof(lock), "%s/%s.lock", common, ref)) != 0 ||
                (rc = vcs_lock_clear_stale(common, lock)) != 0))
        return rc;
    return 0;
}

/* Fetch the two refspecs from origin (credentials as for a push). */
static int fetch(git_repository *repo, const char *url, const char *base_branch, const char *ref)
{
    git_remote *r = NULL;
    git_fetch_options fo;
    struct vcs_auth auth;
    char base[600], goal[600];
    char *specs[2] = {base, goal};
    git_strarray refspecs = {specs, ref ? 2 : 1};
    int rc = 0;

    memset(&auth, 0, sizeof(auth));
    if (snprintf(base, sizeof(base), "+refs/heads/%s:refs/heads/%s", base_branch, base_branch) >=
            (int)sizeof(base) ||
        (ref && snprintf(goal, sizeof(goal), "+%s:%s", ref, ref) >= (int)sizeof(goal)))
        return err_set(ERR_INVALID, "fetch: ref name too long");
    if (git_remote_lookup(&r, repo, "origin") < 0)
        return vcs_git_err(ERR_FAIL, "fetch from %s: remote origin", url);
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    fo.callbacks.credentials = vcs_auth_cb;
    fo.callbacks.payload = &auth;
    fo.prune = GIT_FETCH_NO_PRUNE;
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    fo.update_fetchhead = 0;
    if (git_remote_fetch(r, &refspecs, &fo, "goald: fetch") < 0) {
        if (auth.why[0]) {
            git_error_clear();
            rc = err_set(ERR_FAIL, "fetch from %s: %s", url, auth.why);
        } else {
            rc = vcs_git_err(ERR_FAIL, "fetch from %s", url);
        }
    }
    git_remote_free(r);
    return rc;
}

int vcs_clone_fetch(const char *path, const char *url, const char *base_branch, const char *ref)
{
    git_repository *repo = NULL;
    git_reference *tip = NULL;
    char name[600];
    int valid = 0, lock, rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!base_branch || !vcs_branch_name_valid(base_branch) ||
        (ref && (strncmp(ref, "refs/", 5) != 0 || git_reference_name_is_valid(&valid, ref) < 0 ||
                 !valid))) {
        git_error_clear();
        return err_set(ERR_INVALID, "fetch: a valid base branch and ref name are required");
    }
    if ((lock = lock_take(path)) < 0)
        return lock;
    rc = clone_open(&repo, path, url);
    if (rc == 1)
        rc = clone_make(&repo, path, url);
    if (rc == 0)
        rc = clear_fetch_locks(repo, base_branch, ref);
    if (rc == 0)
        rc = fetch(repo, url, base_branch, ref);
    if (rc == 0 && (rc = path_fmt(name, sizeof(name), "refs/heads/%s", base_branch)) != 0)
        err_wrap(rc, "fetch: the base branch's ref");
    if (rc == 0 && git_reference_lookup(&tip, repo, name) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "fetch from %s: no branch \"%s\" there", url, base_branch);
    }
    git_reference_free(tip);
    git_repository_free(repo);
    close(lock);
    return rc;
}

int vcs_branch_set(const char *repo_path, const char *branch, const char *sha)
{
    git_repository *repo = NULL;
    git_reference *ref = NULL;
    git_commit *commit = NULL;
    git_oid oid;
    char name[600];
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!branch || !vcs_branch_name_valid(branch) || !sha || git_oid_fromstr(&oid, sha) < 0 ||
        snprintf(name, sizeof(name), "refs/heads/%s", branch) >= (int)sizeof(name)) {
        git_error_clear();
        return err_set(ERR_INVALID, "branch: a valid branch name and commit id are required");
    }
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_commit_lookup(&commit, repo, &oid) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "no commit %s in %s", sha, repo_path);
    } else if (git_reference_create(&ref, repo, name, &oid, 1, "goald: the goal's head") < 0) {
        rc = vcs_git_err(ERR_FAIL, "branch \"%s\"", branch);
    }
    git_reference_free(ref);
    git_commit_free(commit);
    git_repository_free(repo);
    return rc;
}
