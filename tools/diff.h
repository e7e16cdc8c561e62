/*
 * diff.h - a unified diff of two texts (for the edit tool's result), by
 * libgit2's patch API.
 */
#ifndef GOALD_TOOLS_DIFF_H
#define GOALD_TOOLS_DIFF_H

#include <stddef.h>

#include "util/strbuf.h"

/* Append to out the unified diff (3 lines of context, "--- a/NAME",
 * "+++ b/NAME") turning a into b.  Nothing is appended when they are
 * equal.  *added and *removed (may be NULL) receive the line counts.
 * Fails (the error slot set) only when libgit2 or out does. */
int diff_unified(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                 size_t blen, size_t *added, size_t *removed);

/* The line counts of a diff. */
struct diff_stat {
    size_t added, removed;
};

/* The same for windows of two larger texts that both start after line0
 * equal lines: hunk headers count from there.  *stat (may be NULL)
 * receives the line counts. */
int diff_unified_at(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                    size_t blen, size_t line0, struct diff_stat *stat);

#endif
