/* File helpers shared by read, write and edit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/internal.h"
#include "util/err.h"

int tool_read_fd(strbuf *out, int fd, size_t cap, const char *name)
{
    char chunk[65536];
    size_t total = 0;

    for (;;) {
        ssize_t got = read(fd, chunk, sizeof(chunk));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return err_set(errno == EISDIR ? ERR_INVALID : ERR_IO, "%s: %s", name,
                           errno == EISDIR ? "is a folder" : strerror(errno));
        }
        if (got == 0)
            return 0;
        total += (size_t)got;
        if (total > cap)
            return err_set(ERR_TOOBIG, "%s: larger than %zu bytes", name, cap);
        if (strbuf_add(out, chunk, (size_t)got) != 0)
            return err_set(ERR_TOOBIG, "%s: larger than %zu bytes", name, cap);
    }
}

int tool_write_atomic_at(int dfd, const char *leaf, const void *data, size_t len, mode_t mode)
{
    static unsigned counter;
    char tmp[64];
    const char *p = data;
    int fd;
    int rc = 0;

    snprintf(tmp, sizeof(tmp), ".goald-tmp-%ld-%u", (long)getpid(), counter++);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(ERR_IO, "%s: cannot create a temporary file: %s", leaf, strerror(errno));
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(ERR_IO, "%s: write failed: %s", leaf, strerror(errno));
            goto out;
        }
        p += w;
        len -= (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        rc = err_set(ERR_IO, "%s: %s", leaf, strerror(errno));
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = err_set(ERR_IO, "%s: close failed: %s", leaf, strerror(errno));
        goto out;
    }
    fd = -1;
    /* renameat replaces leaf itself: a symlink put there is replaced, not followed */
    if (renameat(dfd, tmp, dfd, leaf) != 0)
        rc = err_set(ERR_IO, "%s: rename failed: %s", leaf, strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        unlinkat(dfd, tmp, 0);
    return rc;
}
