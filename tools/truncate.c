#include "tools/truncate.h"

#include <stdio.h>
#include <string.h>

size_t text_lines(const char *s, size_t len)
{
    size_t n = 0;
    const char *p = s, *end = s + len;

    if (len == 0)
        return 0;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n + (s[len - 1] != '\n');
}

size_t utf8_floor(const char *s, size_t len, size_t n)
{
    if (n >= len)
        return len;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

void truncate_head(struct trunc *t, const char *s, size_t len, size_t max_lines, size_t max_bytes)
{
    size_t pos = 0, lines = 0;

    memset(t, 0, sizeof(*t));
    t->total_lines = text_lines(s, len);
    t->total_bytes = len;
    while (pos < len) {
        const char *eol = memchr(s + pos, '\n', len - pos);
        size_t end = eol ? (size_t)(eol - s) + 1 : len;
        if (lines >= max_lines) {
            t->truncated = 1;
            t->by = "lines";
            break;
        }
        if (end > max_bytes) {
            t->truncated = 1;
            t->by = "bytes";
            if (lines == 0) {
                pos = utf8_floor(s, len, max_bytes);
                t->partial_line = 1;
                lines = 1;
            }
            break;
        }
        pos = end;
        lines++;
    }
    t->start = 0;
    t->len = pos;
    t->lines = lines;
}

void truncate_tail(struct trunc *t, const char *s, size_t len, size_t max_lines, size_t max_bytes)
{
    size_t pos = len, lines = 0;

    memset(t, 0, sizeof(*t));
    t->total_lines = text_lines(s, len);
    t->total_bytes = len;
    while (pos > 0) {
        const char *nl = pos > 1 ? memrchr(s, '\n', pos - 1) : NULL;
        size_t ls = nl ? (size_t)(nl - s) + 1 : 0;
        if (lines >= max_lines) {
            t->truncated = 1;
            t->by = "lines";
            break;
        }
        if (len - ls > max_bytes) {
            t->truncated = 1;
            t->by = "bytes";
            if (lines == 0) {
                size_t start = len - max_bytes;
                while (start < len && ((unsigned char)s[start] & 0xC0) == 0x80)
                    start++;
                pos = start;
                t->partial_line = 1;
                lines = 1;
            }
            break;
        }
        pos = ls;
        lines++;
    }
    t->start = pos;
    t->len = len - pos;
    t->lines = lines;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    size_t need;
    unsigned cp;

    if (s[0] == 0)
        return 0; /* NUL cannot travel in a JSON string made with strlen */
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0) {
        need = 2;
        cp = s[0] & 0x1F;
    } else if ((s[0] & 0xF0) == 0xE0) {
        need = 3;
        cp = s[0] & 0x0F;
    } else if ((s[0] & 0xF8) == 0xF0) {
        need = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (need > len)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need;
}

int utf8_sanitize(strbuf *out, const char *s, size_t len)
{
    size_t i = 0, run = 0;
    int rc;

    while (i < len) {
        size_t k = utf8_seq((const unsigned char *)s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        if ((rc = strbuf_add(out, s + run, i - run)) != 0 ||
            (rc = strbuf_add(out, "\xEF\xBF\xBD", 3)) != 0)
            return rc;
        i++;
        run = i;
    }
    return strbuf_add(out, s + run, len - run);
}

size_t utf8_prefix_chars(const char *s, size_t len, size_t max_chars)
{
    size_t chars = 0;

    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (chars == max_chars)
                return i;
            chars++;
        }
    }
    return len;
}

const char *format_size(char *buf, size_t n, size_t bytes)
{
    if (bytes < 1024)
        snprintf(buf, n, "%zuB", bytes);
    else if (bytes < (size_t)1 << 20)
        snprintf(buf, n, bytes % 1024 ? "%.1fKB" : "%.0fKB", (double)bytes / 1024.0);
    else
        snprintf(buf, n, bytes % (1 << 20) ? "%.1fMB" : "%.0fMB",
                 (double)bytes / (1024.0 * 1024.0));
    return buf;
}
