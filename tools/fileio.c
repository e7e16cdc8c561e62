/* File helpers shared by read, write and edit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/internal.h"
#include "util/err.h"

int tool_fail_special(struct tool_result *res, const char *rel, mode_t mode)
{
    const char *what = S_ISFIFO(mode)                     ? "a FIFO"
                       : S_ISSOCK(mode)                   ? "a socket"
                       : S_ISCHR(mode) || S_ISBLK(mode)   ? "a device"
                                                          : "not a regular file";
    return tool_fail(res, TOOL_POLICY,
                     "%s: %s: the tools open regular files and folders only", rel, what);
}

int tool_read_chunk(int fd, char *buf, size_t n, size_t *got, const char *name)
{
    ssize_t r;

    while ((r = read(fd, buf, n)) < 0) {
        if (errno != EINTR)
            return err_set(errno == EISDIR ? ERR_INVALID : ERR_IO, "%s: %s", name,
                           errno == EISDIR ? "is a folder" : strerror(errno));
    }
    *got = (size_t)r;
    return 0;
}

int tool_read_fd(strbuf *out, int fd, size_t cap, const char *name)
{
    char chunk[65536];
    size_t total = 0, got = 0;
    int rc;

    for (;;) {
        if ((rc = tool_read_chunk(fd, chunk, sizeof(chunk), &got, name)) != 0)
            return rc;
        if (got == 0)
            return 0;
        total += got;
        if (total > cap)
            return err_set(ERR_TOOBIG, "%s: larger than %zu bytes", name, cap);
        if (strbuf_add(out, chunk, got) != 0)
            return err_set(ERR_TOOBIG, "%s: larger than %zu bytes", name, cap);
    }
}
