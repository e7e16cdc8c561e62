#include "vcs/forge.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config.h"
#include "util/err.h"
#include "util/http.h"
#include "util/log.h"
#include "util/path.h"
#include "util/retry.h"
#include "util/secret.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define FORGE_RESPONSE_CAP ((size_t)8 << 20)

void vcs_forge_release(struct vcs_forge *f)
{
    if (!f)
        return;
    free(f->base_url);
    free(f->owner);
    free(f->repo);
    free(f->head_owner);
    free(f->token_env);
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

/* A local path or file:// URL: no forge's repository. */
static int remote_is_local(const char *url)
{
    return !url || !*url || url[0] == '/' || url[0] == '.' || !strncmp(url, "file:", 5) ||
           (!strstr(url, "://") && !strchr(url, ':'));
}

/* The fork's owner when the push remote is a network URL whose owner is
 * not the configured forge.owner (the base repository's): its branch is
 * "OWNER:branch" to the forge.  NULL when the remote is the base
 * repository, or a local path (nothing to tell). */
static char *fork_owner(const char *remote_url, const char *base_owner)
{
    char owner[256], repo[256];

    if (remote_is_local(remote_url) ||
        vcs_forge_parse_remote(owner, sizeof(owner), repo, sizeof(repo), remote_url) != 0) {
        err_clear();
        return NULL;
    }
    return strcasecmp(owner, base_owner) != 0 ? xstrdup(owner) : NULL;
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
    /* owner and repo name the repository in every URL: never cut */
    if (!(co && *co && cr && *cr) &&
        (rc = vcs_forge_parse_remote(owner, sizeof(owner), repo, sizeof(repo), remote_url)) != 0)
        return rc;
    if (co && *co && path_fmt(owner, sizeof(owner), "%s", co) != 0)
        return err_wrap(ERR_INVALID, "forge.owner");
    if (cr && *cr && path_fmt(repo, sizeof(repo), "%s", cr) != 0)
        return err_wrap(ERR_INVALID, "forge.repo");
    f->base_url = xstrdup(base);
    n = strlen(f->base_url);
    while (n > 0 && f->base_url[n - 1] == '/')
        f->base_url[--n] = '\0';
    f->owner = xstrdup(owner);
    f->repo = xstrdup(repo);
    if (co && *co)
        f->head_owner = fork_owner(remote_url, co);
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
    if (remote_is_local(remote_url))
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

/* Is base_url a Gitea or Forgejo API (".../api/v1")? */
static int forge_is_gitea(const char *base_url)
{
    size_t n = strlen(base_url);
    return n >= 7 && strcmp(base_url + n - 7, "/api/v1") == 0;
}

/* The "Authorization: ..." line of the forge token into auth (n bytes),
 * or "" when forge.token_env names no set variable.  ERR_INVALID when the
 * token does not fit. */
static int auth_line(char *auth, size_t n, const struct vcs_forge *f)
{
    const char *name = f->token_env ? f->token_env : config_str(CFG_FORGE_TOKEN_ENV);
    const char *tok = name && *name ? secret_get(name) : NULL;
    const char *scheme = config_str(CFG_FORGE_AUTH_SCHEME);
    int bearer = scheme && strcasecmp(scheme, "bearer") == 0;

    auth[0] = '\0';
    if (!tok || !*tok)
        return 0;
    if (snprintf(auth, n, "Authorization: %s %s", bearer ? "Bearer" : "token", tok) >= (int)n) {
        memset(auth, 0, n);
        return err_set(ERR_INVALID, "the token in $%s is too long", name);
    }
    return 0;
}

/* One HTTP request (util/http.h), on a handle of its own.  body may be
 * NULL (GET).  A request to forge f (NULL: a webhook, whose answer's body
 * is not wanted) carries the forge token's Authorization header when the
 * variable is set, and GitHub's media type and API version headers unless
 * f is a Gitea/Forgejo API.  *res is filled (release it with
 * http_response_release(), also after an error).  Transport failures are
 * errors; any HTTP status is returned for the caller to judge.  shown is
 * how messages name the URL. */
static int http_do(struct http_response *res, const struct vcs_forge *f, const char *method,
                   const char *url, const char *shown, const char *body, long timeout_s,
                   const char *extra)
{
    int with_token = f != NULL, github = f && !forge_is_gitea(f->base_url);
    char auth[4096];
    const char *lines[7];
    struct http_request rq = {.method = method, .url = url, .shown = shown, .body = body,
                              .headers = lines, .max_body = FORGE_RESPONSE_CAP,
                              .drop_body = !with_token};
    size_t n = 0;
    int rc;

    memset(res, 0, sizeof(*res));
    res->retry_after_ms = -1;
    if (with_token && (rc = auth_line(auth, sizeof(auth), f)) != 0)
        return rc;
    if (github) {
        lines[n++] = "Accept: application/vnd.github+json";
        lines[n++] = "X-GitHub-Api-Version: 2022-11-28";
    } else {
        lines[n++] = "Accept: application/json";
    }
    if (body)
        lines[n++] = "Content-Type: application/json";
    if (with_token && auth[0])
        lines[n++] = auth;
    if (extra)
        lines[n++] = extra;
    lines[n] = NULL;
    rq.timeout_ms = (int64_t)timeout_s * 1000;
    rq.connect_timeout_ms = (int64_t)(timeout_s < 10 ? timeout_s : 10) * 1000;
    rc = http_perform(res, NULL, &rq);
    if (with_token)
        memset(auth, 0, sizeof(auth)); /* libcurl held its own copy */
    return rc;
}

/* The forge's reason in an error answer: "message", and the first of
 * "errors" (GitHub's 422: {"message":"Validation Failed","errors":
 * [{"message":"A pull request already exists for o:b."}]} or
 * [{"resource":"PullRequest","field":"base","code":"invalid"}]). */
static void forge_reason(char *out, size_t n, const strbuf *resp)
{
    cJSON *j = cJSON_Parse(strbuf_cstr(resp));
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "errors"), 0);
    const char *em = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e0, "message"));
    const char *ef = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e0, "field"));
    const char *ec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e0, "code"));
    const char *msg = cJSON_IsString(m) ? m->valuestring : NULL;
    char detail[300] = "";

    if (em && *em)
        snprintf(detail, sizeof(detail), "%s", em); /* truncation: ok, a message */
    else if (cJSON_IsString(e0) && *e0->valuestring)
        snprintf(detail, sizeof(detail), "%s", e0->valuestring); /* truncation: ok, a message */
    else if (ef || ec)
        /* truncation: ok, a message */
        snprintf(detail, sizeof(detail), "%s%s%s", ef ? ef : "", ef && ec ? " " : "",
                 ec ? ec : "");
    if (msg && *detail)
        snprintf(out, n, "%s: %s", msg, detail); /* truncation: ok, a message */
    else if (msg || *detail)
        snprintf(out, n, "%s", msg ? msg : detail); /* truncation: ok, a message */
    else if (!j && resp->len)
        snprintf(out, n, "%.200s", strbuf_cstr(resp)); /* truncation: ok, a message */
    else
        out[0] = '\0';
    cJSON_Delete(j);
}

/* "METHOD URL: HTTP 422: <reason>" from a forge's error answer. */
static int http_status_err(const char *method, const char *url, long status, const strbuf *resp)
{
    char msg[640];

    forge_reason(msg, sizeof(msg), resp);
    return err_set(status == 404 ? ERR_NOTFOUND : ERR_FAIL, "%s %s: HTTP %ld%s%s", method, url,
                   status, msg[0] ? ": " : "", msg);
}

/* A forge API request with the retry policy (util/retry.h): a network
 * error, a 5xx, a 429 or a rate limit (403 or 429 with
 * x-ratelimit-remaining: 0 or Retry-After) is tried again, up to
 * forge.max_attempts, after the wait the server asked for or a backoff,
 * capped at forge.retry_max_wait_s; a server wait beyond the cap fails
 * now, naming it.  401 and 403 (not a rate limit) are never retried:
 * class "auth".  Any other status is returned for the caller to judge.
 * On error, fl (when not NULL) gets the class and the server's wait. */
/* A rate limit: a 429, or a 403 with x-ratelimit-remaining: 0, a
 * Retry-After, or a body saying so (GitHub's secondary rate limit: "You
 * have exceeded a secondary rate limit", often without either header). */
static int rate_limited(const struct http_response *res)
{
    const char *rem = http_response_header(res, "x-ratelimit-remaining");

    if (res->status == 429)
        return 1;
    if (res->status != 403)
        return 0;
    return (rem && strtoll(rem, NULL, 10) == 0 && *rem == '0') ||
           http_response_header(res, "retry-after") ||
           (res->body.len && strcasestr(strbuf_cstr(&res->body), "rate limit"));
}

/* How long a rate limit asks us to wait: the server's (Retry-After, or
 * x-ratelimit-reset with nothing remaining), else a minute, as GitHub
 * asks of a secondary limit or a bare 429. */
#define FORGE_RATE_LIMIT_MIN_MS 60000

/* The error of a 401, or a 403 that is no rate limit: never retried. */
static int auth_refused(const struct http_response *res, struct forge_failure *fl,
                        const struct vcs_forge *f, const char *method, const char *url)
{
    const char *name = f->token_env ? f->token_env : config_str(CFG_FORGE_TOKEN_ENV);
    const char *tok = name && *name ? secret_get(name) : NULL;
    char why[640];

    forge_reason(why, sizeof(why), &res->body);
    if (fl)
        snprintf(fl->cls, sizeof(fl->cls), "auth"); /* truncation: ok, a constant that fits cls */
    return err_set(ERR_FAIL,
                   "forge %s refused the request (%s %s: HTTP %ld%s%s): %s; fix the token "
                   "in $%s (forge.token_env names the variable; its repository access), "
                   "then retry",
                   f->base_url, method, url, res->status, why[0] ? ": " : "", why,
                   tok && *tok ? "the token was refused" : "no token was sent, the "
                                                            "variable is not set",
                   name && *name ? name : "GOALD_FORGE_TOKEN");
}

/* The error when the forge's wait (server_ms) is past the cap. */
static int wait_too_long(const struct http_response *res, struct forge_failure *fl,
                         const char *method, const char *url, int64_t server_ms, int64_t cap_ms)
{
    char why[640];

    forge_reason(why, sizeof(why), &res->body);
    if (fl) {
        snprintf(fl->cls, sizeof(fl->cls), "forge"); /* truncation: ok, a constant that fits cls */
        fl->wait_ms = server_ms;
    }
    return err_set(ERR_FAIL,
                   "%s %s: HTTP %ld%s%s: the forge's rate limit resets in %lld s, more "
                   "than forge.retry_max_wait_s (%lld s): not retrying now",
                   method, url, res->status, why[0] ? ": " : "", why,
                   (long long)((server_ms + 999) / 1000), (long long)(cap_ms / 1000));
}

/* A forge API request with the retry policy (util/retry.h): a network
 * error, a 5xx, a 429 or a rate limit (403 or 429 with
 * x-ratelimit-remaining: 0 or Retry-After) is tried again, up to
 * forge.max_attempts, after the wait the server asked for or a backoff,
 * capped at forge.retry_max_wait_s; a server wait beyond the cap fails
 * now, naming it.  401 and 403 (not a rate limit) are never retried:
 * class "auth".  Any other status is returned for the caller to judge in
 * *res (release it with http_response_release(), also after an error).
 * On error, fl (when not NULL) gets the class and the server's wait. */
static int forge_request(struct http_response *res, struct forge_failure *fl,
                         const struct vcs_forge *f, const char *method, const char *url,
                         const char *body)
{
    return vcs_forge_request(res, fl, f, method, url, body, NULL);
}

int vcs_forge_is_gitea(const struct vcs_forge *f)
{
    return forge_is_gitea(f->base_url);
}

int vcs_forge_request(struct http_response *res, struct forge_failure *fl,
                      const struct vcs_forge *f, const char *method, const char *url,
                      const char *body, const char *extra)
{
    int max = f->no_wait ? 1 : (int)config_int(CFG_FORGE_MAX_ATTEMPTS);
    int64_t cap_ms = config_int(CFG_FORGE_RETRY_MAX_WAIT_S) * 1000;
    int rc = 0;

    for (int n = 1;; n++) {
        int64_t server_ms, wait;
        int give_up = 0, limited;

        http_response_release(res);
        rc = http_do(res, f, method, url, url, body, (long)config_int(CFG_FORGE_TIMEOUT_S), extra);
        if (rc == ERR_NOMEM || rc == ERR_INVALID)
            return rc;
        limited = !rc && rate_limited(res);
        if (!rc && (res->status == 401 || res->status == 403) && !limited)
            return auth_refused(res, fl, f, method, url);
        if (!rc && !limited && res->status < 500)
            return 0; /* an answer for the caller */
        server_ms = rc ? -1 : res->retry_after_ms;
        if (limited && server_ms < 0)
            server_ms = FORGE_RATE_LIMIT_MIN_MS;
        wait = retry_wait_ms(server_ms, n, 2000, cap_ms, &give_up);
        if (give_up)
            return wait_too_long(res, fl, method, url, server_ms, cap_ms);
        if (n >= max) {
            if (!rc)
                rc = http_status_err(method, url, res->status, &res->body);
            err_wrap(rc, "after %d attempts", n);
            if (fl) {
                /* truncation: ok, a constant that fits cls */
                snprintf(fl->cls, sizeof(fl->cls), "forge");
                fl->wait_ms = limited ? server_ms : 0;
            }
            return rc;
        }
        log_info("forge: %s %s: %s; attempt %d of %d in %lld ms", method, url,
                 rc ? err_last() : (limited ? "rate limited" : "server error"), n + 1, max,
                 (long long)wait);
        time_sleep_ms(wait);
    }
}

static int pulls_url(strbuf *u, const struct vcs_forge *f)
{
    int rc;

    if ((rc = strbuf_addf(u, "%s/repos/", f->base_url)) != 0 || (rc = http_escape(u, f->owner)) != 0 ||
        (rc = strbuf_adds(u, "/")) != 0 || (rc = http_escape(u, f->repo)) != 0)
        return rc;
    return strbuf_adds(u, "/pulls");
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

/* Is the head of pull request pr the branch head of our head owner (the
 * base repository's owner, or the fork's we push to; not another fork's
 * branch of the same name), and its base base? */
static int pr_matches(const cJSON *pr, const struct vcs_forge *f, const char *head,
                      const char *base)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(pr, "head");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(pr, "base");
    const cJSON *hrepo = cJSON_GetObjectItemCaseSensitive(h, "repo");
    const char *ref = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "ref"));
    const char *bref = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "ref"));
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr, "state"));
    const char *login = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(hrepo, "owner"), "login"));
    const char *full = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hrepo, "full_name"));
    const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "label"));
    const char *owner = f->head_owner ? f->head_owner : f->owner;
    size_t on = strlen(owner);

    if (!ref || strcmp(ref, head) != 0 || !bref || strcmp(bref, base) != 0)
        return 0;
    if (st && strcmp(st, "open") != 0)
        return 0;
    /* the head's owner: its repository's, else the label's "owner:" */
    if (login)
        return strcasecmp(login, owner) == 0;
    if (full)
        return strncasecmp(full, owner, on) == 0 && full[on] == '/';
    if (label && strchr(label, ':'))
        return strncasecmp(label, owner, on) == 0 && label[on] == ':';
    return 0; /* a fork that is gone, or nothing says whose: not ours */
}

/* Does the Link header name a next page?  1 yes, 0 no, -1 no Link. */
static int link_has_next(const struct http_response *res)
{
    const char *l = http_response_header(res, "link");
    if (!l)
        return -1;
    return strstr(l, "rel=\"next\"") != NULL || strstr(l, "rel=next") != NULL;
}

/* path escaped segment by segment onto u: a route that takes the rest of
 * the path gets a branch name with its slashes. */
static int escape_segments(strbuf *u, const char *path)
{
    char seg[1024];
    int rc;

    for (;;) {
        size_t n = strcspn(path, "/");
        if (n >= sizeof(seg))
            return err_set(ERR_INVALID, "branch name too long: %.60s...", path);
        memcpy(seg, path, n);
        seg[n] = '\0';
        if ((rc = http_escape(u, seg)) != 0 || !path[n])
            return rc;
        if ((rc = strbuf_adds(u, "/")) != 0)
            return rc;
        path += n + 1;
    }
}

/* Gitea and Forgejo: GET {pulls}/{base}/{head} names the pull request
 * from head (OWNER:branch for a fork) into base, open or not.  0 with out
 * filled when it is open and ours, ERR_NOTFOUND when there is none (a 404:
 * also a server older than that route), else ERR_FAIL. */
static int find_gitea(struct vcs_pr *out, const struct vcs_forge *f, const char *head,
                      const char *base)
{
    strbuf u = STRBUF_INIT;
    struct http_response res = {0};
    cJSON *pr = NULL;
    int rc;

    if ((rc = pulls_url(&u, f)) != 0 || (rc = strbuf_adds(&u, "/")) != 0 ||
        (rc = http_escape(&u, base)) != 0 || (rc = strbuf_adds(&u, "/")) != 0)
        goto out;
    if (f->head_owner &&
        ((rc = http_escape(&u, f->head_owner)) != 0 || (rc = strbuf_adds(&u, ":")) != 0))
        goto out;
    rc = escape_segments(&u, head);
    if (rc || (rc = forge_request(&res, &out->failure, f, "GET", strbuf_cstr(&u), NULL)) != 0)
        goto out;
    if (res.status == 404) {
        rc = ERR_NOTFOUND;
        goto out;
    }
    if (res.status != 200) {
        rc = http_status_err("GET", strbuf_cstr(&u), res.status, &res.body);
        rc = ERR_FAIL;
        /* truncation: ok, a constant that fits cls */
        snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
        goto out;
    }
    pr = cJSON_Parse(strbuf_cstr(&res.body));
    if (!cJSON_IsObject(pr)) {
        rc = err_set(ERR_FAIL, "GET %s: expected a JSON object", strbuf_cstr(&u));
        /* truncation: ok, a constant that fits cls */
        snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
        goto out;
    }
    /* a closed one (the route does not filter) is not the open one we want */
    rc = pr_matches(pr, f, head, base) ? pr_from_json(out, pr) : ERR_NOTFOUND;
out:
    cJSON_Delete(pr);
    http_response_release(&res);
    strbuf_release(&u);
    return rc;
}

/* Page through the open pull requests (GitHub: filtered by head and base;
 * Gitea: all of them, filtered here), at most forge.max_pages pages. */
static int find_pages(struct vcs_pr *out, const struct vcs_forge *f, const char *head,
                      const char *base, const char *label)
{
    strbuf u = STRBUF_INIT, q = STRBUF_INIT, qb = STRBUF_INIT;
    struct http_response res = {0};
    cJSON *arr = NULL;
    const cJSON *it;
    int gitea = forge_is_gitea(f->base_url);
    int per_page = gitea ? 50 : 100, pages = (int)config_int(CFG_FORGE_MAX_PAGES), page;
    int rc;

    if ((rc = http_escape(&q, label)) != 0 || (rc = http_escape(&qb, base)) != 0)
        goto out;
    rc = ERR_NOTFOUND;
    for (page = 1; page <= pages; page++) {
        int n = 0, next;
        strbuf_reset(&u);
        if ((rc = pulls_url(&u, f)) != 0 ||
            (rc = gitea ? strbuf_addf(&u, "?state=open&page=%d&limit=%d", page, per_page)
                        : strbuf_addf(&u, "?state=open&head=%s&base=%s&per_page=%d&page=%d",
                                      strbuf_cstr(&q), strbuf_cstr(&qb), per_page, page)) != 0)
            goto out;
        if ((rc = forge_request(&res, &out->failure, f, "GET", strbuf_cstr(&u), NULL)) != 0)
            goto out;
        if (res.status != 200) {
            /* not "no pull request": the look-up itself failed */
            http_status_err("GET", strbuf_cstr(&u), res.status, &res.body);
            rc = ERR_FAIL;
            /* truncation: ok, a constant that fits cls */
            snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
            goto out;
        }
        cJSON_Delete(arr);
        arr = cJSON_Parse(strbuf_cstr(&res.body));
        if (!cJSON_IsArray(arr)) {
            rc = err_set(ERR_FAIL, "GET %s: expected a JSON array", strbuf_cstr(&u));
            /* truncation: ok, a constant that fits cls */
            snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
            goto out;
        }
        rc = ERR_NOTFOUND;
        cJSON_ArrayForEach(it, arr)
        {
            n++;
            if (rc == ERR_NOTFOUND && pr_matches(it, f, head, base))
                rc = pr_from_json(out, it);
        }
        if (rc != ERR_NOTFOUND)
            goto out;
        /* the last page: empty, a Link header without rel="next", or
         * (without Link) shorter than asked */
        next = link_has_next(&res);
        if (n == 0 || next == 0 || (next < 0 && n < per_page))
            break;
    }
    if (page > pages)
        log_warn("forge: no open pull request from %s into %s in the first %d pages "
                 "(forge.max_pages)",
                 label, base, pages);
out:
    http_response_release(&res);
    cJSON_Delete(arr);
    strbuf_release(&q);
    strbuf_release(&qb);
    strbuf_release(&u);
    return rc;
}

/* The look-up, with Gitea's page scan as a last resort (legacy: after a
 * 409 "already exists" its base/head route did not find). */
static int pr_find(struct vcs_pr *out, const struct vcs_forge *f, const char *head,
                   const char *base, int scan)
{
    strbuf label = STRBUF_INIT;
    int rc;

    memset(out, 0, sizeof(out[0]));
    if ((rc = strbuf_addf(&label, "%s:%s", f->head_owner ? f->head_owner : f->owner, head)) != 0)
        goto out;
    if (!forge_is_gitea(f->base_url))
        rc = find_pages(out, f, head, base, strbuf_cstr(&label));
    else if ((rc = find_gitea(out, f, head, base)) == ERR_NOTFOUND && scan)
        rc = find_pages(out, f, head, base, strbuf_cstr(&label));
    if (rc == ERR_NOTFOUND)
        err_set(ERR_NOTFOUND, "no open pull request from %s into %s", strbuf_cstr(&label), base);
out:
    strbuf_release(&label);
    return rc;
}

int vcs_forge_pr_find(struct vcs_pr *out, const struct vcs_forge *f, const char *head,
                      const char *base)
{
    return pr_find(out, f, head, base, 0);
}

int vcs_forge_pr_ensure(struct vcs_pr *out, const struct vcs_forge *f, const char *title,
                        const char *head, const char *base, const char *body)
{
    strbuf u = STRBUF_INIT, qhead = STRBUF_INIT;
    struct http_response res = {0};
    cJSON *req = NULL, *ans = NULL;
    char *text = NULL;
    int rc;

    memset(out, 0, sizeof(out[0]));
    if (!title || !*title || !head || !*head || !base || !*base)
        return err_set(ERR_INVALID, "pull request: title, head and base are required");
    rc = vcs_forge_pr_find(out, f, head, base);
    if (rc != ERR_NOTFOUND)
        return rc; /* found (0), or the forge failed */
    vcs_pr_release(out);

    /* a fork's branch is OWNER:branch to the base repository */
    if (f->head_owner && (rc = strbuf_addf(&qhead, "%s:%s", f->head_owner, head)) != 0)
        goto out;
    req = cJSON_CreateObject();
    if (!req || !cJSON_AddStringToObject(req, "title", title) ||
        !cJSON_AddStringToObject(req, "head", f->head_owner ? strbuf_cstr(&qhead) : head) ||
        !cJSON_AddStringToObject(req, "base", base) ||
        !cJSON_AddStringToObject(req, "body", body ? body : "") ||
        !(text = cJSON_PrintUnformatted(req))) {
        rc = err_set(ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = pulls_url(&u, f)) != 0)
        goto out;
    if ((rc = forge_request(&res, &out->failure, f, "POST", strbuf_cstr(&u), text)) != 0)
        goto out;
    if (res.status == 422 || res.status == 409) {
        /* "A pull request already exists" (GitHub 422, Gitea 409): one was
         * opened between our look-up and our POST: return that one when it
         * can be found; else the forge's own reason */
        struct vcs_pr again;
        if (pr_find(&again, f, head, base, 1) == 0) {
            *out = again;
            rc = 0;
            goto out;
        }
        vcs_pr_release(&again);
    }
    if (res.status != 201 && res.status != 200) {
        rc = http_status_err("POST", strbuf_cstr(&u), res.status, &res.body);
        /* truncation: ok, a constant that fits cls */
        snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
        goto out;
    }
    ans = cJSON_Parse(strbuf_cstr(&res.body));
    if ((rc = pr_from_json(out, ans)) != 0) {
        err_wrap(rc, "POST %s", strbuf_cstr(&u));
        /* truncation: ok, a constant that fits cls */
        snprintf(out->failure.cls, sizeof(out->failure.cls), "forge");
        goto out;
    }
    out->created = 1;
out:
    cJSON_Delete(ans);
    cJSON_free(text);
    cJSON_Delete(req);
    http_response_release(&res);
    strbuf_release(&qhead);
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
    /* truncation: ok, the length is capped to fit */
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), url);
}

int vcs_webhook_post(int *sent_out, const char *url, const char *json)
{
    struct http_response res;
    char shown[256];
    long status;
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
    rc = http_do(&res, NULL, "POST", url, shown, json,
                 (long)config_int(CFG_NOTIFY_WEBHOOK_TIMEOUT_S), NULL);
    status = res.status;
    http_response_release(&res);
    if (rc)
        return err_wrap(rc, "webhook");
    if (status < 200 || status > 299)
        return err_set(ERR_FAIL, "webhook: POST %s: HTTP %ld", shown, status);
    if (sent_out)
        *sent_out = 1;
    return 0;
}
