/*
 * utf8char.h - the characters of UTF-8 in one place: cutting text on
 * character boundaries (the one place that knows a continuation byte,
 * 10xxxxxx; there invalid bytes count as characters of their own),
 * counting and decoding them.  Nothing here allocates or writes: strbuf
 * cuts on these boundaries, and utf8.h (texts) builds on them.
 */
#ifndef GOALD_UTIL_UTF8CHAR_H
#define GOALD_UTIL_UTF8CHAR_H

#include <stddef.h>
#include <stdint.h>

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

/* The length (1-4) of the well-formed character at s[0..len) (len >
 * 0), or 0 when the byte there starts none, or is NUL. */
size_t utf8_valid_len(const char *s, size_t len);

#endif
