/*
 * path.h - file paths formatted into fixed buffers, never cut.
 *
 * A path cut at its buffer's end names another file (or a folder above
 * the one meant), so a path is formatted with path_fmt(), which fails
 * rather than hand back a shorter one.  Text whose cut is harmless (a
 * message, a label) stays with snprintf.
 */
#ifndef GOALD_UTIL_PATH_H
#define GOALD_UTIL_PATH_H

#include <stddef.h>

#include "util/err.h"

/* Format fmt into out (n bytes, the caller's).  0 when the whole path
 * fits; else ERR_INVALID "path too long: START..." (n == 0, or the
 * formatted path needs n bytes or more) or ERR_INVALID when the format
 * itself fails, and out is "" (when n > 0): a cut path is never left
 * where it could be used. */
int path_fmt(char *out, size_t n, const char *fmt, ...) GOALD_PRINTF(3, 4) GOALD_MUST_CHECK;

#endif
