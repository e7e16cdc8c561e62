/*
 * utf8.h - UTF-8 texts: making text valid (utf8_sanitize: each invalid
 * byte becomes U+FFFD), and capping a text goald keeps (utf8_cap_dup: at
 * most UTF8_TEXT_MAX bytes of what a model chose, with a note saying it
 * was cut).  The characters themselves (boundaries, decoding) are
 * utf8char.h's, which this header includes: strbuf cuts on them, and the
 * texts here are written into a strbuf.
 */
#ifndef GOALD_UTIL_UTF8_H
#define GOALD_UTIL_UTF8_H

#include <stddef.h>

#include "util/strbuf.h"
#include "util/utf8char.h"

/* The most bytes goald keeps of one text a model chose (a summary, a
 * question, a finding, any string of an event's payload): 16 KiB, the
 * note of utf8_cap_dup() included (docs/report-json.md). */
#define UTF8_TEXT_MAX 16384

/* Append s[0..len) to out with every byte that is not part of a
 * well-formed character (and every NUL) replaced by U+FFFD; *replaced
 * (may be NULL) receives how many were.  0, or ERR_TOOBIG at out's cap
 * (what fit is appended). */
int utf8_sanitize(strbuf *out, const char *s, size_t len, size_t *replaced) GOALD_MUST_CHECK;

/* A malloc'd copy of s[0..len) (the caller frees; never NULL): whole when
 * len <= max, else its first KEPT bytes (cut back to a character
 * boundary) followed by " … [cut by goald: LEN bytes, kept KEPT]", at most
 * max bytes in all: capping it again changes nothing. */
char *utf8_cap_dup(const char *s, size_t len, size_t max);

#endif
