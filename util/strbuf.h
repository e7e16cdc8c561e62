/*
 * strbuf.h - growable, capped, NUL-terminated byte buffers.
 *
 * A strbuf owns its storage; strbuf_release() frees it and leaves the
 * buffer empty and reusable.  strbuf_detach() hands the storage to the
 * caller, who frees it with free().  Every append fails with ERR_TOOBIG
 * (and leaves the buffer unchanged) rather than grow past `cap` bytes of
 * content; cap 0 means STRBUF_DEFAULT_CAP.  The appends whose error must
 * be handled are GOALD_MUST_CHECK (util/err.h); the *_cut family names
 * the places where a cut text is fine.
 */
#ifndef GOALD_UTIL_STRBUF_H
#define GOALD_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "util/err.h"

#define STRBUF_DEFAULT_CAP ((size_t)64 << 20) /* 64 MiB */

typedef struct strbuf {
    char *buf;    /* NULL until the first append; then always NUL-terminated */
    size_t len;   /* bytes of content, excluding the NUL */
    size_t alloc; /* bytes allocated */
    size_t cap;   /* the most content it may hold */
} strbuf;

#define STRBUF_INIT {NULL, 0, 0, 0}

void strbuf_init(strbuf *sb, size_t cap);
void strbuf_release(strbuf *sb);
void strbuf_reset(strbuf *sb); /* len = 0, keeps the storage */
char *strbuf_detach(strbuf *sb, size_t *len_out); /* caller frees; never NULL */
const char *strbuf_cstr(const strbuf *sb); /* "" when empty */

int strbuf_grow(strbuf *sb, size_t extra) GOALD_MUST_CHECK;
int strbuf_add(strbuf *sb, const void *data, size_t n) GOALD_MUST_CHECK;
int strbuf_adds(strbuf *sb, const char *s) GOALD_MUST_CHECK;
int strbuf_addc(strbuf *sb, char c) GOALD_MUST_CHECK;
int strbuf_addf(strbuf *sb, const char *fmt, ...) GOALD_PRINTF(2, 3) GOALD_MUST_CHECK;
int strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap) GOALD_MUST_CHECK;
void strbuf_setlen(strbuf *sb, size_t len); /* len <= sb->len */

/* For text that may legitimately be cut at the cap (a display line, a
 * summary, a report): append what fits, cut on a UTF-8 character
 * boundary.  Returns 1 when the text was cut (the buffer is then full:
 * later cut appends add nothing), 0 when it all fit.  They cannot fail
 * (out of memory ends the process); a format error appends nothing and
 * counts as cut.  Where a cut text would be wrong (JSON, a request, a
 * commit message), use the appends above and propagate their error. */
int strbuf_add_cut(strbuf *sb, const void *data, size_t n);
int strbuf_adds_cut(strbuf *sb, const char *s);
int strbuf_addc_cut(strbuf *sb, char c); /* a byte: may end inside a character */
int strbuf_addf_cut(strbuf *sb, const char *fmt, ...) GOALD_PRINTF(2, 3);
int strbuf_vaddf_cut(strbuf *sb, const char *fmt, va_list ap);

#endif
