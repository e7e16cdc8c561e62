/*
 * static.c - the pages: "/" is the web dashboard (share/web/index.html),
 * /static/NAME serves a file of share/web, embedded at build time, by
 * exact name only (nothing is read from disk: no path reaches the
 * filesystem), with the Content-Type of its extension; and
 * /v1/openapi.json (docs/openapi.json, embedded too).
 */
#include <string.h>

#include "http/internal.h"
#include "util/embedded.h"
#include "util/xalloc.h"

/* The types a dashboard file may have; a file of another type is not
 * served (the browser must never guess: nosniff). */
static const struct {
    const char *ext, *ctype;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

static const char *ctype_of(const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && !strcmp(name + n - e, types[i].ext))
            return types[i].ctype;
    }
    return NULL;
}

static void answer_text(struct http_answer *ans, const char *ctype, const char *data, size_t len)
{
    ans->status = 200;
    ans->ctype = ctype;
    ans->body = xmalloc(len + 1);
    memcpy(ans->body, data, len);
    ans->body[len] = '\0';
    ans->len = len;
}

/* The embedded file named exactly name, with a known type: 1 answered. */
static int answer_file(const char *name, struct http_answer *ans)
{
    for (const struct embedded_file *f = embedded_web; f->name; f++) {
        const char *ctype;
        if (strcmp(f->name, name) != 0 || !(ctype = ctype_of(f->name)))
            continue;
        answer_text(ans, ctype, f->data, f->len);
        return 1;
    }
    return 0;
}

int http_static(const char *url, struct http_answer *ans)
{
    if (!strcmp(url, "/") && answer_file("index.html", ans))
        return 1;
    if (strncmp(url, "/static/", 8) != 0)
        return 0;
    if (!answer_file(url + 8, ans))
        http_answer_error(ans, 404, "not_found", NULL, "no such file: %s", url);
    return 1;
}

void http_openapi(struct http_answer *ans)
{
    answer_text(ans, "application/json", embedded_openapi[0].data, embedded_openapi[0].len);
}
