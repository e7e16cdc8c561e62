/*
 * fake_forge - a GitHub-shaped REST fake on 127.0.0.1 for tests.
 *
 *   fake_forge --port-file F --log L.jsonl [--port N] [--require-token T]
 *
 * Serves, under / (GitHub), /api/v3 (GitHub Enterprise) and /api/v1
 * (Gitea, Forgejo) alike:
 *   GET  /repos/{o}/{r}/pulls?state=open&head=o:branch   list (filtered)
 *   POST /repos/{o}/{r}/pulls {title, head, base, body}  201, numbers from 1
 *        per repository; 422 when an open one has the same head (as GitHub)
 *   POST /hook            200 (a webhook receiver); POST /hook/fail: 500
 *   ANY  /git/...         a git smart-HTTP door that only checks Basic auth:
 *        401 + WWW-Authenticate until the password is the token, then 404
 * Pull requests live in memory.  With --require-token, API requests
 * without "Authorization: token T" or "Bearer T" get 401.
 *
 * Every request is one JSON line in L: method, path, query, headers (the
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
#include <unistd.h>

#include "util/strbuf.h"

static FILE *logf_;
static const char *token;
static unsigned port;
static cJSON *prs; /* every pull request; each has a private "_repo" */

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

static cJSON *public_pr(const cJSON *pr)
{
    cJSON *c = cJSON_Duplicate(pr, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "_repo");
    return c;
}

/* GET/POST /repos/{o}/{r}/pulls.  Sets *status; returns the answer. */
static cJSON *pulls(int *status, struct MHD_Connection *c, const char *method, const char *o,
                    const char *r, const cJSON *in)
{
    char repo[512], label[512];
    cJSON *ans, *it;

    snprintf(repo, sizeof(repo), "%s/%s", o, r);
    if (strcmp(method, "GET") == 0) {
        const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
        const char *head = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "head");
        ans = cJSON_CreateArray();
        cJSON_ArrayForEach(it, prs)
        {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
            if (strcmp(jstr(it, "_repo"), repo) != 0)
                continue;
            if (strcmp(state ? state : "open", "all") != 0 &&
                strcmp(jstr(it, "state"), state ? state : "open") != 0)
                continue;
            if (head && strcmp(jstr(h, strchr(head, ':') ? "label" : "ref"), head) != 0)
                continue;
            cJSON_AddItemToArray(ans, public_pr(it));
        }
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
    snprintf(label, sizeof(label), "%s:%s", o, head);
    long n = 1;
    cJSON_ArrayForEach(it, prs)
    {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "head");
        if (strcmp(jstr(it, "_repo"), repo) != 0)
            continue;
        n++;
        if (strcmp(jstr(it, "state"), "open") == 0 && strcmp(jstr(h, "ref"), head) == 0) {
            char m[600];
            cJSON *errs = cJSON_AddArrayToObject(ans, "errors"), *e = cJSON_CreateObject();
            snprintf(m, sizeof(m), "A pull request already exists for %s.", label);
            cJSON_AddStringToObject(e, "message", m);
            cJSON_AddItemToArray(errs, e);
            cJSON_AddStringToObject(ans, "message", "Validation Failed");
            *status = 422;
            return ans;
        }
    }
    char url[1024];
    cJSON *pr = cJSON_CreateObject(), *h, *b;
    cJSON_AddNumberToObject(pr, "number", (double)n);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s/pull/%ld", port, repo, n);
    cJSON_AddStringToObject(pr, "html_url", url);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/repos/%s/pulls/%ld", port, repo, n);
    cJSON_AddStringToObject(pr, "url", url);
    cJSON_AddStringToObject(pr, "state", "open");
    cJSON_AddStringToObject(pr, "title", title);
    cJSON_AddStringToObject(pr, "body", body ? body : "");
    h = cJSON_AddObjectToObject(pr, "head");
    cJSON_AddStringToObject(h, "ref", head);
    cJSON_AddStringToObject(h, "label", label);
    b = cJSON_AddObjectToObject(pr, "base");
    cJSON_AddStringToObject(b, "ref", base);
    cJSON_AddStringToObject(pr, "_repo", repo);
    cJSON_AddItemToArray(prs, pr);
    cJSON_Delete(ans);
    *status = 201;
    return public_pr(pr);
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *text, int want_basic)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;

    MHD_add_response_header(r, "Content-Type", "application/json");
    if (want_basic)
        MHD_add_response_header(r, "WWW-Authenticate", "Basic realm=\"fake_forge\"");
    ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    struct req *rq = *con_cls;
    cJSON *entry, *in = NULL, *ans = NULL;
    const char *path = url;
    char o[256], r[256], tail[64];
    int status = 404, want_basic = 0, api = 1, auth_ok;
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

    in = cJSON_Parse(strbuf_cstr(&rq->body));
    if (strncmp(path, "/api/v1/", 8) == 0 || strncmp(path, "/api/v3/", 8) == 0)
        path += 7;
    auth_ok = auth_matches(c, strncmp(path, "/git/", 5) == 0);

    if (strncmp(path, "/git/", 5) == 0) {
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
    } else if (token && !auth_ok) {
        status = 401;
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "Bad credentials");
    } else if (sscanf(path, "/repos/%255[^/]/%255[^/]/%63s", o, r, tail) == 3 &&
               strcmp(tail, "pulls") == 0) {
        ans = pulls(&status, c, method, o, r, in);
    } else {
        ans = cJSON_CreateObject();
        cJSON_AddStringToObject(ans, "message", "Not Found");
    }

    entry = cJSON_CreateObject();
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

    text = cJSON_PrintUnformatted(ans);
    ret = reply(c, status, text, want_basic);
    cJSON_free(text);
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
    fprintf(stderr, "usage: fake_forge --port-file F --log L [--port N] [--require-token T]\n");
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
    fclose(logf_);
    return 0;
}
