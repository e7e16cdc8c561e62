#include "sandbox/path.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/err.h"
#include "util/path.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static int forced_fallback;
static int no_openat2; /* the kernel said ENOSYS */

void path_force_fallback(int on)
{
    forced_fallback = on;
}

int path_have_openat2(void)
{
    return !forced_fallback && !no_openat2;
}

static int is_git_name(const char *p, size_t len)
{
    return len == 4 && !strncasecmp(p, ".git", 4);
}

int path_has_git(const char *p)
{
    while (*p) {
        size_t cl = strcspn(p, "/");
        if (is_git_name(p, cl))
            return 1;
        p += cl;
        if (*p == '/')
            p++;
    }
    return 0;
}

static int git_refused(const char *orig)
{
    return err_set(ERR_POLICY,
                   "%s: git metadata (a .git component, in any case) is not open to the tools",
                   orig);
}

/* Append the normalised components of p (relative) to out. */
static int push_components(char *out, size_t n, size_t *len, const char *p, const char *orig,
                           int check_git)
{
    while (*p) {
        size_t cl = strcspn(p, "/");
        if (cl == 0 || (cl == 1 && p[0] == '.')) {
            /* empty or "." */
        } else if (cl == 2 && p[0] == '.' && p[1] == '.') {
            return err_set(ERR_POLICY, "%s: \"..\" is not allowed in tool paths", orig);
        } else if (check_git && is_git_name(p, cl)) {
            return git_refused(orig);
        } else {
            if (*len + cl + 2 > n)
                return err_set(ERR_INVALID, "%s: path too long", orig);
            if (*len)
                out[(*len)++] = '/';
            memcpy(out + *len, p, cl);
            *len += cl;
            out[*len] = '\0';
        }
        p += cl;
        if (*p == '/')
            p++;
    }
    return 0;
}

/* When abs starts with prefix as whole components, the rest (maybe ""). */
static const char *under(const char *abs, const char *prefix)
{
    size_t pl = strlen(prefix);

    while (pl > 1 && prefix[pl - 1] == '/')
        pl--;
    if (strncmp(abs, prefix, pl) != 0)
        return NULL;
    if (abs[pl] == '\0')
        return abs + pl;
    if (abs[pl] == '/')
        return abs + pl + 1;
    if (pl == 1 && prefix[0] == '/')
        return abs + 1;
    return NULL;
}

int path_rel(char *rel, size_t n, const char *root, const char *path)
{
    size_t len = 0;
    const char *rest;
    char *real = NULL;
    int rc;

    if (n < 2)
        return err_set(ERR_INVALID, "path buffer too small");
    rel[0] = '\0';
    if (!path || !*path)
        return err_set(ERR_INVALID, "path: expected a non-empty path");
    if (strlen(path) >= PATH_MAX)
        return err_set(ERR_INVALID, "path too long");
    if (path[0] == '/') {
        /* lexically beneath the root as given, or as resolved */
        char norm[PATH_MAX];
        size_t nl = 0;
        norm[0] = '\0';
        /* the root's own spelling may hold anything: .git is checked on
         * the part beneath it */
        if ((rc = push_components(norm, sizeof(norm), &nl, path + 1, path, 0)) != 0)
            return rc;
        memmove(norm + 1, norm, nl + 1);
        norm[0] = '/';
        rest = under(norm, root);
        if (!rest && (real = realpath(root, NULL)) != NULL)
            rest = under(norm, real);
        if (!rest) {
            free(real);
            return err_set(ERR_POLICY, "%s: outside the worktree %s", path, root);
        }
        rc = push_components(rel, n, &len, rest, path, 1);
        free(real);
        if (rc)
            return rc;
    } else if ((rc = push_components(rel, n, &len, path, path, 1)) != 0) {
        return rc;
    }
    if (len == 0)
        snprintf(rel, n, "."); /* truncation: ok, "." fits any rel buffer */
    return 0;
}

int path_open_root(int *out, const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return err_set(errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: cannot open the worktree: %s",
                       root, strerror(errno));
    *out = fd;
    return 0;
}

static int map_errno(int e, const char *rel)
{
    switch (e) {
    case EXDEV:
        return err_set(ERR_POLICY, "%s: leads outside the worktree", rel);
    case ELOOP:
        return err_set(ERR_POLICY, "%s: a symlink that leads outside the worktree or loops", rel);
    case ENOENT:
        return err_set(ERR_NOTFOUND, "%s: no such file or folder", rel);
    case ENOTDIR:
        return err_set(ERR_NOTFOUND, "%s: a part of the path is not a folder", rel);
    case EISDIR:
        return err_set(ERR_INVALID, "%s: is a folder", rel);
    default:
        return err_set(ERR_IO, "%s: %s", rel, strerror(e));
    }
}

/* One component at a time, never following a symlink. */
static int walk_nofollow(int *out, int root_fd, const char *rel, int flags, mode_t mode)
{
    char buf[PATH_MAX];
    char *p = buf, *slash;
    int cur = root_fd;
    int fd = -1;
    int rc = 0;

    if ((rc = path_fmt(buf, sizeof(buf), "%s", rel)) != 0)
        return rc;
    if (!strcmp(buf, ".")) {
        fd = openat(root_fd, ".", flags | O_CLOEXEC, mode);
        if (fd < 0)
            return map_errno(errno, rel);
        *out = fd;
        return 0;
    }
    while ((slash = strchr(p, '/')) != NULL) {
        int next;
        *slash = '\0';
        next = openat(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            struct stat st;
            int e = errno;
            if (fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                rc = err_set(ERR_POLICY,
                             "%s: symlinks are not followed (this kernel lacks openat2)", rel);
            else
                rc = map_errno(e, rel);
            goto out;
        }
        if (cur != root_fd)
            close(cur);
        cur = next;
        p = slash + 1;
    }
    fd = openat(cur, p, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (e == ELOOP || (fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
            rc = err_set(ERR_POLICY, "%s: symlinks are not followed (this kernel lacks openat2)",
                         rel);
        else
            rc = map_errno(e, rel);
        goto out;
    }
    *out = fd;
out:
    if (cur != root_fd)
        close(cur);
    return rc;
}

/* When fd (opened beneath root_fd, through symlinks maybe) is at or below
 * a .git component of the worktree: a symlink such as x -> .git must not
 * open the door that the lexical check closed.  Without /proc the check
 * cannot be made; the lexical one still holds. */
static int resolved_git(int fd, int root_fd, const char *rel)
{
    char link[64], abs[PATH_MAX], rootp[PATH_MAX];
    const char *rest;
    ssize_t k, r;

    /* truncation: ok, /proc/self/fd/ and an int always fit 64 bytes */
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    k = readlink(link, abs, sizeof(abs) - 1);
    /* truncation: ok, /proc/self/fd/ and an int always fit 64 bytes */
    snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
    r = readlink(link, rootp, sizeof(rootp) - 1);
    if (k <= 0 || r <= 0)
        return 0;
    abs[k] = '\0';
    rootp[r] = '\0';
    rest = under(abs, rootp);
    if (rest && path_has_git(rest))
        return git_refused(rel);
    return 0;
}

int path_open(int *out, int root_fd, const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    long fd;

    if (!path_have_openat2())
        return walk_nofollow(out, root_fd, rel, flags, mode);
    memset(&how, 0, sizeof(how));
    how.flags = (unsigned long long)(flags | O_CLOEXEC);
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    for (int tries = 0; tries < 16; tries++) {
        fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
        if (fd >= 0) {
            int rc = resolved_git((int)fd, root_fd, rel);
            if (rc) {
                close((int)fd);
                return rc;
            }
            *out = (int)fd;
            return 0;
        }
        if (errno == EAGAIN || errno == EINTR)
            continue;
        if (errno == ENOSYS) {
            no_openat2 = 1;
            return walk_nofollow(out, root_fd, rel, flags, mode);
        }
        break;
    }
    return map_errno(errno, rel);
}

int path_open_parent(int *dir_out, char *leaf, size_t n, int root_fd, const char *rel, int mkdirs)
{
    char buf[PATH_MAX];
    const char *slash = strrchr(rel, '/');
    char *p;
    int fd = -1;
    int rc;

    if (!strcmp(rel, "."))
        return err_set(ERR_INVALID, "%s: is the worktree itself", rel);
    if ((size_t)snprintf(leaf, n, "%s", slash ? slash + 1 : rel) >= n)
        return err_set(ERR_INVALID, "%s: name too long", rel);
    if (!slash)
        return path_open(dir_out, root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
    if ((rc = path_fmt(buf, sizeof(buf), "%.*s", (int)(slash - rel), rel)) != 0)
        return rc;
    rc = path_open(&fd, root_fd, buf, O_RDONLY | O_DIRECTORY, 0);
    if (rc != ERR_NOTFOUND || !mkdirs) {
        if (rc == 0)
            *dir_out = fd;
        return rc;
    }
    /* create the missing folders one at a time, each opened beneath the root */
    err_clear();
    p = buf;
    for (;;) {
        char *s = strchr(p, '/');
        int parent = -1, dfd = -1;
        char name[NAME_MAX + 1];
        const char *last;
        if (s)
            *s = '\0';
        rc = path_open(&dfd, root_fd, buf, O_RDONLY | O_DIRECTORY, 0);
        if (rc == ERR_NOTFOUND) {
            err_clear();
            last = strrchr(buf, '/');
            if (strlen(last ? last + 1 : buf) >= sizeof(name))
                return err_set(ERR_INVALID, "%s: name too long", buf);
            if (last) {
                char up[PATH_MAX];
                if ((rc = path_fmt(up, sizeof(up), "%.*s", (int)(last - buf), buf)) == 0)
                    rc = path_open(&parent, root_fd, up, O_RDONLY | O_DIRECTORY, 0);
                memcpy(name, last + 1, strlen(last + 1) + 1);
            } else {
                rc = path_open(&parent, root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
                memcpy(name, buf, strlen(buf) + 1);
            }
            if (rc)
                return rc;
            if (mkdirat(parent, name, 0755) != 0 && errno != EEXIST) {
                rc = err_set(ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
                close(parent);
                return rc;
            }
            close(parent);
            rc = path_open(&dfd, root_fd, buf, O_RDONLY | O_DIRECTORY, 0);
        }
        if (rc)
            return rc;
        if (!s) {
            *dir_out = dfd;
            return 0;
        }
        close(dfd);
        *s = '/';
        p = s + 1;
    }
}

int path_follow(char *out, size_t n, int root_fd, const char *rel)
{
    char link[64], abs[PATH_MAX], rootp[PATH_MAX];
    char leaf[NAME_MAX + 1];
    struct stat st;
    int dfd = -1, fd = -1;
    ssize_t k;
    const char *rest;
    int rc;

    if (!strcmp(rel, "."))
        return path_fmt(out, n, "%s", rel);
    if ((rc = path_open_parent(&dfd, leaf, sizeof(leaf), root_fd, rel, 0)) != 0) {
        if (rc == ERR_NOTFOUND) { /* the file will be new */
            err_clear();
            return path_fmt(out, n, "%s", rel);
        }
        return rc;
    }
    if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) {
        close(dfd);
        return path_fmt(out, n, "%s", rel);
    }
    close(dfd);
    if (!path_have_openat2())
        return err_set(ERR_POLICY, "%s: symlinks are not followed (this kernel lacks openat2)",
                       rel);
    rc = path_open(&fd, root_fd, rel, O_PATH, 0);
    if (rc == ERR_NOTFOUND) {
        return err_set(ERR_POLICY, "%s: a symlink to a missing file", rel);
    }
    if (rc)
        return rc;
    /* truncation: ok, /proc/self/fd/ and an int always fit 64 bytes */
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    k = readlink(link, abs, sizeof(abs) - 1);
    close(fd);
    /* truncation: ok, /proc/self/fd/ and an int always fit 64 bytes */
    snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
    {
        ssize_t r = readlink(link, rootp, sizeof(rootp) - 1);
        if (k <= 0 || r <= 0)
            return err_set(ERR_IO, "%s: cannot resolve the symlink", rel);
        rootp[r] = '\0';
    }
    abs[k] = '\0';
    rest = under(abs, rootp);
    if (!rest)
        return err_set(ERR_POLICY, "%s: leads outside the worktree", rel);
    if (path_has_git(rest))
        return git_refused(rel);
    if ((size_t)snprintf(out, n, "%s", *rest ? rest : ".") >= n)
        return err_set(ERR_INVALID, "%s: path too long", rel);
    return 0;
}

int path_glob_covers(const char *glob, const char *rel)
{
    size_t n = strlen(glob);

    return fnmatch(glob, rel, 0) == 0 || (n && !strncmp(rel, glob, n) && rel[n] == '/') ||
           (n && glob[n - 1] == '/' && !strncmp(rel, glob, n));
}
