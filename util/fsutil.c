#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/path.h"
#include "util/xalloc.h"

int fs_mkdir_p(const char *path, mode_t mode)
{
    char buf[4096];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(buf))
        return err_set(ERR_INVALID, "%s: path too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return err_set(ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
        buf[i] = c;
    }
    if (!fs_is_dir(path))
        return err_set(ERR_IO, "%s: not a folder", path);
    return 0;
}

int fs_read_file(strbuf *out, const char *path, size_t cap)
{
    char chunk[65536];
    size_t total = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = 0;

    if (fd < 0)
        return err_set(errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s", path,
                       strerror(errno));
    for (;;) {
        ssize_t got = read(fd, chunk, sizeof(chunk));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(ERR_IO, "%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        total += (size_t)got;
        if (total > cap) {
            rc = err_set(ERR_TOOBIG, "%s: larger than %zu bytes", path, cap);
            break;
        }
        if ((rc = strbuf_add(out, chunk, (size_t)got)) != 0)
            break;
    }
    close(fd);
    return rc;
}

int fs_dirname(char *out, size_t n, const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t len;

    if (!slash) {
        if (n < 2)
            return ERR_TOOBIG;
        memcpy(out, ".", 2);
        return 0;
    }
    len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= n)
        return err_set(ERR_TOOBIG, "%s: path too long", path);
    memcpy(out, path, len);
    out[len] = '\0';
    return 0;
}

int fs_write_all(int fd, const void *data, size_t len, const char *label)
{
    const char *p = data;

    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return err_set(ERR_IO, "%s: write failed: %s", label, strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

struct one_buf {
    const void *data;
    size_t len;
};

static int write_one(void *arg, int fd, const char *label)
{
    const struct one_buf *b = arg;
    return fs_write_all(fd, b->data, b->len, label);
}

/* label names the file in messages. */
static int write_at(int dfd, const char *name, const char *label, fs_fill_fn fill, void *arg,
                    mode_t mode)
{
    static unsigned counter;
    char tmp[64];
    int fd;
    int rc = 0;

    if ((rc = path_fmt(tmp, sizeof(tmp), ".goald-tmp-%ld-%u", (long)getpid(), counter++)) != 0)
        return err_wrap(rc, "%s: a temporary file", label);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(ERR_IO, "%s: cannot create a temporary file: %s", label, strerror(errno));
    if ((rc = fill(arg, fd, label)) != 0)
        goto out;
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        rc = err_set(ERR_IO, "%s: %s", label, strerror(errno));
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = err_set(ERR_IO, "%s: close failed: %s", label, strerror(errno));
        goto out;
    }
    fd = -1;
    if (renameat(dfd, tmp, dfd, name) != 0) {
        rc = err_set(ERR_IO, "%s: rename failed: %s", label, strerror(errno));
        goto out;
    }
    fsync(dfd); /* the rename itself; best effort (not every fs supports it) */
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        unlinkat(dfd, tmp, 0);
    return rc;
}

int fs_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
    struct one_buf b = {data, len};
    return write_at(dfd, name, name, write_one, &b, mode);
}

int fs_write_atomic_fill_at(int dfd, const char *name, fs_fill_fn fill, void *arg, mode_t mode)
{
    return write_at(dfd, name, name, fill, arg, mode);
}

int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    int dfd, rc;

    if (!*name)
        return err_set(ERR_INVALID, "%s: not a file name", path);
    if (fs_dirname(dir, sizeof(dir), path) != 0)
        return err_set(ERR_INVALID, "%s: path too long", path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return err_set(errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s", dir, strerror(errno));
    {
        struct one_buf b = {data, len};
        rc = write_at(dfd, name, path, write_one, &b, mode);
    }
    close(dfd);
    return rc;
}

/* One folder on the way down from the root of fs_remove_tree(), with the
 * names of its sub-folders found by the one scan of it. */
struct rm_level {
    char *name; /* in its parent; NULL for the root */
    dev_t dev;
    ino_t ino;
    char **subs; /* sub-folders still to remove */
    size_t nsubs, next;
};

static void rm_level_free(struct rm_level *l)
{
    free(l->name);
    for (size_t i = l->next; i < l->nsubs; i++)
        free(l->subs[i]);
    free(l->subs);
}

/* The model (the same user) may leave folders it cannot be entered or
 * emptied (chmod 000, 555): give the owner rwx back.  fd is a folder
 * opened with O_NOFOLLOW; name (NULL: fd itself) is a folder in it, and
 * fchmodat never follows a link (AT_SYMLINK_NOFOLLOW). */
static int rm_unlock(int fd, const char *name)
{
    if (!name)
        return fchmod(fd, 0700);
    return fchmodat(fd, name, 0700, AT_SYMLINK_NOFOLLOW);
}

static int rm_unlink(int fd, const char *name, int flags, int *unlocked)
{
    if (unlinkat(fd, name, flags) == 0 || errno == ENOENT)
        return 0;
    if ((errno == EACCES || errno == EPERM) && !*unlocked && rm_unlock(fd, NULL) == 0) {
        *unlocked = 1;
        if (unlinkat(fd, name, flags) == 0 || errno == ENOENT)
            return 0;
    }
    return -1;
}

/* A sub-folder of fd, never through a link; made enterable once if the
 * model locked it.  The fd, or -1 with errno set. */
static int rm_open(int fd, const char *name)
{
    int child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (child < 0 && (errno == EACCES || errno == EPERM) && rm_unlock(fd, name) == 0)
        child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return child;
}

/* One pass over the open folder fd: every entry that is not a folder is
 * removed (links, files, FIFOs, sockets, devices: unlinkat removes the
 * entry itself, never what a link names), the names of the sub-folders
 * are kept in lv (one pass per folder: a folder with 100000 sub-folders is
 * read once, not once per sub-folder). */
static int rm_entries(int fd, struct rm_level *lv, const char *label)
{
    DIR *d;
    struct dirent *e;
    size_t alloc = 0;
    int dup_fd = dup(fd), unlocked = 0, rc = 0;

    if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
        if (dup_fd >= 0)
            close(dup_fd);
        return err_set(ERR_IO, "%s: cannot read a folder: %s", label, strerror(errno));
    }
    while ((e = readdir(d))) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            rc = err_set(ERR_IO, "%s: %s: %s", label, e->d_name, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (lv->nsubs == alloc) {
                alloc = alloc ? alloc * 2 : 16;
                lv->subs = xrealloc(lv->subs, alloc * sizeof(*lv->subs));
            }
            lv->subs[lv->nsubs++] = xstrdup(e->d_name);
            continue;
        }
        if (rm_unlink(fd, e->d_name, 0, &unlocked) != 0) {
            rc = err_set(ERR_IO, "%s: cannot remove %s: %s", label, e->d_name, strerror(errno));
            break;
        }
    }
    closedir(d);
    return rc;
}

/* The walk of fs_remove_tree(): the folders from the root down to the one
 * open in fd. */
struct rm_walk {
    const char *path; /* the root, for messages */
    struct rm_level *lv;
    size_t n, alloc;
    int fd;
};

/* Open the root folder (giving a locked one rwx back once) into w->fd and
 * read its entries. */
static int rm_walk_start(struct rm_walk *w)
{
    struct stat st;

    w->fd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (w->fd < 0 && (errno == EACCES || errno == EPERM) &&
        fchmodat(AT_FDCWD, w->path, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        w->fd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (w->fd < 0 || fstat(w->fd, &st) != 0)
        return err_set(ERR_IO, "%s: cannot open: %s", w->path, strerror(errno));
    w->lv = xcalloc(w->alloc = 16, sizeof(*w->lv));
    w->lv[w->n++] = (struct rm_level){NULL, st.st_dev, st.st_ino, NULL, 0, 0};
    return rm_entries(w->fd, &w->lv[0], w->path);
}

/* Down into the sub-folder sub of the open folder (sub is taken over) and
 * read its entries; one that has gone meanwhile is skipped. */
static int rm_walk_down(struct rm_walk *w, char *sub)
{
    struct stat st;
    int child = rm_open(w->fd, sub);

    if (child < 0 && errno == ENOENT) {
        free(sub);
        return 0;
    }
    if (child < 0 || fstat(child, &st) != 0) {
        int rc = err_set(ERR_IO, "%s: cannot open %s: %s", w->path, sub, strerror(errno));
        if (child >= 0)
            close(child);
        free(sub);
        return rc;
    }
    if (w->n == w->alloc) {
        w->lv = xrealloc(w->lv, sizeof(*w->lv) * w->alloc * 2);
        w->alloc *= 2;
    }
    w->lv[w->n++] = (struct rm_level){sub, st.st_dev, st.st_ino, NULL, 0, 0};
    close(w->fd);
    w->fd = child;
    return rm_entries(w->fd, &w->lv[w->n - 1], w->path);
}

/* The open folder is empty: up to the parent (checked to be the one seen
 * on the way down) and remove it there. */
static int rm_walk_up(struct rm_walk *w)
{
    struct rm_level *top = &w->lv[w->n - 1], *up = &w->lv[w->n - 2];
    int parent = openat(w->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int unlocked = 0;
    struct stat st;

    if (parent < 0 || fstat(parent, &st) != 0 || st.st_dev != up->dev || st.st_ino != up->ino) {
        if (parent >= 0)
            close(parent);
        return err_set(ERR_IO, "%s: a folder moved while it was being removed", w->path);
    }
    close(w->fd);
    w->fd = parent;
    if (rm_unlink(w->fd, top->name, AT_REMOVEDIR, &unlocked) != 0)
        return err_set(ERR_IO, "%s: cannot remove %s: %s", w->path, top->name, strerror(errno));
    rm_level_free(&w->lv[--w->n]);
    return 0;
}

/* Depth first without recursion and with one folder open at a time: down
 * into a sub-folder by openat(O_NOFOLLOW | O_DIRECTORY) (a link is never
 * entered), back up by "..", checked against the device and inode seen on
 * the way down, so a tree as deep as the model likes needs neither stack
 * nor file descriptors in proportion.  A folder the model locked (chmod
 * 000 or 555) is given rwx back, once, without following a link. */
int fs_remove_tree(const char *path)
{
    struct rm_walk w = {.path = path, .fd = -1};
    struct stat st;
    int rc;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : err_set(ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return err_set(ERR_INVALID, "%s: a symbolic link, not removed as a folder", path);
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return err_set(ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
        return 0;
    }
    if ((rc = rm_walk_start(&w)) != 0)
        goto out;
    for (;;) {
        struct rm_level *top = &w.lv[w.n - 1];

        if (top->next < top->nsubs)
            rc = rm_walk_down(&w, top->subs[top->next++]);
        else if (w.n == 1)
            break;
        else
            rc = rm_walk_up(&w);
        if (rc != 0)
            goto out;
    }
    close(w.fd);
    w.fd = -1;
    if (rmdir(path) != 0 && errno != ENOENT)
        rc = err_set(ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
out:
    if (w.fd >= 0)
        close(w.fd);
    while (w.n > 0)
        rm_level_free(&w.lv[--w.n]);
    free(w.lv);
    return rc;
}

int fs_is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fs_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}
