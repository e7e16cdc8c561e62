/* utf8char.c - the characters of UTF-8: boundaries, counting, decoding (see
 * utf8char.h). */
#include "util/utf8char.h"

size_t utf8_cut_back(const char *s, size_t n)
{
    while (n > 0 && utf8_is_cont((unsigned char)s[n]))
        n--;
    return n;
}

size_t utf8_cut_forward(const char *s, size_t from, size_t len)
{
    while (from < len && utf8_is_cont((unsigned char)s[from]))
        from++;
    return from;
}

size_t utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += !utf8_is_cont((unsigned char)s[i]);
    return c;
}

size_t utf8_offset(const char *s, size_t n, size_t chars)
{
    size_t i = 0;
    while (i < n && chars > 0) {
        i++;
        while (i < n && utf8_is_cont((unsigned char)s[i]))
            i++;
        chars--;
    }
    return i;
}

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len;
    uint32_t c, min;

    if (n == 0)
        return 0;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if ((p[0] & 0xe0) == 0xc0) {
        len = 2, c = p[0] & 0x1f, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        len = 3, c = p[0] & 0x0f, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        len = 4, c = p[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (!utf8_is_cont(p[i]))
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

size_t utf8_valid_len(const char *s, size_t len)
{
    uint32_t cp;

    if (s[0] == 0)
        return 0;
    if ((unsigned char)s[0] < 0x80)
        return 1;
    return utf8_decode(s, len, &cp);
}

size_t utf8_invalid_count(const char *s, size_t len)
{
    size_t i = 0, bad = 0;

    while (i < len) {
        size_t k = utf8_valid_len(s + i, len - i);
        i += k ? k : 1;
        bad += !k;
    }
    return bad;
}
