/* utf8.c - cutting on UTF-8 boundaries, validity, caps (see utf8.h). */
#include "util/utf8.h"

#include <stdio.h>
#include <string.h>

#include "util/xalloc.h"

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

/* Length of the well-formed character at s (1..4), or 0 when the byte
 * there starts none (or is NUL). */
static size_t seq_len(const char *s, size_t len)
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
        size_t k = seq_len(s + i, len - i);
        i += k ? k : 1;
        bad += !k;
    }
    return bad;
}

int utf8_sanitize(strbuf *out, const char *s, size_t len, size_t *replaced)
{
    size_t i = 0, run = 0, bad = 0;
    int rc;

    if (replaced)
        *replaced = 0;
    while (i < len) {
        size_t k = seq_len(s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        if ((rc = strbuf_add(out, s + run, i - run)) != 0 ||
            (rc = strbuf_add(out, "\xEF\xBF\xBD", 3)) != 0)
            return rc;
        i++;
        run = i;
        bad++;
        if (replaced)
            *replaced = bad;
    }
    return strbuf_add(out, s + run, len - run);
}

char *utf8_cap_dup(const char *s, size_t len, size_t max)
{
    static const char fmt[] = " \xE2\x80\xA6 [cut by goald: %zu bytes, kept %zu]";
    char note[128];
    size_t kept;
    int n;
    char *out;

    if (len <= max)
        return xstrndup(s, len);
    /* the note fits within max too (kept has no more digits than max): a
     * capped text is never cut again */
    n = snprintf(note, sizeof(note), fmt, len, max);
    kept = max > (size_t)n ? utf8_cut_back(s, max - (size_t)n) : 0;
    n = snprintf(note, sizeof(note), fmt, len, kept);
    out = xmalloc(kept + (size_t)n + 1);
    memcpy(out, s, kept);
    memcpy(out + kept, note, (size_t)n + 1);
    return out;
}
