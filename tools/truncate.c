#include "tools/truncate.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"

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
    return n >= len ? len : utf8_cut_back(s, n);
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
                pos = utf8_cut_forward(s, len - max_bytes, len);
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

size_t utf8_prefix_chars(const char *s, size_t len, size_t max_chars)
{
    /* continuation bytes at the start belong to no character */
    size_t lead = utf8_cut_forward(s, 0, len);

    return lead + utf8_offset(s + lead, len - lead, max_chars);
}

const char *format_size(char *buf, size_t n, size_t bytes)
{
    if (bytes < 1024)
        snprintf(buf, n, "%zuB", bytes); /* truncation: ok, a size shown */
    else if (bytes < (size_t)1 << 20)
        /* truncation: ok, a size shown */
        snprintf(buf, n, bytes % 1024 ? "%.1fKB" : "%.0fKB", (double)bytes / 1024.0);
    else
        snprintf(buf, n, bytes % (1 << 20) ? "%.1fMB" : "%.0fMB", /* truncation: ok, a size shown */
                 (double)bytes / (1024.0 * 1024.0));
    return buf;
}
