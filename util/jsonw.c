#include "util/jsonw.h"

#include <math.h>
#include <string.h>

void jsonw_init(struct jsonw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->count[0] = 0;
    w->after_key = 0;
}

/* Before any value: a comma when it is not the first at its level. */
static void sep(struct jsonw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->count[w->depth]++ > 0)
        fputc(',', w->f);
}

static void open(struct jsonw *w, char c)
{
    sep(w);
    fputc(c, w->f);
    if (w->depth < JSONW_DEPTH - 1)
        w->depth++;
    w->count[w->depth] = 0;
}

void jsonw_object_begin(struct jsonw *w)
{
    open(w, '{');
}

void jsonw_array_begin(struct jsonw *w)
{
    open(w, '[');
}

void jsonw_object_end(struct jsonw *w)
{
    fputc('}', w->f);
    if (w->depth > 0)
        w->depth--;
}

void jsonw_array_end(struct jsonw *w)
{
    fputc(']', w->f);
    if (w->depth > 0)
        w->depth--;
}

/* The one JSON string escaper: s as a JSON string literal (with quotes),
 * handed to put in pieces.  Control characters as \n, \r, \t, \b, \f or
 * \u00XX; other bytes (invalid UTF-8 included) pass through.  Stops at
 * the first non-zero put. */
typedef int (*json_put_fn)(void *arg, const char *p, size_t n);

static int json_escape(const char *s, json_put_fn put, void *arg)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;
    int rc;

    if ((rc = put(arg, "\"", 1)) != 0)
        return rc;
    for (;; p++) {
        const char *esc = NULL;
        char u[8];

        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        /* flush the run of plain bytes before this one */
        if (p > run && (rc = put(arg, (const char *)run, (size_t)(p - run))) != 0)
            return rc;
        if (*p == '\0')
            break;
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            snprintf(u, sizeof(u), "\\u%04x", *p); /* truncation: ok, six bytes fit */
            esc = u;
        }
        if ((rc = put(arg, esc, strlen(esc))) != 0)
            return rc;
        run = p + 1;
    }
    return put(arg, "\"", 1);
}

static int put_file(void *arg, const char *p, size_t n)
{
    fwrite(p, 1, n, arg); /* a FILE keeps its error: the caller checks ferror() */
    return 0;
}

static int put_strbuf(void *arg, const char *p, size_t n)
{
    return strbuf_add(arg, p, n);
}

void json_write_escaped(FILE *f, const char *s)
{
    (void)json_escape(s, put_file, f);
}

int json_escape_append(strbuf *out, const char *s)
{
    size_t len = out->len;
    int rc = json_escape(s, put_strbuf, out);

    if (rc)
        strbuf_setlen(out, len);
    return rc;
}

void jsonw_key(struct jsonw *w, const char *key)
{
    sep(w);
    json_write_escaped(w->f, key);
    fputc(':', w->f);
    w->after_key = 1;
}

void jsonw_string(struct jsonw *w, const char *s)
{
    if (!s) {
        jsonw_null(w);
        return;
    }
    sep(w);
    json_write_escaped(w->f, s);
}

void jsonw_int(struct jsonw *w, int64_t v)
{
    sep(w);
    fprintf(w->f, "%lld", (long long)v);
}

void jsonw_double(struct jsonw *w, double v)
{
    sep(w);
    if (!isfinite(v))
        fputs("null", w->f);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(w->f, "%.0f", v);
    else
        fprintf(w->f, "%.15g", v);
}

void jsonw_bool(struct jsonw *w, int v)
{
    sep(w);
    fputs(v ? "true" : "false", w->f);
}

void jsonw_null(struct jsonw *w)
{
    sep(w);
    fputs("null", w->f);
}

void jsonw_raw(struct jsonw *w, const char *json)
{
    sep(w);
    fputs(json, w->f);
}
