/*
 * fstree.c - whole folders copied and measured without following a link
 * (fstree.h).  Top to bottom: the walk's state; one file, one link and
 * one folder copied; the copy; the size.
 */
#include "util/fstree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"

#define ENTRY_COST 512 /* what an entry counts against the cap besides its bytes */

struct tree_walk {
    uint64_t cap, bytes;
};

/* Count len more bytes; ERR_TOOBIG past the cap. */
static int walk_add(struct tree_walk *w, uint64_t len)
{
    w->bytes += len + ENTRY_COST;
    if (w->bytes > w->cap)
        return err_set(ERR_TOOBIG, "more than %llu bytes", (unsigned long long)w->cap);
    return 0;
}

static int copy_fd(int in, int out, const char *name)
{
    char buf[65536];

    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)1 << 30, 0);
        if (n == 0)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break; /* not on this file system: read and write */
    }
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return err_set(ERR_IO, "%s: read: %s", name, strerror(errno));
        for (ssize_t off = 0; off < n;) {
            ssize_t m = write(out, buf + off, (size_t)(n - off));
            if (m < 0 && errno == EINTR)
                continue;
            if (m < 0)
                return err_set(ERR_IO, "%s: write: %s", name, strerror(errno));
            off += m;
        }
    }
}

/* The regular file name of sfd (st: its lstat) into dfd, unless dfd has
 * one of that name already. */
static int copy_file(struct tree_walk *w, int sfd, int dfd, const char *name, const struct stat *st)
{
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    struct stat fst;
    int in = -1, out = -1, rc;

    if ((rc = walk_add(w, (uint64_t)st->st_size)) != 0)
        return rc;
    in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0 && errno != ENOENT && errno != ELOOP)
        return err_set(ERR_IO, "%s: open: %s", name, strerror(errno));
    if (in < 0 || fstat(in, &fst) != 0 || !S_ISREG(fst.st_mode))
        goto out; /* gone, or swapped for something else: left out */
    out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 (st->st_mode & 0777) | 0600);
    if (out < 0) {
        rc = errno == EEXIST ? 0 : err_set(ERR_IO, "%s: create: %s", name, strerror(errno));
        goto out; /* there already: kept */
    }
    if ((rc = copy_fd(in, out, name)) == 0 && futimens(out, ts) != 0)
        rc = err_set(ERR_IO, "%s: times: %s", name, strerror(errno));
out:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* The link name of sfd as a link in dfd (its text copied, never
 * followed), unless dfd has that name already. */
static int copy_link(struct tree_walk *w, int sfd, int dfd, const char *name, const struct stat *st)
{
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    char target[PATH_MAX];
    ssize_t n;
    int rc;

    if ((rc = walk_add(w, 0)) != 0)
        return rc;
    n = readlinkat(sfd, name, target, sizeof(target) - 1);
    if (n < 0)
        return errno == ENOENT ? 0 : err_set(ERR_IO, "%s: readlink: %s", name, strerror(errno));
    target[n] = '\0';
    if (symlinkat(target, dfd, name) != 0)
        return errno == EEXIST ? 0 : err_set(ERR_IO, "%s: symlink: %s", name, strerror(errno));
    if (utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) != 0)
        return err_set(ERR_IO, "%s: times: %s", name, strerror(errno));
    return 0;
}

/* Open the folder name in dirfd, never through a link; -1 when it is not
 * one. */
static int open_dir(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int copy_dir(struct tree_walk *w, int sfd, int dfd, int depth);

/* The folder sname of sfd (st: its lstat) into dname of dfd, made when
 * missing, entered when there; its time set after its contents. */
static int copy_sub(struct tree_walk *w, int sfd, const char *sname, int dfd, const char *dname,
                    const struct stat *st, int depth)
{
    const char *name = dname;
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    int s = -1, d = -1, rc;

    if (depth >= FS_TREE_DEPTH)
        return err_set(ERR_TOOBIG, "%s: folders deeper than %d", name, FS_TREE_DEPTH);
    if ((rc = walk_add(w, 0)) != 0)
        return rc;
    if (mkdirat(dfd, name, 0700) != 0 && errno != EEXIST)
        return err_set(ERR_IO, "%s: mkdir: %s", name, strerror(errno));
    if ((d = open_dir(dfd, name)) < 0)
        return err_set(ERR_POLICY, "%s: there already, and not a folder", name);
    if ((s = open_dir(sfd, sname)) < 0) {
        rc = 0; /* gone, or swapped for a link: left out */
        goto out;
    }
    if ((rc = copy_dir(w, s, d, depth + 1)) != 0)
        goto out;
    if (fchmod(d, (st->st_mode & 0777) | 0700) != 0 || futimens(d, ts) != 0)
        rc = err_set(ERR_IO, "%s: mode or times: %s", name, strerror(errno));
out:
    if (s >= 0)
        close(s);
    close(d);
    return rc;
}

/* Every entry of the open folder sfd into the open folder dfd. */
static int copy_dir(struct tree_walk *w, int sfd, int dfd, int depth)
{
    int fd = dup(sfd), rc = 0;
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;

    if (!dir) {
        if (fd >= 0)
            close(fd);
        return err_set(ERR_IO, "a folder: %s", strerror(errno));
    }
    rewinddir(dir);
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (S_ISREG(st.st_mode))
            rc = copy_file(w, sfd, dfd, e->d_name, &st);
        else if (S_ISLNK(st.st_mode))
            rc = copy_link(w, sfd, dfd, e->d_name, &st);
        else if (S_ISDIR(st.st_mode))
            rc = copy_sub(w, sfd, e->d_name, dfd, e->d_name, &st, depth);
        /* a FIFO, a socket or a device: left out */
    }
    closedir(dir);
    return rc;
}

int fs_tree_copy_at(int src_dir, const char *src_name, int dst_dir, const char *dst_name,
                    uint64_t cap, uint64_t *bytes)
{
    struct tree_walk w = {cap, 0};
    struct stat st;
    int rc;

    if (bytes)
        *bytes = 0;
    if (fstatat(src_dir, src_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        return err_set(ERR_POLICY, "%s: not a folder", src_name);
    rc = copy_sub(&w, src_dir, src_name, dst_dir, dst_name, &st, 0);
    if (bytes)
        *bytes = w.bytes;
    return rc;
}

/* The bytes beneath the open folder fd into w. */
static int size_dir(struct tree_walk *w, int fd, int depth)
{
    int dfd = dup(fd), rc = 0;
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    struct dirent *e;

    if (!dir) {
        if (dfd >= 0)
            close(dfd);
        return err_set(ERR_IO, "a folder: %s", strerror(errno));
    }
    if (depth >= FS_TREE_DEPTH) {
        closedir(dir);
        return err_set(ERR_TOOBIG, "folders deeper than %d", FS_TREE_DEPTH);
    }
    rewinddir(dir);
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        struct stat st;
        int sub;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        rc = walk_add(w, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
        if (rc == 0 && S_ISDIR(st.st_mode) && (sub = open_dir(fd, e->d_name)) >= 0) {
            rc = size_dir(w, sub, depth + 1);
            close(sub);
        }
    }
    closedir(dir);
    return rc;
}

int fs_tree_size_at(int dir, const char *name, uint64_t cap, uint64_t *bytes)
{
    struct tree_walk w = {cap, 0};
    int fd = open_dir(dir, name), rc;

    *bytes = 0;
    if (fd < 0)
        return err_set(ERR_POLICY, "%s: not a folder", name);
    rc = size_dir(&w, fd, 0);
    close(fd);
    *bytes = w.bytes;
    return rc;
}
