/*
 * forge_issues.c - issues, comments and collaborators of a forge (see
 * forge_issues.h).
 */
#include "vcs/forge_issues.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/http.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

#define URL_CAP 4096

/* "{base}/repos/{owner}/{repo}" (escaped) then tail (printf-style). */
static int repo_url(strbuf *u, const struct vcs_forge *f, const char *tail, ...)
    __attribute__((format(printf, 3, 4)));

static int repo_url(strbuf *u, const struct vcs_forge *f, const char *tail, ...)
{
    char rest[1024];
    va_list ap;
    int rc, w;

    va_start(ap, tail);
    w = vsnprintf(rest, sizeof(rest), tail, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof(rest))
        return err_set(ERR_INVALID, "forge URL too long");
    if ((rc = strbuf_addf(u, "%s/repos/", f->base_url)) != 0 ||
        (rc = http_escape(u, f->owner)) != 0 || (rc = strbuf_add(u, "/", 1)) != 0 ||
        (rc = http_escape(u, f->repo)) != 0)
        return rc;
    return strbuf_addf(u, "%s", rest);
}

/* A request whose answer must be 2xx with a JSON body: *out (cJSON_Delete). */
static int get_json(cJSON **out, const struct vcs_forge *f, const strbuf *u)
{
    struct http_response res;
    int rc;

    *out = NULL;
    memset(&res, 0, sizeof(res));
    rc = vcs_forge_request(&res, NULL, f, "GET", strbuf_cstr(u), NULL, NULL);
    if (rc == 0 && res.status == 404)
        rc = err_set(ERR_NOTFOUND, "GET %s: HTTP 404", strbuf_cstr(u));
    else if (rc == 0 && (res.status < 200 || res.status > 299))
        rc = err_set(ERR_FAIL, "GET %s: HTTP %ld", strbuf_cstr(u), res.status);
    else if (rc == 0 && !(*out = cJSON_Parse(strbuf_cstr(&res.body))))
        rc = err_set(ERR_FAIL, "GET %s: the answer is not JSON", strbuf_cstr(u));
    http_response_release(&res);
    return rc;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return v ? v : "";
}

static const char *jlogin(const cJSON *o, const char *k)
{
    return jstr(cJSON_GetObjectItemCaseSensitive(o, k), "login");
}

static int64_t jint(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* A conditional GET of u whose 2xx answer is a JSON array: *out
 * (cJSON_Delete) is NULL on 304 (*not_modified 1).  etag as
 * vcs_forge_issues_list(). */
static int get_array_if(cJSON **out, int *not_modified, char *etag, size_t etag_n,
                        struct forge_failure *fl, const struct vcs_forge *f, const strbuf *u)
{
    struct http_response res;
    char inm[600];
    const char *tag;
    int rc;

    *out = NULL;
    *not_modified = 0;
    memset(&res, 0, sizeof(res));
    /* truncation: ok, a cut tag only misses the cache */
    snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
    rc = vcs_forge_request(&res, fl, f, "GET", strbuf_cstr(u), NULL,
                           etag[0] && strlen(etag) < 500 ? inm : NULL);
    if (rc == 0 && res.status == 304)
        *not_modified = 1;
    else if (rc == 0 && (res.status < 200 || res.status > 299))
        rc = err_set(res.status == 404 ? ERR_NOTFOUND : ERR_FAIL, "GET %s: HTTP %ld",
                     strbuf_cstr(u), res.status);
    else if (rc == 0 && !cJSON_IsArray(*out = cJSON_Parse(strbuf_cstr(&res.body)))) {
        cJSON_Delete(*out);
        *out = NULL;
        rc = err_set(ERR_FAIL, "GET %s: the answer is not a JSON array", strbuf_cstr(u));
    }
    if (rc == 0 && !*not_modified) {
        tag = http_response_header(&res, "etag");
        /* truncation: ok, the tag is checked to fit */
        snprintf(etag, etag_n, "%s", tag && strlen(tag) < etag_n ? tag : "");
    }
    http_response_release(&res);
    return rc;
}

void vcs_issues_free(struct vcs_issue *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].title);
        free(v[i].body);
        free(v[i].author);
    }
    free(v);
}

/* The issues of a list answer (pull requests, which GitHub lists among
 * issues, left out). */
static void issues_from(struct vcs_issue **out, int *n, const cJSON *arr)
{
    const cJSON *it;
    int max = cJSON_GetArraySize(arr), k = 0;

    *out = max > 0 ? xcalloc((size_t)max, sizeof(**out)) : NULL;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_GetObjectItemCaseSensitive(it, "pull_request") &&
            !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(it, "pull_request")))
            continue;
        if (jint(it, "number") <= 0)
            continue;
        (*out)[k].number = jint(it, "number");
        (*out)[k].title = xstrdup(jstr(it, "title"));
        (*out)[k].body = xstrdup(jstr(it, "body"));
        (*out)[k].author = xstrdup(jlogin(it, "user"));
        k++;
    }
    *n = k;
}

int vcs_forge_issues_list(struct vcs_issue **out, int *n, int *not_modified, char *etag,
                          size_t etag_n, struct forge_failure *fl, const struct vcs_forge *f,
                          const char *label)
{
    strbuf u;
    cJSON *j = NULL;
    int rc;

    *out = NULL;
    *n = 0;
    strbuf_init(&u, URL_CAP);
    if ((rc = repo_url(&u, f, "/issues?state=open&labels=")) == 0 &&
        (rc = http_escape(&u, label)) == 0 &&
        (rc = strbuf_adds(&u, vcs_forge_is_gitea(f) ? "&type=issues&limit=50" : "&per_page=100")) ==
            0 &&
        (rc = get_array_if(&j, not_modified, etag, etag_n, fl, f, &u)) == 0 && j)
        issues_from(out, n, j);
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

int vcs_forge_default_branch(char *out, size_t n, const struct vcs_forge *f)
{
    strbuf u;
    cJSON *j = NULL;
    int rc;

    strbuf_init(&u, URL_CAP);
    if ((rc = repo_url(&u, f, "%s", "")) == 0 && (rc = get_json(&j, f, &u)) == 0) {
        const char *b = jstr(j, "default_branch");
        if (!*b || strlen(b) >= n)
            rc = err_set(ERR_FAIL, "GET %s: no default_branch", strbuf_cstr(&u));
        else
            snprintf(out, n, "%s", b); /* truncation: ok, the branch is checked to fit */
    }
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

/* GitHub's {"event":"labeled","label":{"name"},"actor":{"login"}} or
 * Gitea's timeline {"type":"label","body":"1","label":{"name"},"user"}. */
static const char *label_actor(const cJSON *ev, const char *label, int gitea)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(ev, "label");

    if (strcmp(jstr(l, "name"), label) != 0)
        return NULL;
    if (gitea)
        return !strcmp(jstr(ev, "type"), "label") && !strcmp(jstr(ev, "body"), "1")
                   ? jlogin(ev, "user")
                   : NULL;
    return !strcmp(jstr(ev, "event"), "labeled") ? jlogin(ev, "actor") : NULL;
}

int vcs_forge_labeler(char *out, size_t n, const struct vcs_forge *f, int64_t number,
                      const char *label)
{
    int gitea = vcs_forge_is_gitea(f);
    const cJSON *ev;
    strbuf u;
    cJSON *j = NULL;
    int rc;

    out[0] = '\0';
    strbuf_init(&u, URL_CAP);
    rc = repo_url(&u, f, "/issues/%lld/%s", (long long)number,
                  gitea ? "timeline?limit=50" : "events?per_page=100");
    if (rc == 0)
        rc = get_json(&j, f, &u);
    if (rc == 0)
        cJSON_ArrayForEach(ev, j)
        {
            const char *who = label_actor(ev, label, gitea);
            /* the last one wins; a login too long to hold is no one's */
            if (who && *who && (size_t)snprintf(out, n, "%s", who) >= n)
                out[0] = '\0';
        }
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

int vcs_forge_can_push(int *allowed, const struct vcs_forge *f, const char *login)
{
    static const char *const ok[] = {"admin", "maintain", "write", "owner", NULL};
    strbuf u;
    cJSON *j = NULL;
    int rc;

    *allowed = 0;
    if (!login || !*login)
        return 0;
    strbuf_init(&u, URL_CAP);
    if ((rc = repo_url(&u, f, "/collaborators/")) == 0 && (rc = http_escape(&u, login)) == 0 &&
        (rc = strbuf_addf(&u, "/permission")) == 0)
        rc = get_json(&j, f, &u);
    if (rc == ERR_NOTFOUND) { /* not a collaborator */
        err_clear();
        rc = 0;
    }
    for (int i = 0; rc == 0 && j && ok[i]; i++)
        if (!strcmp(jstr(j, "permission"), ok[i]))
            *allowed = 1;
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

/* POST or PATCH {"body": body} to u: the answer's id into *id. */
static int comment_send(int64_t *id, long *status, struct forge_failure *fl,
                        const struct vcs_forge *f, const char *method, const strbuf *u,
                        const char *body)
{
    struct http_response res;
    cJSON *in = cJSON_CreateObject(), *ans = NULL;
    char *text;
    int rc;

    memset(&res, 0, sizeof(res));
    cJSON_AddStringToObject(in, "body", body);
    text = cJSON_PrintUnformatted(in);
    rc = vcs_forge_request(&res, fl, f, method, strbuf_cstr(u), text, NULL);
    *status = res.status;
    if (rc == 0 && res.status != 404 && (res.status < 200 || res.status > 299))
        rc = err_set(ERR_FAIL, "%s %s: HTTP %ld", method, strbuf_cstr(u), res.status);
    if (rc == 0 && res.status != 404 && (ans = cJSON_Parse(strbuf_cstr(&res.body))) != NULL)
        *id = jint(ans, "id");
    cJSON_Delete(ans);
    cJSON_free(text);
    cJSON_Delete(in);
    http_response_release(&res);
    return rc;
}

int vcs_forge_comment_put(int64_t *comment_id, struct forge_failure *fl, const struct vcs_forge *f,
                          int64_t number, const char *body)
{
    strbuf u;
    long status = 0;
    int64_t id = 0;
    int rc = 0;

    strbuf_init(&u, URL_CAP);
    if (*comment_id > 0) {
        if ((rc = repo_url(&u, f, "/issues/comments/%lld", (long long)*comment_id)) == 0)
            rc = comment_send(&id, &status, fl, f, "PATCH", &u, body);
        if (rc == 0 && status != 404)
            goto out;
        strbuf_reset(&u);
    }
    if (rc == 0 && (rc = repo_url(&u, f, "/issues/%lld/comments", (long long)number)) == 0)
        rc = comment_send(&id, &status, fl, f, "POST", &u, body);
    if (rc == 0 && status == 404)
        rc = err_set(ERR_NOTFOUND, "POST %s: HTTP 404", strbuf_cstr(&u));
out:
    if (rc == 0)
        *comment_id = id > 0 ? id : *comment_id;
    strbuf_release(&u);
    return rc;
}

void vcs_comments_free(struct vcs_comment *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].author);
        free(v[i].body);
    }
    free(v);
}

int vcs_forge_comments_list(struct vcs_comment **out, int *n, int *not_modified, char *etag,
                            size_t etag_n, const struct vcs_forge *f, int64_t number, int64_t after)
{
    const cJSON *it;
    strbuf u;
    cJSON *j = NULL;
    int rc, k = 0;

    *out = NULL;
    *n = 0;
    strbuf_init(&u, URL_CAP);
    rc = repo_url(&u, f, "/issues/%lld/comments?%s", (long long)number,
                  vcs_forge_is_gitea(f) ? "limit=50" : "per_page=100");
    if (rc == 0)
        rc = get_array_if(&j, not_modified, etag, etag_n, NULL, f, &u);
    if (rc == 0 && cJSON_GetArraySize(j) > 0) {
        *out = xcalloc((size_t)cJSON_GetArraySize(j), sizeof(**out));
        cJSON_ArrayForEach(it, j)
        {
            if (jint(it, "id") <= after)
                continue;
            (*out)[k].id = jint(it, "id");
            (*out)[k].author = xstrdup(jlogin(it, "user"));
            (*out)[k].body = xstrdup(jstr(it, "body"));
            k++;
        }
    }
    *n = k;
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

void vcs_reviews_free(struct vcs_review *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].author);
        free(v[i].state);
        free(v[i].body);
    }
    free(v);
}

int vcs_forge_reviews_list(struct vcs_review **out, int *n, int *not_modified, char *etag,
                           size_t etag_n, const struct vcs_forge *f, int64_t number)
{
    const cJSON *it;
    strbuf u;
    cJSON *j = NULL;
    int rc, k = 0;

    *out = NULL;
    *n = 0;
    strbuf_init(&u, URL_CAP);
    rc = repo_url(&u, f, "/pulls/%lld/reviews?%s", (long long)number,
                  vcs_forge_is_gitea(f) ? "limit=50" : "per_page=100");
    if (rc == 0)
        rc = get_array_if(&j, not_modified, etag, etag_n, NULL, f, &u);
    if (rc == 0 && cJSON_GetArraySize(j) > 0) {
        *out = xcalloc((size_t)cJSON_GetArraySize(j), sizeof(**out));
        cJSON_ArrayForEach(it, j)
        {
            if (jint(it, "id") <= 0)
                continue;
            (*out)[k].id = jint(it, "id");
            (*out)[k].author = xstrdup(jlogin(it, "user"));
            (*out)[k].state = xstrdup(jstr(it, "state"));
            (*out)[k].body = xstrdup(jstr(it, "body"));
            k++;
        }
    }
    *n = k;
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}

void vcs_review_comments_free(struct vcs_review_comment *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].path);
        free(v[i].body);
    }
    free(v);
}

/* A review comment's line: GitHub's line (original_line once outdated),
 * Gitea's position (original_position). */
static int64_t comment_line(const cJSON *c)
{
    static const char *const keys[] = {"line", "original_line", "position", "original_position",
                                       NULL};
    for (int i = 0; keys[i]; i++)
        if (jint(c, keys[i]) > 0)
            return jint(c, keys[i]);
    return 0;
}

int vcs_forge_review_comments(struct vcs_review_comment **out, int *n, const struct vcs_forge *f,
                              int64_t number, int64_t review_id)
{
    const cJSON *it;
    strbuf u;
    cJSON *j = NULL;
    int rc, k = 0;

    *out = NULL;
    *n = 0;
    strbuf_init(&u, URL_CAP);
    rc = repo_url(&u, f, "/pulls/%lld/reviews/%lld/comments", (long long)number,
                  (long long)review_id);
    if (rc == 0 && (rc = get_json(&j, f, &u)) == 0 && cJSON_GetArraySize(j) > 0) {
        *out = xcalloc((size_t)cJSON_GetArraySize(j), sizeof(**out));
        cJSON_ArrayForEach(it, j)
        {
            (*out)[k].path = xstrdup(jstr(it, "path"));
            (*out)[k].line = comment_line(it);
            (*out)[k].body = xstrdup(jstr(it, "body"));
            k++;
        }
    }
    *n = k;
    cJSON_Delete(j);
    strbuf_release(&u);
    return rc;
}
