/*
 * report.c - reading a gate's report file, which the gate (so the model)
 * wrote: under the path policy (sandbox/path.h), beneath the worktree and
 * never through a link out of it, refusing at once anything but a regular
 * file (a FIFO with no writer would block the job forever, a device could
 * stream without end), and capped in size.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gates/gates.h"
#include "sandbox/path.h"
#include "util/err.h"
#include "util/strbuf.h"

static const char *kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a fifo"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISDIR(m)  ? "a folder"
                         : "not a regular file";
}

int gates_report_read(strbuf *out, const char *root, const char *rel, size_t cap)
{
    char r[PATH_MAX];
    struct stat st;
    int rfd = -1, fd = -1, rc;
    char buf[65536];

    if ((rc = path_rel(r, sizeof(r), root, rel)) != 0)
        return rc;
    if ((rc = path_open_root(&rfd, root)) != 0)
        return rc;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    if ((rc = path_open(&fd, rfd, r, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)) != 0)
        goto out;
    if (fstat(fd, &st) != 0) {
        rc = err_set(ERR_IO, "%s: %s", r, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = err_set(ERR_POLICY, "%s: %s, not a regular file", r, kind(st.st_mode));
        goto out;
    }
    if ((size_t)st.st_size > cap) {
        rc = err_set(ERR_TOOBIG, "%s: %lld bytes, more than the %zu allowed", r,
                     (long long)st.st_size, cap);
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(ERR_IO, "%s: %s", r, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if (out->len + (size_t)n > cap) { /* it grew while read */
            rc = err_set(ERR_TOOBIG, "%s: more than the %zu bytes allowed", r, cap);
            goto out;
        }
        if ((rc = strbuf_add(out, buf, (size_t)n)) != 0)
            goto out;
    }
out:
    if (fd >= 0)
        close(fd);
    if (rfd >= 0)
        close(rfd);
    return rc;
}
