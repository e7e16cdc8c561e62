/*
 * fake_forge - a GitHub-shaped REST fake on 127.0.0.1 for tests.
 *
 *   fake_forge --port-file F --log L.jsonl [--port N] [--require-token T]
 *              [--mode github|gitea] [--git-root DIR]
 *
 * Serves, under / (GitHub), /api/v3 (GitHub Enterprise) and /api/v1
 * (Gitea, Forgejo):
 *   GET  /repos/{o}/{r}/pulls?state=open...   list, newest first, paginated
 *        github mode: filtered by head=OWNER:branch (the head's owner) and
 *        base, ?per_page= (30, at most 100) &page=; gitea mode: no head or
 *        base filter (as Gitea), ?limit= (30, at most 50) &page=.  Both send
 *        a Link header (rel="next" while more) and X-Total-Count.  The mode
 *        defaults to gitea under /api/v1 and github elsewhere.
 *   POST /repos/{o}/{r}/pulls {title, head, base, body}  201, numbers from 1
 *        per repository; head "OWNER:branch" is a fork's branch; 422 (gitea
 *        mode: 409) when an open one has the same head and base (as
 *        GitHub, with errors[0].message)
 *   GET  /repos/{o}/{r}/pulls/{base}/{head}  gitea mode: the newest pull
 *        request from head ("OWNER:branch" for a fork's) into base, open or
 *        not, or 404 (Gitea's repoGetPullRequestByBaseHead)
 *   POST /_fake/seed {"repo":"o/r","prs":[{"head","base","head_owner",
 *        "title","state"}...]}  adds pull requests (head_owner: a fork's)
 *   POST /_fake/inject {"status","headers":{},"body":{},"times","method",
 *        "reset_in"}  the next API requests (of method, when given) get this
 *        answer instead, times times (1); reset_in N adds x-ratelimit-reset
 *        = now + N (epoch seconds)
 *   POST /hook            200 (a webhook receiver); POST /hook/fail: 500
 *   ANY  /git/...         a git smart-HTTP door that only checks Basic auth:
 *        401 + WWW-Authenticate until the password is the token, then 404;
 *        with --git-root DIR, `git http-backend` serves the repositories
 *        under DIR there (fetch and push; /git/OWNER/REPO.git is
 *        DIR/OWNER/REPO.git), once the token matches (or none is required)
 * Issues, comments and collaborators: see fake_forge_issues.h.
 * Pull requests live in memory.  With --require-token, API requests
 * without "Authorization: token T" or "Bearer T" get 401.
 *
 * Every request is one JSON line in L: t_ms (arrival, ms since the
 * epoch), method, path, query, headers (the
 * Authorization value replaced by its scheme and "***"), body, json (the
 * body parsed, or null), status, and auth_ok (the credential matched T;
 * null without --require-token).  The bound port is written to F (atomically)
 * once the server listens.  SIGTERM or SIGINT stop it.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/strbuf.h"

static const char *jstr(const cJSON *o, const char *k);

static FILE *logf_;
static const char *token;
static unsigned port;
static cJSON *prs; /* every pull request; each has a private "_repo" */
static cJSON *injects; /* queued answers (POST /_fake/inject) */
static const char *mode; /* "github", "gitea" or NULL (by path) */
static const char *git_root; /* --git-root: /git/ is served by git http-backend */

struct req {
    strbuf body;
};

static enum MHD_Result hdr_it(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    cJSON *o = cls;
    (void)kind;
    if (strcasecmp(k, "Authorization") == 0) {
        char shown[64];
        size_t n = strcspn(v ? v : "", " ");
        snprintf(shown, sizeof(shown), "%.*s ***", (int)(n < 20 ? n : 20), v ? v : "");
        cJSON_AddStringToObject(o, k, shown);
    } else {
        cJSON_AddStringToObject(o, k, v ? v : "");
    }
    return MHD_YES;
}

static enum MHD_Result arg_it(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    cJSON_AddStringToObject(cls, k, v ? v : "");
    return MHD_YES;
}

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decode base64 src into out (NUL-terminated); 0 or -1. */
static int b64dec(char *out, size_t n, const char *src)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;

    for (; *src && *src != '='; src++) {
        int v = b64val((unsigned char)*src);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= n)
                return -1;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return 0;
}

/* Does the Authorization header carry the token?  API: "token T" or
 * "Bearer T"; git: Basic base64(user:T). */
static int auth_matches(struct MHD_Connection *c, int basic)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char dec[1024];
    const char *colon;

    if (!token || !a)
        return 0;
    if (basic) {
        if (strncasecmp(a, "Basic ", 6) != 0 || b64dec(dec, sizeof(dec), a + 6) != 0)
            return 0;
        colon = strchr(dec, ':');
        return colon && strcmp(colon + 1, token) == 0;
    }
    if (strncasecmp(a, "token ", 6) == 0)
        return strcmp(a + 6, token) == 0;
    if (strncasecmp(a, "Bearer ", 7) == 0)
        return strcmp(a + 7, token) == 0;
    return 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

#include "fake_forge_issues.h"

static cJSON *public_pr(const cJSON *pr)
{
    cJSON *c = cJSON_Duplicate(pr, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "_repo");
    return c;
}

static cJSON *make_pr(const char *repo, long n, const char *owner, const char *title,
                      const char *head, const char *head_owner, const char *base,
                      const char *body, const char *state)
{
    char url[1024], label[512], full[512];
    const char *slash = strchr(repo, '/');
    cJSON *pr = cJSON_CreateObject(), *h, *b, *hr;

    cJSON_AddNumberToObject(pr, "number", (double)n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s/pull/%ld", port, repo, n);
    cJSON_AddStringToObject(pr, "html_url", url);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/repos/%s/pulls/%ld", port, repo, n);
    cJSON_AddStringToObject(pr, "url", url);
    cJSON_AddStringToObject(pr, "state", state ? state : "open");
    cJSON_AddStringToObject(pr, "title", title ? title : "");
    cJSON_AddStringToObject(pr, "body", body ? body : "");
    h = cJSON_AddObjectToObject(pr, "head");
    cJSON_AddStringToObject(h, "ref", head);
    snprintf(label, sizeof(label), "%s:%s", head_owner ? head_owner : owner, head);
    cJSON_AddStringToObject(h, "label", label);
    hr = cJSON_AddObjectToObject(h, "repo");
    snprintf(full, sizeof(full), "%s/%s", head_owner ? head_owner : owner, slash ? slash + 1 : repo);
    cJSON_AddStringToObject(hr, "full_name", full);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(hr, "owner"), "login",
                            head_owner ? head_owner : owner);
    b = cJSON_AddObjectToObject(pr, "base");
    cJSON_AddStringToObject(b, "ref", base);
    cJSON_AddStringToObject(pr, "_repo", repo);
    return pr;
}

static long next_number(const char *repo)
{
    long n = 1;
    const cJSON *it;
    cJSON_ArrayForEach(it, prs) if (strcmp(jstr(it, "_repo"), repo) == 0) n++;
    return n;
}

static long qint(struct MHD_Connection *c, const char *k, long dflt, long max)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
    long n = v && *v ? strtol(v, NULL, 10) : dflt;
    if (n < 1)
        n = dflt;
    return n > max ? max : n;
}

/* GET/POST /repos/{o}/{r}/pulls.  Sets *status and *link; returns the
 * answer. */
static cJSON *pulls(int *status, char *link, size_t linkn, long *total, struct MHD_Connection *c,
                    const char *method, const char *o, const char *r, const cJSON *in, int gitea)
{
    char repo[512], label[512];
    cJSON *ans, *it;

    snprintf(repo, sizeof(repo), "%s/%s", o, r);
    link[0] = '\0';
    if (strcmp(method, "GET") == 0) {
        const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
        const char *head = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "head");
        const char *base = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "base");
        long per = gitea ? qint(c, "limit", 30, 50) : qint(c, "per_page", 30, 100);
        long page = qint(c, "page", 1, 1000000), k = 0;
        cJSON *all = cJSON_CreateArray();
        ans = cJSON_CreateArray();
        cJSON_ArrayForEach(it, prs)
        {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "base");
            if (strcmp(jstr(it, "_repo"), repo) != 0)
                continue;
            if (strcmp(state ? state : "open", "all") != 0 &&
                strcmp(jstr(it, "state"), state ? state : "open") != 0)
                continue;
            if (!gitea && head && strcmp(jstr(h, strchr(head, ':') ? "label" : "ref"), head) != 0)
                continue;
            if (!gitea && base && strcmp(jstr(b, "ref"), base) != 0)
                continue;
            /* newest first */
            cJSON_InsertItemInArray(all, 0, public_pr(it));
        }
        *total = cJSON_GetArraySize(all);
        cJSON_ArrayForEach(it, all)
        {
            if (k >= (page - 1) * per && k < page * per)
                cJSON_AddItemToArray(ans, cJSON_Duplicate(it, 1));
            k++;
        }
        if (page * per < *total)
            snprintf(link, linkn, "<http://127.0.0.1:%u/repos/%s/pulls?page=%ld>; rel=\"next\"",
                     port, repo, page + 1);
        else
            snprintf(link, linkn, "<http://127.0.0.1:%u/repos/%s/pulls?page=1>; rel=\"first\"",
                     port, repo);
        cJSON_Delete(all);
        *status = 200;
        return ans;
    }
    if (strcmp(method, "POST") != 0) {
        *status = 405;
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "Method Not Allowed");
        return ans;
    }
    const char *title = jstr(in, "title"), *head = jstr(in, "head"), *base = jstr(in, "base");
    const char *body = jstr(in, "body");
    ans = cJSON_CreateObject();
    if (!title || !*title || !head || !*head || !base || !*base) {
        *status = 422;
        cJSON_AddStringToObject(ans, "message", "Validation Failed");
        return ans;
    }
    /* a fork's branch: "OWNER:branch" */
    const char *colon = strchr(head, ':');
    char head_owner[256] = "";
    if (colon) {
        snprintf(head_owner, sizeof(head_owner), "%.*s", (int)(colon - head), head);
        head = colon + 1;
    }
    snprintf(label, sizeof(label), "%s:%s", colon ? head_owner : o, head);
    cJSON_ArrayForEach(it, prs)
    {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "base");
        if (strcmp(jstr(it, "_repo"), repo) != 0)
            continue;
        if (strcmp(jstr(it, "state"), "open") == 0 && strcmp(jstr(h, "label"), label) == 0 &&
            strcmp(jstr(b, "ref"), base) == 0) {
            char m[600];
            cJSON *errs = cJSON_AddArrayToObject(ans, "errors"), *e = cJSON_CreateObject();
            snprintf(m, sizeof(m), "A pull request already exists for %s.", label);
            cJSON_AddStringToObject(e, "message", m);
            cJSON_AddItemToArray(errs, e);
            cJSON_AddStringToObject(ans, "message", "Validation Failed");
            *status = gitea ? 409 : 422; /* Gitea says 409 */
            return ans;
        }
    }
    cJSON *pr = make_pr(repo, next_number(repo), o, title, head, colon ? head_owner : NULL, base,
                        body, "open");
    cJSON_AddItemToArray(prs, pr);
    cJSON_Delete(ans);
    *status = 201;
    return public_pr(pr);
}

/* Gitea's GET /repos/{o}/{r}/pulls/{base}/{head} (head "OWNER:branch"
 * for a fork's; the branch may hold slashes): the newest pull request of
 * that head into that base, whatever its state, or 404. */
static cJSON *pull_by_base_head(int *status, const char *method, const char *o, const char *r,
                                const char *rest)
{
    char repo[512], base[256], label[600];
    const char *slash = strchr(rest, '/'), *head;
    cJSON *ans = NULL, *it;

    snprintf(repo, sizeof(repo), "%s/%s", o, r);
    *status = 404;
    if (strcmp(method, "GET") == 0 && slash && slash[1]) {
        snprintf(base, sizeof(base), "%.*s", (int)(slash - rest), rest);
        head = slash + 1;
        if (strchr(head, ':'))
            snprintf(label, sizeof(label), "%s", head);
        else
            snprintf(label, sizeof(label), "%s:%s", o, head);
        cJSON_ArrayForEach(it, prs)
        {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "base");
            if (strcmp(jstr(it, "_repo"), repo) == 0 && strcmp(jstr(h, "label"), label) == 0 &&
                strcmp(jstr(b, "ref"), base) == 0) {
                cJSON_Delete(ans);
                ans = public_pr(it); /* the last, the newest */
                *status = 200;
            }
        }
    }
    if (!ans) {
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "pull request does not exist");
    }
    return ans;
}

/* POST /_fake/seed */
static cJSON *seed(int *status, const cJSON *in)
{
    const char *repo = jstr(in, "repo");
    const cJSON *it;
    cJSON *ans = cJSON_CreateObject();
    char o[256];

    if (!repo || !strchr(repo, '/')) {
        *status = 400;
        cJSON_AddStringToObject(ans, "message", "seed: repo \"owner/name\" required");
        return ans;
    }
    snprintf(o, sizeof(o), "%.*s", (int)(strchr(repo, '/') - repo), repo);
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(in, "prs"))
    {
        const char *head = jstr(it, "head"), *base = jstr(it, "base");
        cJSON_AddItemToArray(prs, make_pr(repo, next_number(repo), o, jstr(it, "title"),
                                          head ? head : "x", jstr(it, "head_owner"),
                                          base ? base : "main", NULL, jstr(it, "state")));
    }
    cJSON_AddNumberToObject(ans, "count", cJSON_GetArraySize(prs));
    *status = 200;
    return ans;
}

/* What git http-backend answered: status, headers, body. */
struct cgi_answer {
    int status;
    cJSON *headers; /* name -> value */
    strbuf body;
};

/* Run `git http-backend` (a CGI) on one request under git_root: PATH_INFO
 * is the path after /git, receive-pack allowed (REMOTE_USER set), the
 * request body on its stdin.  0 with *a filled, -1 when it cannot run. */
static int git_cgi(struct cgi_answer *a, struct MHD_Connection *c, const char *method,
                   const char *path_info, const strbuf *body)
{
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "service");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    char in_path[] = "/tmp/fake_forge_cgi_XXXXXX", buf[65536], *p, *hdr_end;
    int in_fd, out[2], st;
    ssize_t n;
    pid_t pid;

    memset(a, 0, sizeof(*a));
    strbuf_init(&a->body, 64 << 20);
    a->headers = cJSON_CreateObject();
    a->status = 200;
    if ((in_fd = mkstemp(in_path)) < 0)
        return -1;
    unlink(in_path);
    if (body->len && write(in_fd, body->buf, body->len) != (ssize_t)body->len)
        return close(in_fd), -1;
    lseek(in_fd, 0, SEEK_SET);
    if (pipe(out) != 0)
        return close(in_fd), -1;
    pid = fork();
    if (pid == 0) {
        char qs[300], cl[32];
        snprintf(qs, sizeof(qs), "%s%s", q ? "service=" : "", q ? q : "");
        snprintf(cl, sizeof(cl), "%zu", body->len);
        setenv("GIT_PROJECT_ROOT", git_root, 1);
        setenv("GIT_HTTP_EXPORT_ALL", "1", 1);
        setenv("PATH_INFO", path_info, 1);
        setenv("QUERY_STRING", qs, 1);
        setenv("REQUEST_METHOD", method, 1);
        setenv("CONTENT_LENGTH", cl, 1);
        setenv("REMOTE_USER", "fake", 1);
        setenv("REMOTE_ADDR", "127.0.0.1", 1);
        if (ct)
            setenv("CONTENT_TYPE", ct, 1);
        if (ce)
            setenv("HTTP_CONTENT_ENCODING", ce, 1);
        dup2(in_fd, 0);
        dup2(out[1], 1);
        close(out[0]);
        execlp("git", "git", "http-backend", (char *)NULL);
        _exit(127);
    }
    close(in_fd);
    close(out[1]);
    while ((n = read(out[0], buf, sizeof(buf))) > 0)
        if (strbuf_add(&a->body, buf, (size_t)n) != 0)
            break;
    close(out[0]);
    waitpid(pid, &st, 0);
    /* the CGI's header lines, then the body */
    p = a->body.buf ? a->body.buf : "";
    hdr_end = strstr(p, "\r\n\r\n");
    if (!hdr_end)
        return -1;
    *hdr_end = '\0';
    for (char *line = strtok(p, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (colon++; *colon == ' '; colon++)
            ;
        if (!strcasecmp(line, "Status"))
            a->status = atoi(colon);
        else
            cJSON_AddStringToObject(a->headers, line, colon);
    }
    {
        size_t off = (size_t)(hdr_end + 4 - a->body.buf);
        memmove(a->body.buf, a->body.buf + off, a->body.len - off);
        a->body.len -= off;
    }
    return 0;
}

static enum MHD_Result reply_cgi(struct MHD_Connection *c, struct cgi_answer *a)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        a->body.len, a->body.buf ? a->body.buf : (void *)"", MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;
    const cJSON *h;

    cJSON_ArrayForEach(h, a->headers) MHD_add_response_header(r, h->string, h->valuestring);
    ret = MHD_queue_response(c, (unsigned)a->status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *text, int want_basic,
                             const cJSON *extra)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;
    const cJSON *h;

    MHD_add_response_header(r, "Content-Type", "application/json");
    cJSON_ArrayForEach(h, extra) if (cJSON_IsString(h))
        MHD_add_response_header(r, h->string, h->valuestring);
    if (want_basic)
        MHD_add_response_header(r, "WWW-Authenticate", "Basic realm=\"fake_forge\"");
    ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The first queued injection for method, if any: its answer. */
static int inject_take(int *status, cJSON **ans, cJSON *extra, const char *method)
{
    cJSON *it;
    int i = 0;

    cJSON_ArrayForEach(it, injects)
    {
        const char *m = jstr(it, "method");
        const cJSON *times = cJSON_GetObjectItemCaseSensitive(it, "times");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "status");
        const cJSON *reset = cJSON_GetObjectItemCaseSensitive(it, "reset_in");
        const cJSON *h;
        if (m && strcmp(m, method) != 0) {
            i++;
            continue;
        }
        *status = cJSON_IsNumber(st) ? st->valueint : 500;
        *ans = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "body"))
                   ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(it, "body"), 1)
                   : cJSON_CreateObject();
        cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(it, "headers"))
            if (cJSON_IsString(h)) cJSON_AddStringToObject(extra, h->string, h->valuestring);
        if (cJSON_IsNumber(reset)) {
            char t[32];
            snprintf(t, sizeof(t), "%lld", (long long)time(NULL) + (long long)reset->valuedouble);
            cJSON_AddStringToObject(extra, "x-ratelimit-reset", t);
        }
        if (!cJSON_IsNumber(times) || times->valuedouble <= 1)
            cJSON_DeleteItemFromArray(injects, i);
        else
            cJSON_SetNumberValue((cJSON *)times, times->valuedouble - 1);
        return 1;
    }
    return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    struct req *rq = *con_cls;
    cJSON *entry, *in = NULL, *ans = NULL, *extra;
    const char *path = url;
    char link[600] = "";
    long total = -1;
    struct timeval tv;
    char o[256], r[256], tail[64];
    int status = 404, want_basic = 0, api = 1, auth_ok, served_cgi = 0;
    struct cgi_answer cgi;
    char *text;
    enum MHD_Result ret;

    (void)cls;
    (void)version;
    if (!rq) {
        rq = calloc(1, sizeof(*rq));
        if (!rq)
            return MHD_NO;
        strbuf_init(&rq->body, 16 << 20);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_size) {
        if (strbuf_add(&rq->body, upload, *upload_size) != 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }

    gettimeofday(&tv, NULL);
    extra = cJSON_CreateObject();
    in = cJSON_Parse(strbuf_cstr(&rq->body));
    int gitea = mode ? strcmp(mode, "gitea") == 0 : strncmp(path, "/api/v1/", 8) == 0;
    if (strncmp(path, "/api/v1/", 8) == 0 || strncmp(path, "/api/v3/", 8) == 0)
        path += 7;
    auth_ok = auth_matches(c, strncmp(path, "/git/", 5) == 0);

    if (strncmp(path, "/git/", 5) == 0 && git_root && (!token || auth_ok)) {
        api = 0;
        if (git_cgi(&cgi, c, method, path + 4, &rq->body) == 0) {
            served_cgi = 1;
            status = cgi.status;
        } else {
            status = 500;
            ans = cJSON_CreateObject();
            cJSON_AddStringToObject(ans, "message", "git http-backend failed");
        }
    } else if (strncmp(path, "/git/", 5) == 0) {
        api = 0;
        if (!auth_ok) {
            status = 401;
            want_basic = 1;
            ans = cJSON_CreateObject();
            cJSON_AddStringToObject(ans, "message", "authentication required");
        } else {
            status = 404;
            ans = cJSON_CreateObject();
            cJSON_AddStringToObject(ans, "message", "fake_forge serves no git repositories");
        }
    } else if (strcmp(path, "/hook") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        status = 200;
        ans = cJSON_CreateObject();
        cJSON_AddBoolToObject(ans, "ok", 1);
    } else if (strcmp(path, "/hook/fail") == 0) {
        api = 0;
        status = 500;
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "receiver broken on purpose");
    } else if (strcmp(path, "/_fake/seed") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        ans = seed(&status, in);
    } else if (strcmp(path, "/_fake/inject") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        cJSON_AddItemToArray(injects, cJSON_Duplicate(in, 1));
        status = 200;
        ans = cJSON_CreateObject();
        cJSON_AddBoolToObject(ans, "ok", 1);
    } else if (strcmp(path, "/_fake/issue") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        ans = issue_seed(&status, in);
    } else if (strcmp(path, "/_fake/comment") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        ans = comment_seed(&status, in);
    } else if (strcmp(path, "/_fake/collaborator") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        ans = collaborator_seed(&status, in);
    } else if (strcmp(path, "/_fake/review") == 0 && strcmp(method, "POST") == 0) {
        api = 0;
        ans = review_seed(&status, in);
    } else if (strcmp(path, "/_fake/state") == 0) {
        api = 0;
        ans = fake_state(&status);
    } else if (inject_take(&status, &ans, extra, method)) {
        /* an injected answer */
    } else if (token && !auth_ok) {
        status = 401;
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "Bad credentials");
    } else if (issues_route(&ans, &status, extra, c, method, path, in, gitea)) {
        rate_count(status, extra);
    } else if (gitea && sscanf(path, "/repos/%255[^/]/%255[^/]/%63[^/]", o, r, tail) == 3 &&
               strcmp(tail, "pulls") == 0 && strstr(path, "/pulls/")) {
        ans = pull_by_base_head(&status, method, o, r, strstr(path, "/pulls/") + 7);
    } else if (sscanf(path, "/repos/%255[^/]/%255[^/]/%63s", o, r, tail) == 3 &&
               strcmp(tail, "pulls") == 0) {
        ans = pulls(&status, link, sizeof(link), &total, c, method, o, r, in, gitea);
        if (link[0])
            cJSON_AddStringToObject(extra, "Link", link);
        if (total >= 0) {
            char t[32];
            snprintf(t, sizeof(t), "%ld", total);
            cJSON_AddStringToObject(extra, "X-Total-Count", t);
        }
    } else {
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "Not Found");
    }

    entry = cJSON_CreateObject();
    cJSON_AddNumberToObject(entry, "t_ms", (double)tv.tv_sec * 1000.0 + (double)(tv.tv_usec / 1000));
    cJSON_AddStringToObject(entry, "method", method);
    cJSON_AddStringToObject(entry, "path", url);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, arg_it,
                              cJSON_AddObjectToObject(entry, "query"));
    MHD_get_connection_values(c, MHD_HEADER_KIND, hdr_it,
                              cJSON_AddObjectToObject(entry, "headers"));
    cJSON_AddStringToObject(entry, "body", strbuf_cstr(&rq->body));
    cJSON_AddItemToObject(entry, "json", in ? cJSON_Duplicate(in, 1) : cJSON_CreateNull());
    cJSON_AddNumberToObject(entry, "status", status);
    if (token)
        cJSON_AddBoolToObject(entry, "auth_ok", auth_ok);
    else
        cJSON_AddNullToObject(entry, "auth_ok");
    cJSON_AddBoolToObject(entry, "api", api);
    text = cJSON_PrintUnformatted(entry);
    fprintf(logf_, "%s\n", text);
    fflush(logf_);
    cJSON_free(text);
    cJSON_Delete(entry);

    if (served_cgi) {
        ret = reply_cgi(c, &cgi);
        strbuf_release(&cgi.body);
        cJSON_Delete(cgi.headers);
        cJSON_Delete(extra);
        cJSON_Delete(in);
        return ret;
    }
    text = ans ? cJSON_PrintUnformatted(ans) : NULL;
    ret = reply(c, status, text ? text : "", want_basic, extra);
    cJSON_free(text);
    cJSON_Delete(extra);
    cJSON_Delete(ans);
    cJSON_Delete(in);
    return ret;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
    struct req *rq = *con_cls;
    (void)cls;
    (void)c;
    (void)toe;
    if (rq) {
        strbuf_release(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: fake_forge --port-file F --log L [--port N] [--require-token T] "
                    "[--mode github|gitea] [--git-root DIR]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *log_path = NULL;
    struct sockaddr_in sin;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    sigset_t set;
    char tmp[4096];
    FILE *pf;
    int sig, want_port = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
            port_file = argv[++i];
        else if (!strcmp(argv[i], "--log") && i + 1 < argc)
            log_path = argv[++i];
        else if (!strcmp(argv[i], "--port") && i + 1 < argc)
            want_port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--require-token") && i + 1 < argc)
            token = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "--git-root") && i + 1 < argc)
            git_root = argv[++i];
        else
            usage();
    }
    if (!port_file || !log_path)
        usage();
    logf_ = fopen(log_path, "a");
    if (!logf_) {
        perror(log_path);
        return 1;
    }
    prs = cJSON_CreateArray();
    injects = cJSON_CreateArray();
    issues_init();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the server thread inherits it */

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)want_port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)want_port,
                         NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &sin,
                         MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "fake_forge: cannot listen on 127.0.0.1:%d\n", want_port);
        return 1;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    port = info ? info->port : (unsigned)want_port;
    snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
    pf = fopen(tmp, "w");
    if (!pf || fprintf(pf, "%u\n", port) < 0 || fclose(pf) != 0 || rename(tmp, port_file) != 0) {
        perror(port_file);
        MHD_stop_daemon(d);
        return 1;
    }
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    cJSON_Delete(prs);
    cJSON_Delete(injects);
    issues_cleanup();
    fclose(logf_);
    return 0;
}
