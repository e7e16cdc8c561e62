/*
 * utf8.h - UTF-8 in one place: cutting text on character boundaries (the
 * one place that knows a continuation byte, 10xxxxxx; there invalid bytes
 * count as characters of their own), making text valid (utf8_sanitize:
 * each invalid byte becomes U+FFFD), and capping a text goald keeps
 * (utf8_cap_dup: at most UTF8_TEXT_MAX bytes of what a model chose, with a
 * note saying it was cut).
 */
#ifndef GOALD_UTIL_UTF8_H
#define GOALD_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

/* The most bytes goald keeps of one text a model chose (a summary, a
 * question, a finding, any string of an event's payload): 16 KiB, the
 * note of utf8_cap_dup() included (docs/report-json.md). */
#define UTF8_TEXT_MAX 16384

/* 1 when byte c continues a multi-byte character */
static inline int utf8_is_cont(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* The largest cut <= n (n <= len of s) that does not split a character:
 * s[0..cut) is whole. */
size_t utf8_cut_back(const char *s, size_t n);

/* The smallest start >= from (and <= len) at a character's first byte:
 * s[start..len) does not begin inside a character. */
size_t utf8_cut_forward(const char *s, size_t from, size_t len);

/* How many characters s[0..n) holds. */
size_t utf8_count(const char *s, size_t n);

/* The byte offset of character number chars (or n when s is shorter). */
size_t utf8_offset(const char *s, size_t n, size_t chars);

/* Decode one well-formed character at s (n bytes available): its length
 * (1-4) with *cp set, or 0 when the bytes are not well-formed UTF-8
 * (overlong, surrogate, over U+10FFFF, truncated). */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* How many bytes of s[0..len) are not part of a well-formed character
 * (NUL counts as one: it cannot travel in a C string); 0 when s is valid
 * UTF-8. */
size_t utf8_invalid_count(const char *s, size_t len);

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
