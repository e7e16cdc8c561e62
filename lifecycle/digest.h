/*
 * digest.h - a failing gate's output, and a failure reason that holds
 * such outputs, rewritten for the model's next attempt.
 *
 * The output is cut only between lines (a line longer than the whole
 * budget is cut at a character boundary, with "…"), so no line starts
 * mid-word and no UTF-8 sequence is split.  pytest's output keeps its
 * FAILURES and ERRORS entries (each failing test's source lines and its
 * "E" assertion lines), its short test summary and its closing line, and
 * drops the warnings summary and the session's progress lines; any other
 * output keeps its last lines.  What is left out is said in a bracketed
 * note.
 *
 * Nothing here allocates what the caller must free beyond out's storage.
 */
#ifndef GOALD_LIFECYCLE_DIGEST_H
#define GOALD_LIFECYCLE_DIGEST_H

#include <stddef.h>

#include "store/store.h"
#include "util/strbuf.h"

/* Append the digest of output (a gate's output, NUL-terminated) to out,
 * at most about max bytes.  cut_front: output is the end of a longer one
 * (its first line is partial and dropped). */
void digest_output(strbuf *out, const char *output, int cut_front, size_t max);

/* Append a failure reason to out with each gate output it holds (the text
 * after a "gate NAME failed (exit N)...:" line) digested to at most about
 * max bytes; the other lines as they are. */
void digest_reason(strbuf *out, const char *reason, size_t max);

/* Append the failure of item_id's last run (class cls, reason) to sb:
 * for a gate failure, the reason's own lines (which gates failed, which
 * tests, on which tree), then each blamed gate's recorded output once,
 * digested to about max bytes, saying which run it came from (the item's
 * tree, or the product-only tree of a "tests weakened"); otherwise, or
 * when no output was recorded, the reason digested (digest_reason). */
void digest_failure(strbuf *sb, store *st, const char *item_id, const char *cls, const char *reason,
                    size_t max);

/* 1 when line (n bytes, no newline) opens a gate's part of a failure
 * reason: "gate NAME failed (exit N)...:" or "tests weakened: ...:". */
int digest_is_header(const char *line, size_t n);

#endif
