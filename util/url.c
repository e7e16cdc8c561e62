/* url.c - credentials in git URLs, and roots (see url.h). */
#include "util/url.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/path.h"

/* The parts of a URL: where its user part starts and ends (both NULL
 * when it has none) and where its query (the first '?' or '#') starts. */
struct url_parts {
    const char *user, *user_end; /* [user, user_end) then '@' */
    const char *query;           /* at '?' or '#', or NULL */
    int http;                    /* the scheme is http or https */
};

static void url_split(const char *url, struct url_parts *p)
{
    const char *s = strstr(url, "://"), *auth, *end, *at = NULL;

    memset(p, 0, sizeof(*p));
    /* a scheme: a letter, then letters, digits, '+', '-', '.' */
    for (const char *c = url; s && c < s; c++)
        if (!(isalpha((unsigned char)*c) ||
              (c > url && (isdigit((unsigned char)*c) || *c == '+' || *c == '-' || *c == '.'))))
            s = NULL;
    if (s == url)
        s = NULL;
    p->query = url + strcspn(url, "?#");
    if (!*p->query)
        p->query = NULL;
    if (s) {
        size_t slen = (size_t)(s - url);
        p->http = (slen == 4 && !strncasecmp(url, "http", 4)) ||
                  (slen == 5 && !strncasecmp(url, "https", 5));
        auth = s + 3;
        end = auth + strcspn(auth, "/?#");
        for (const char *q = auth; q < end; q++)
            if (*q == '@')
                at = q; /* the last '@' of the authority ends the user part */
        if (at) {
            p->user = auth;
            p->user_end = at;
        }
        return;
    }
    /* scp-like, with a ':' before any '/': user@host:path (the '@' before
     * that ':'), or user:password@host:path (a '@' after it, no '/' before
     * the '@'); a path ("/srv/a:b@c", "a/b:c@d") has no user part */
    end = url + strcspn(url, ":/");
    at = strchr(url, '@');
    if (*end != ':' || !at || (at > end && memchr(url, '/', (size_t)(at - url))))
        return;
    p->user = url;
    p->user_end = at;
}

/* The ':' (or "%3a") of a password inside [user, end), or NULL. */
static const char *password_at(const char *user, const char *end)
{
    for (const char *q = user; q < end; q++) {
        if (*q == ':')
            return q;
        if (*q == '%' && end - q >= 3 && q[1] == '3' && (q[2] == 'a' || q[2] == 'A'))
            return q;
    }
    return NULL;
}

/* 1 when the parameter name [k, end) names a credential. */
static int secret_name(const char *k, const char *end)
{
    static const char *const words[] = {"token", "passw",      "pwd", "secret", "key",
                                        "auth",  "credential", "sig", NULL};
    char name[64];
    size_t n = (size_t)(end - k);

    if (n >= sizeof(name))
        return 1; /* an absurdly long name: not worth trusting */
    for (size_t i = 0; i < n; i++)
        name[i] = (char)tolower((unsigned char)k[i]);
    name[n] = '\0';
    for (int i = 0; words[i]; i++)
        if (strstr(name, words[i]))
            return 1;
    return 0;
}

/* Call fn for each credential-named parameter of the query at q: its
 * value [v, v_end).  Returns how many. */
static int query_secrets(const char *q, void (*fn)(const char *v, const char *v_end, void *arg),
                         void *arg)
{
    int n = 0;

    while (q && *q) {
        const char *k = q + 1; /* past '?', '#', '&' or ';' */
        const char *end = k + strcspn(k, "&;#");
        const char *eq = memchr(k, '=', (size_t)(end - k));
        if (eq && secret_name(k, eq) && eq + 1 < end) {
            n++;
            if (fn)
                fn(eq + 1, end, arg);
        }
        q = *end ? end : NULL;
    }
    return n;
}

int url_has_credential(const char *url)
{
    struct url_parts p;

    if (!url)
        return 0;
    url_split(url, &p);
    if (p.user && (password_at(p.user, p.user_end) || (p.http && p.user_end > p.user)))
        return 1;
    return query_secrets(p.query, NULL, NULL) > 0;
}

/* Spans of url to replace with "***", in order. */
struct spans {
    const char *from[16], *to[16];
    int n;
};

static void span_add(const char *v, const char *v_end, void *arg)
{
    struct spans *s = arg;

    if (s->n < 16) {
        s->from[s->n] = v;
        s->to[s->n++] = v_end;
    }
}

const char *url_mask(char *out, size_t n, const char *url)
{
    struct url_parts p;
    struct spans sp = {.n = 0};
    const char *pw;
    size_t o = 0;

    if (!n)
        return out;
    url_split(url, &p);
    if (p.user && p.http && p.user_end > p.user)
        span_add(p.user, p.user_end, &sp); /* the user part may be the token */
    else if (p.user && (pw = password_at(p.user, p.user_end)))
        span_add(pw + (*pw == ':' ? 1 : 3), p.user_end, &sp);
    query_secrets(p.query, span_add, &sp);
    for (const char *c = url; *c && o + 1 < n;) {
        int k;
        for (k = 0; k < sp.n && sp.from[k] != c; k++)
            ;
        if (k < sp.n) {
            for (const char *m = "***"; *m && o + 1 < n; m++)
                out[o++] = *m;
            c = sp.to[k];
            continue;
        }
        out[o++] = *c++;
    }
    out[o] = '\0';
    if (o + 1 >= n && strlen(url) >= n && n > 4)
        memcpy(out + n - 4, "...", 4);
    return out;
}

int url_is_plain(const char *url)
{
    const char *seg = url;

    for (const char *c = url;; c++) {
        if (*c == '/' || *c == ':' || *c == '?' || *c == '#' || !*c) {
            size_t len = (size_t)(c - seg);
            if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                return 0;
            if (!*c || *c == '?' || *c == '#')
                break;
            seg = c + 1;
            continue;
        }
        if (*c == '\\' || (unsigned char)*c <= ' ' || *c == 0x7f)
            return 0;
        if (*c == '%' && c[1] && c[2]) {
            char h[3] = {(char)tolower((unsigned char)c[1]), (char)tolower((unsigned char)c[2]), 0};
            if (!strcmp(h, "2e") || !strcmp(h, "2f") || !strcmp(h, "5c"))
                return 0;
        }
    }
    return 1;
}

int url_under_prefix(const char *url, const char *prefix)
{
    size_t n = strlen(prefix);

    if (!n || strncmp(url, prefix, n) != 0)
        return 0;
    return prefix[n - 1] == '/' || prefix[n - 1] == ':' || url[n] == '\0' || url[n] == '/';
}

int url_path_under(const char *path, const char *root, char *resolved, size_t n)
{
    char p[PATH_MAX], r[PATH_MAX];
    size_t rn;

    if (!realpath(path, p) || !realpath(root, r))
        return 0;
    rn = strlen(r);
    if (!(rn == 1 || (strncmp(p, r, rn) == 0 && (p[rn] == '\0' || p[rn] == '/'))))
        return 0;
    if (resolved && path_fmt(resolved, n, "%s", p) != 0)
        return 0; /* a cut path would name another place */
    return 1;
}
