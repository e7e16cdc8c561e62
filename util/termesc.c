#include "util/termesc.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/xalloc.h"

int term_escape(strbuf *out, const char *s, int flags)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    const unsigned char *end = p + strlen((const char *)p);
    int rc = 0;

    while (*p && rc == 0) {
        uint32_t cp;
        size_t n = utf8_decode((const char *)p, (size_t)(end - p), &cp);
        const char *named = NULL;

        if (n == 0) {
            rc = strbuf_addf(out, "\\x%02x", *p);
            p++;
            continue;
        }
        if (cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f)) {
            rc = strbuf_add(out, p, n);
            p += n;
            continue;
        }
        switch (cp) {
        case '\t': named = "\t"; break;
        case '\n': named = (flags & TERM_KEEP_NL) ? "\n" : "\\n"; break;
        case 0x1b: named = "\\e"; break;
        case '\r': named = "\\r"; break;
        case '\a': named = "\\a"; break;
        case '\b': named = "\\b"; break;
        default: break;
        }
        if (named)
            rc = strbuf_adds(out, named);
        else if (cp < 0x80)
            rc = strbuf_addf(out, "\\x%02x", (unsigned)cp);
        else
            rc = strbuf_addf(out, "\\u%04x", (unsigned)cp);
        p += n;
    }
    return rc;
}

static _Thread_local char *ring[TERM_VIEWS];
static _Thread_local unsigned next;

const char *term_view_flags(const char *s, int flags)
{
    strbuf sb = STRBUF_INIT;
    char **slot = &ring[next++ % TERM_VIEWS];

    strbuf_init(&sb, STRBUF_DEFAULT_CAP);
    free(*slot);
    if (term_escape(&sb, s, flags) != 0) {
        strbuf_release(&sb);
        *slot = xstrdup("[text too long to show]");
    } else {
        *slot = strbuf_detach(&sb, NULL);
    }
    return *slot;
}

const char *term_view(const char *s)
{
    return term_view_flags(s, 0);
}

int term_columns(const char *s)
{
    return s ? (int)utf8_count(s, strlen(s)) : 0;
}

void term_wrap(FILE *f, const char *s, int indent, int width)
{
    const char *p = term_view(s);
    int room = width - indent;

    if (room < 10)
        room = 10;
    while (*p) {
        const char *line = p, *cut = NULL, *q = p;
        int cols = 0;
        /* the longest run of whole characters within room, cut at a space */
        while (*q && cols < room) {
            q++;
            while (utf8_is_cont((unsigned char)*q))
                q++;
            cols++;
            if (*q == ' ')
                cut = q;
        }
        if (!*q || !cut)
            cut = q;
        fprintf(f, "%*s%.*s\n", indent, "", (int)(cut - line), line);
        p = cut;
        while (*p == ' ')
            p++;
    }
}

const char *term_fit(const char *s, int width)
{
    char **slot;
    char *v;
    size_t i;
    int total;

    v = (char *)term_view(s); /* our own ring slot: ours to edit */
    slot = &ring[(next - 1) % TERM_VIEWS];
    assert(*slot == v);
    for (char *p = v; *p; p++)
        if (*p == '\t')
            *p = ' ';
    if (width < 1)
        width = 1;
    total = term_columns(v);
    if (total <= width)
        return v;
    /* width - 1 columns, then the ellipsis (3 bytes; the view has room:
     * it is longer than width columns, each at least one byte) */
    i = utf8_offset(v, strlen(v), (size_t)width - 1);
    if (strlen(v) - i < 3)
        *slot = v = xrealloc(v, i + 4);
    memcpy(v + i, "\xe2\x80\xa6", 4);
    return v;
}

int term_width(int fd)
{
    struct winsize ws;
    const char *e = getenv("COLUMNS");
    long n;

    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    if (e && (n = strtol(e, NULL, 10)) >= 20 && n <= 1000)
        return (int)n;
    return 80;
}
