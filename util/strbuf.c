#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8char.h"
#include "util/xalloc.h"

void strbuf_init(strbuf *sb, size_t cap)
{
    sb->buf = NULL;
    sb->len = 0;
    sb->alloc = 0;
    sb->cap = cap ? cap : STRBUF_DEFAULT_CAP;
}

void strbuf_release(strbuf *sb)
{
    size_t cap = sb->cap;

    free(sb->buf);
    strbuf_init(sb, cap);
}

void strbuf_reset(strbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
}

char *strbuf_detach(strbuf *sb, size_t *len_out)
{
    char *p = sb->buf;

    if (!p)
        p = xcalloc(1, 1);
    if (len_out)
        *len_out = sb->len;
    strbuf_init(sb, sb->cap);
    return p;
}

const char *strbuf_cstr(const strbuf *sb)
{
    return sb->buf ? sb->buf : "";
}

int strbuf_grow(strbuf *sb, size_t extra)
{
    size_t cap = sb->cap ? sb->cap : STRBUF_DEFAULT_CAP;
    size_t want, n;
    char *p;

    if (extra > cap || sb->len > cap - extra)
        return err_set(ERR_TOOBIG, "buffer would exceed its cap of %zu bytes", cap);
    want = sb->len + extra + 1;
    if (want <= sb->alloc)
        return 0;
    n = sb->alloc ? sb->alloc : 64;
    while (n < want)
        n = n < ((size_t)1 << 40) ? n * 2 : want;
    p = xrealloc(sb->buf, n); /* out of memory ends the process (STYLE.md) */
    if (!sb->buf)
        p[0] = '\0';
    sb->buf = p;
    sb->alloc = n;
    return 0;
}

int strbuf_add(strbuf *sb, const void *data, size_t n)
{
    int rc = strbuf_grow(sb, n);

    if (rc)
        return rc;
    if (n)
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
    return 0;
}

int strbuf_adds(strbuf *sb, const char *s)
{
    return strbuf_add(sb, s, strlen(s));
}

int strbuf_addc(strbuf *sb, char c)
{
    return strbuf_add(sb, &c, 1);
}

int strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    int n;
    int rc;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return err_set(ERR_FAIL, "format error");
    rc = strbuf_grow(sb, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return 0;
}

int strbuf_addf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = strbuf_vaddf(sb, fmt, ap);
    va_end(ap);
    return rc;
}

void strbuf_setlen(strbuf *sb, size_t len)
{
    if (!sb->buf || len > sb->len)
        return;
    sb->len = len;
    sb->buf[len] = '\0';
}

/* The bytes an append may still add below the cap. */
static size_t strbuf_room(const strbuf *sb)
{
    size_t cap = sb->cap ? sb->cap : STRBUF_DEFAULT_CAP;

    return sb->len < cap ? cap - sb->len : 0;
}

int strbuf_add_cut(strbuf *sb, const void *data, size_t n)
{
    size_t room = strbuf_room(sb);
    size_t take = n <= room ? n : utf8_cut_back(data, room);

    if (take && strbuf_add(sb, data, take) != 0)
        abort(); /* impossible: take fits below the cap */
    return take < n;
}

int strbuf_adds_cut(strbuf *sb, const char *s)
{
    return strbuf_add_cut(sb, s, strlen(s));
}

int strbuf_addc_cut(strbuf *sb, char c)
{
    if (!strbuf_room(sb))
        return 1;
    return strbuf_add_cut(sb, &c, 1);
}

int strbuf_vaddf_cut(strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    char *tmp;
    int n, cut;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return 1;
    if ((size_t)n <= strbuf_room(sb))
        return strbuf_vaddf(sb, fmt, ap) != 0; /* fits: 0 */
    tmp = xmalloc((size_t)n + 1);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap);
    cut = strbuf_add_cut(sb, tmp, (size_t)n);
    free(tmp);
    return cut;
}

int strbuf_addf_cut(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int cut;

    va_start(ap, fmt);
    cut = strbuf_vaddf_cut(sb, fmt, ap);
    va_end(ap);
    return cut;
}
