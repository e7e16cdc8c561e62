/* path.c - paths that fail on truncation (see path.h). */
#include "util/path.h"

#include <stdarg.h>
#include <stdio.h>

/* How much of a cut path the message shows. */
#define PATH_SHOWN 160

int path_fmt(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (n == 0)
        return err_set(ERR_INVALID, "path too long: no room for a path");
    va_start(ap, fmt);
    w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (w < 0) {
        out[0] = '\0';
        return err_set(ERR_INVALID, "path: cannot format");
    }
    if ((size_t)w >= n) {
        err_set(ERR_INVALID, "path too long: %.*s... (%d bytes, at most %zu)", PATH_SHOWN, out, w,
                n - 1);
        out[0] = '\0';
        return ERR_INVALID;
    }
    return 0;
}
