#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"

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

    snprintf(tmp, sizeof(tmp), ".goald-tmp-%ld-%u", (long)getpid(), counter++);
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

static int rm_one(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    if (remove(fpath) != 0 && errno != ENOENT)
        return -1;
    return 0;
}

int fs_remove_tree(const char *path)
{
    if (!fs_exists(path))
        return 0;
    if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) != 0)
        return err_set(ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    return 0;
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
