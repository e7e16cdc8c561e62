/*
 * truncate.h - cutting tool output to what a model may see.
 *
 * Limits are lines and bytes, whichever comes first (tools.max_lines,
 * tools.max_bytes).  Cuts fall on line ends; when a single line is larger
 * than the byte limit it is cut inside, never in the middle of a UTF-8
 * character.  Lines are counted as text editors do: "a\nb\n" and "a\nb"
 * are both two lines.
 */
#ifndef GOALD_TOOLS_TRUNCATE_H
#define GOALD_TOOLS_TRUNCATE_H

#include <stddef.h>

#include "util/strbuf.h"

struct trunc {
    int truncated;
    const char *by;     /* "lines" or "bytes" (static) or NULL */
    size_t total_lines; /* of the input */
    size_t total_bytes;
    size_t lines;      /* kept (a partial line counts) */
    size_t start, len; /* the kept span of the input */
    int partial_line;  /* a single line was cut inside */
};

/* Count lines as above. */
size_t text_lines(const char *s, size_t len);

/* The largest m <= n such that s[0..m) ends on a character boundary. */
size_t utf8_floor(const char *s, size_t len, size_t n);

/* Keep the head: whole lines from the start. */
void truncate_head(struct trunc *t, const char *s, size_t len, size_t max_lines, size_t max_bytes);

/* Keep the tail: whole lines from the end. */
void truncate_tail(struct trunc *t, const char *s, size_t len, size_t max_lines, size_t max_bytes);

/* Bytes of the first max_chars characters of s[0..len). */
size_t utf8_prefix_chars(const char *s, size_t len, size_t max_chars);

/* "50KB", "1.5MB", "12B" into buf. */
const char *format_size(char *buf, size_t n, size_t bytes);

#endif
