#include "vcs/forge.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config.h"
#include "util/err.h"
#include "util/secret.h"
#include "util/strbuf.h"

#define FORGE_RESPONSE_CAP ((size_t)8 << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        abort(); /* out of memory ends the process (STYLE.md) */
    return d;
}

void vcs_forge_release(struct vcs_forge *f)
{
    if (!f)
        return;
    free(f->base_url);
    free(f->owner);
    free(f->repo);
    memset(f, 0, sizeof(*f));
}

void vcs_pr_release(struct vcs_pr *pr)
{
    if (!pr)
        return;
    free(pr->url);
    memset(pr, 0, sizeof(*pr));
}

int vcs_forge_parse_remote(char *owner, size_t on, char *repo, size_t rn, const char *url)
{
    char buf[2048];
    size_t n;
    char *r, *o;

    if (!url || snprintf(buf, sizeof(buf), "%s", url) >= (int)sizeof(buf))
        return err_set(ERR_INVALID, "remote URL missing or too long");
    n = strlen(buf);
    while (n > 0 && buf[n - 1] == '/')
        buf[--n] = '\0';
    if (n > 4 && strcmp(buf + n - 4, ".git") == 0)
        buf[n -= 4] = '\0';
    /* the last two components, split on '/' or (scp-like) ':' */
    r = strrchr(buf, '/');
    o = strrchr(buf, ':');
    if (!r || (o && o > r))
        r = o;
    if (!r || !r[1])
        goto bad;
    *r++ = '\0';
    o = strrchr(buf, '/');
    {
        char *c = strrchr(buf, ':');
        if (!o || (c && c > o))
            o = c;
    }
    o = o ? o + 1 : buf;
    /* an owner that is really the host (https://host/repo) or a user */
    if (!*o || strchr(o, '@') || (strstr(buf, "://") && strstr(buf, "://") + 3 == o))
        goto bad;
    if (snprintf(owner, on, "%s", o) >= (int)on || snprintf(repo, rn, "%s", r) >= (int)rn)
        goto bad;
    return 0;
bad:
    return err_set(ERR_INVALID,
                   "cannot tell owner/repo from remote URL \"%s\": set forge.owner "
                   "and forge.repo",
                   url);
}

int vcs_forge_from_config(struct vcs_forge *f, const char *remote_url)
{
    const char *base = config_str(CFG_FORGE_BASE_URL);
    const char *co = config_str(CFG_FORGE_OWNER), *cr = config_str(CFG_FORGE_REPO);
    char owner[256], repo[256];
    size_t n;
    int rc;

    memset(f, 0, sizeof(*f));
    if (!base || !*base)
        return err_set(ERR_INVALID, "forge.base_url is empty");
    if (co && *co && cr && *cr) {
        snprintf(owner, sizeof(owner), "%s", co);
        snprintf(repo, sizeof(repo), "%s", cr);
    } else {
        if ((rc = vcs_forge_parse_remote(owner, sizeof(owner), repo, sizeof(repo), remote_url)) !=
            0)
            return rc;
        if (co && *co)
            snprintf(owner, sizeof(owner), "%s", co);
        if (cr && *cr)
            snprintf(repo, sizeof(repo), "%s", cr);
    }
    f->base_url = xstrdup(base);
    n = strlen(f->base_url);
    while (n > 0 && f->base_url[n - 1] == '/')
        f->base_url[--n] = '\0';
    f->owner = xstrdup(owner);
    f->repo = xstrdup(repo);
    return 0;
}

int vcs_forge_can_pr(const char *remote_name, const char *remote_url)
{
    const char *base = config_str(CFG_FORGE_BASE_URL);
    const char *co = config_str(CFG_FORGE_OWNER), *cr = config_str(CFG_FORGE_REPO);
    char owner[256], repo[256], host[256] = "";
    const char *h;
    size_t n = 0;

    if (!base || !*base)
        return err_set(ERR_INVALID, "forge.base_url is empty: no forge to open a pull request "
                                    "on");
    /* the configuration names the forge's repository: it is the forge */
    if (co && *co && cr && *cr)
        return 0;
    if (!remote_url || !*remote_url || remote_url[0] == '/' || remote_url[0] == '.' ||
        !strncmp(remote_url, "file:", 5) || (!strstr(remote_url, "://") &&
                                             !strchr(remote_url, ':')))
        return err_set(ERR_INVALID,
                       "remote \"%s\" (%s) is a local path: no forge takes a pull request "
                       "there; set forge.base_url, forge.owner and forge.repo, or "
                       "pull_request to false",
                       remote_name, remote_url ? remote_url : "");
    if (vcs_forge_parse_remote(owner, sizeof(owner), repo, sizeof(repo), remote_url) != 0)
        return -1;
    /* the remote's host: after "://" (and any user@), or before the ':' of
     * scp-like syntax */
    h = strstr(remote_url, "://");
    h = h ? h + 3 : remote_url;
    {
        const char *at = strchr(h, '@'), *sep = strpbrk(h, "/:");
        if (at && (!sep || at < sep))
            h = at + 1;
    }
    while (h[n] && h[n] != '/' && h[n] != ':' && n < sizeof(host) - 1) {
        host[n] = h[n];
        n++;
    }
    host[n] = '\0';
    /* forge.base_url left at its default serves github.com only */
    if (!strcmp(config_source(CFG_FORGE_BASE_URL), "default") && strcmp(host, "github.com") != 0)
        return err_set(ERR_INVALID,
                       "remote \"%s\" is on %s, and no forge is configured for it "
                       "(forge.base_url is the default, %s); set forge.base_url, or "
                       "pull_request to false",
                       remote_name, host[0] ? host : "an unknown host", base);
    return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    strbuf *sb = ud;
    size_t n = size * nmemb;

    if (!sb)
        return n;                             /* answer not wanted */
    return strbuf_add(sb, p, n) == 0 ? n : 0; /* 0 aborts the transfer */
}

/* One HTTP request.  body may be NULL (GET).  with_token adds the forge
 * token's Authorization header when the variable is set.  The response
 * body goes to resp (NULL: dropped), the status to *status.  Transport failures are
 * errors; any HTTP status is returned for the caller to judge.  shown is
 * how messages name the URL. */
static int http_do(long *status, strbuf *resp, const char *method, const char *url,
                   const char *shown, const char *body, int with_token, long timeout_s)
{
    CURL *c = NULL;
    struct curl_slist *h = NULL;
    char errbuf[CURL_ERROR_SIZE] = "";
    char auth[4096];
    CURLcode cc;
    int rc = 0;

    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != 0)
        return err_set(ERR_FAIL, "libcurl: cannot initialise");
    if (!(c = curl_easy_init()))
        return err_set(ERR_NOMEM, "libcurl: cannot make a handle");
    h = curl_slist_append(h, "Accept: application/vnd.github+json, application/json");
    h = curl_slist_append(h, "User-Agent: goald/" GOALD_VERSION);
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    if (with_token) {
        const char *name = config_str(CFG_FORGE_TOKEN_ENV);
        const char *tok = name && *name ? secret_get(name) : NULL;
        if (tok && *tok) {
            const char *scheme = config_str(CFG_FORGE_AUTH_SCHEME);
            int bearer = scheme && strcasecmp(scheme, "bearer") == 0;
            if (snprintf(auth, sizeof(auth), "Authorization: %s %s", bearer ? "Bearer" : "token",
                         tok) >= (int)sizeof(auth)) {
                rc = err_set(ERR_INVALID, "the token in $%s is too long", name);
                goto out;
            }
            h = curl_slist_append(h, auth);
            memset(auth, 0, sizeof(auth)); /* the list holds its own copy */
        }
    }
    if (!h) {
        rc = err_set(ERR_NOMEM, "out of memory");
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout_s < 10 ? timeout_s : 10L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* never carry the token elsewhere */
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    if (body) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        rc = err_set(cc == CURLE_OPERATION_TIMEDOUT ? ERR_TIMEOUT : ERR_FAIL, "%s %s: %s", method,
                     shown, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return rc;
}

/* "METHOD URL: HTTP 422: <message>" from a forge's error answer. */
static int http_status_err(const char *method, const char *url, long status, const strbuf *resp)
{
    cJSON *j = cJSON_Parse(strbuf_cstr(resp));
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    char msg[300];

    snprintf(msg, sizeof(msg), "%s",
             cJSON_IsString(m) ? m->valuestring : (resp->len ? strbuf_cstr(resp) : ""));
    cJSON_Delete(j);
    return err_set(status == 404 ? ERR_NOTFOUND : ERR_FAIL, "%s %s: HTTP %ld%s%s", method, url,
                   status, msg[0] ? ": " : "", msg);
}

static int pulls_url(strbuf *u, const struct vcs_forge *f)
{
    char *o = curl_easy_escape(NULL, f->owner, 0), *r = curl_easy_escape(NULL, f->repo, 0);
    int rc = (o && r) ? strbuf_addf(u, "%s/repos/%s/%s/pulls", f->base_url, o, r)
                      : err_set(ERR_NOMEM, "out of memory");
    curl_free(o);
    curl_free(r);
    return rc;
}

static int pr_from_json(struct vcs_pr *out, const cJSON *pr)
{
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(pr, "number");
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(pr, "html_url");

    if (!cJSON_IsNumber(num) || num->valuedouble < 1)
        return err_set(ERR_FAIL, "forge answer: pull request without a number");
    out->number = (long)num->valuedouble;
    out->url = xstrdup(cJSON_IsString(url) ? url->valuestring : "");
    return 0;
}

int vcs_forge_pr_find(struct vcs_pr *out, const struct vcs_forge *f, const char *head)
{
    strbuf u = STRBUF_INIT, resp = STRBUF_INIT, label = STRBUF_INIT;
    char *q = NULL;
    cJSON *arr = NULL;
    const cJSON *it;
    long status = 0;
    int rc;

    memset(out, 0, sizeof(out[0]));
    strbuf_init(&resp, FORGE_RESPONSE_CAP);
    if ((rc = strbuf_addf(&label, "%s:%s", f->owner, head)) != 0)
        goto out;
    if (!(q = curl_easy_escape(NULL, strbuf_cstr(&label), 0))) {
        rc = err_set(ERR_NOMEM, "out of memory");
        goto out;
    }
    /* per_page (GitHub) and limit (Gitea) widen the page for forges that
     * ignore the head filter; the answer is filtered here in any case */
    if ((rc = pulls_url(&u, f)) != 0 ||
        (rc = strbuf_addf(&u, "?state=open&head=%s&per_page=100&limit=50", q)) != 0)
        goto out;
    if ((rc = http_do(&status, &resp, "GET", strbuf_cstr(&u), strbuf_cstr(&u), NULL, 1,
                      (long)config_int(CFG_FORGE_TIMEOUT_S))) != 0)
        goto out;
    if (status != 200) {
        rc = http_status_err("GET", strbuf_cstr(&u), status, &resp);
        goto out;
    }
    arr = cJSON_Parse(strbuf_cstr(&resp));
    if (!cJSON_IsArray(arr)) {
        rc = err_set(ERR_FAIL, "GET %s: expected a JSON array", strbuf_cstr(&u));
        goto out;
    }
    rc = ERR_NOTFOUND;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(h, "ref");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "state");
        if (!cJSON_IsString(ref) || strcmp(ref->valuestring, head) != 0)
            continue;
        if (cJSON_IsString(st) && strcmp(st->valuestring, "open") != 0)
            continue;
        rc = pr_from_json(out, it);
        break;
    }
    if (rc == ERR_NOTFOUND)
        err_set(ERR_NOTFOUND, "no open pull request from %s", strbuf_cstr(&label));
out:
    cJSON_Delete(arr);
    curl_free(q);
    strbuf_release(&label);
    strbuf_release(&resp);
    strbuf_release(&u);
    return rc;
}

int vcs_forge_pr_ensure(struct vcs_pr *out, const struct vcs_forge *f, const char *title,
                        const char *head, const char *base, const char *body)
{
    strbuf u = STRBUF_INIT, resp = STRBUF_INIT;
    cJSON *req = NULL, *ans = NULL;
    char *text = NULL;
    long status = 0;
    int rc;

    memset(out, 0, sizeof(out[0]));
    if (!title || !*title || !head || !*head || !base || !*base)
        return err_set(ERR_INVALID, "pull request: title, head and base are required");
    rc = vcs_forge_pr_find(out, f, head);
    if (rc != ERR_NOTFOUND)
        return rc; /* found (0), or the forge failed */
    vcs_pr_release(out);

    strbuf_init(&resp, FORGE_RESPONSE_CAP);
    req = cJSON_CreateObject();
    if (!req || !cJSON_AddStringToObject(req, "title", title) ||
        !cJSON_AddStringToObject(req, "head", head) ||
        !cJSON_AddStringToObject(req, "base", base) ||
        !cJSON_AddStringToObject(req, "body", body ? body : "") ||
        !(text = cJSON_PrintUnformatted(req))) {
        rc = err_set(ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = pulls_url(&u, f)) != 0)
        goto out;
    if ((rc = http_do(&status, &resp, "POST", strbuf_cstr(&u), strbuf_cstr(&u), text, 1,
                      (long)config_int(CFG_FORGE_TIMEOUT_S))) != 0)
        goto out;
    if (status == 422 || status == 409) {
        /* "A pull request already exists" (GitHub 422, Gitea 409): one was
         * opened between our look-up and our POST, or the look-up missed
         * it (a forge that ignores the head filter, more than one page of
         * open pull requests): return that one when it can be found */
        struct vcs_pr again;
        if (vcs_forge_pr_find(&again, f, head) == 0) {
            *out = again;
            rc = 0;
            goto out;
        }
        vcs_pr_release(&again);
    }
    if (status != 201 && status != 200) {
        rc = http_status_err("POST", strbuf_cstr(&u), status, &resp);
        goto out;
    }
    ans = cJSON_Parse(strbuf_cstr(&resp));
    if ((rc = pr_from_json(out, ans)) != 0) {
        err_wrap(rc, "POST %s", strbuf_cstr(&u));
        goto out;
    }
    out->created = 1;
out:
    cJSON_Delete(ans);
    cJSON_free(text);
    cJSON_Delete(req);
    strbuf_release(&resp);
    strbuf_release(&u);
    return rc;
}

/* scheme://host[:port] of url into out: webhook URLs often carry a
 * secret in their path, so messages show no more. */
static void url_origin(char *out, size_t n, const char *url)
{
    const char *p = strstr(url, "://");
    size_t len;

    p = p ? p + 3 : url;
    len = (size_t)(p - url) + strcspn(p, "/?#");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), url);
}

int vcs_webhook_post(int *sent_out, const char *url, const char *json)
{
    char shown[256];
    long status = 0;
    int rc;

    if (sent_out)
        *sent_out = 0;
    if (!url)
        url = config_str(CFG_NOTIFY_WEBHOOK_URL);
    if (!url || !*url)
        return 0;
    if (!json)
        return err_set(ERR_INVALID, "webhook: no body");
    url_origin(shown, sizeof(shown), url);
    rc = http_do(&status, NULL, "POST", url, shown, json, 0,
                 (long)config_int(CFG_NOTIFY_WEBHOOK_TIMEOUT_S));
    if (rc)
        return err_wrap(rc, "webhook");
    if (status < 200 || status > 299)
        return err_set(ERR_FAIL, "webhook: POST %s: HTTP %ld", shown, status);
    if (sent_out)
        *sent_out = 1;
    return 0;
}
