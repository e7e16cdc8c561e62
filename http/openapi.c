/*
 * openapi.c - /v1/openapi.json (docs/openapi.json, embedded at build
 * time) and the static pages: "/" is a placeholder until the dashboard
 * comes (issue 19, not yet), /static/NAME serves an embedded file by exact
 * name only (nothing is read from disk: no path reaches the filesystem).
 */
#include <string.h>

#include "http/internal.h"
#include "util/embedded.h"
#include "util/xalloc.h"

static const char placeholder[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>goald</title><link rel=\"stylesheet\" href=\"/static/goald.css\"></head>\n"
    "<body><h1>goald</h1>\n"
    "<p>The dashboard is not there yet. The API is: see <code>/v1/openapi.json</code> "
    "(with a token) and docs/http.md.</p>\n</body></html>\n";

static const char stylesheet[] = "body { font-family: sans-serif; max-width: 40em; margin: 2em "
                                 "auto; padding: 0 1em; }\n";

static const struct {
    const char *name, *ctype, *data;
} statics[] = {
    {"goald.css", "text/css; charset=utf-8", stylesheet},
};

static void answer_text(struct http_answer *ans, const char *ctype, const char *data, size_t len)
{
    ans->status = 200;
    ans->ctype = ctype;
    ans->body = xmalloc(len + 1);
    memcpy(ans->body, data, len + 1);
    ans->len = len;
}

int http_static(const char *url, struct http_answer *ans)
{
    if (!strcmp(url, "/")) {
        answer_text(ans, "text/html; charset=utf-8", placeholder, sizeof(placeholder) - 1);
        return 1;
    }
    if (strncmp(url, "/static/", 8) != 0)
        return 0;
    for (size_t i = 0; i < sizeof(statics) / sizeof(statics[0]); i++)
        if (!strcmp(url + 8, statics[i].name)) {
            answer_text(ans, statics[i].ctype, statics[i].data, strlen(statics[i].data));
            return 1;
        }
    http_answer_error(ans, 404, "not_found", NULL, "no such file: %s", url);
    return 1;
}

void http_openapi(struct http_answer *ans)
{
    answer_text(ans, "application/json", embedded_openapi[0].data, embedded_openapi[0].len);
}
