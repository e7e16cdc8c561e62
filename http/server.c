/*
 * server.c - libmicrohttpd: listening (loopback, or TLS, or an explicit
 * insecure listen), gathering each request with its body capped, and
 * sending every answer with the security headers (http/http.h).
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http/internal.h"
#include "http/webhook.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "util/xalloc.h"

/* No inline script or style, nothing from elsewhere, never framed; and
 * no HTML from strings (Trusted Types: innerHTML and the like throw, the
 * dashboard builds its DOM with createElement and textContent). */
#define CSP                                                                                \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "          \
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; "  \
    "require-trusted-types-for 'script'"

void http_answer_json(struct http_answer *ans, unsigned status, cJSON *v)
{
    char *text = cJSON_PrintUnformatted(v);
    size_t n = strlen(text);

    free(ans->body);
    ans->body = xmalloc(n + 2);
    memcpy(ans->body, text, n);
    ans->body[n] = '\n';
    ans->body[n + 1] = '\0';
    ans->len = n + 1;
    ans->status = status;
    ans->ctype = "application/json";
    cJSON_free(text);
    cJSON_Delete(v);
}

int http_answer_error(struct http_answer *ans, unsigned status, const char *cls,
                      const char *field, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    cJSON *o = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(o, "error");

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON_AddStringToObject(e, "class", cls);
    cJSON_AddStringToObject(e, "message", msg);
    if (field)
        cJSON_AddStringToObject(e, "field", field);
    http_answer_json(ans, status, o);
    return 0;
}

int http_answer_err(struct http_answer *ans, int rc)
{
    const char *msg = err_last()[0] ? err_last() : err_name(rc);

    switch (rc) {
    case ERR_NOTFOUND: return http_answer_error(ans, 404, "not_found", NULL, "%s", msg);
    case ERR_INVALID: return http_answer_error(ans, 422, "invalid", NULL, "%s", msg);
    case ERR_AMBIGUOUS: return http_answer_error(ans, 400, "bad_request", NULL, "%s", msg);
    case ERR_TRANSITION: return http_answer_error(ans, 409, "conflict", NULL, "%s", msg);
    case ERR_BUSY: return http_answer_error(ans, 503, "busy", NULL, "%s", msg);
    default: return http_answer_error(ans, 500, "internal", NULL, "%s", msg);
    }
}

/* ---- listening ---- */

/* HOST:PORT or [V6]:PORT into addr (numeric or resolved); *loopback 1 for
 * 127.0.0.0/8, ::1 and localhost. */
static int parse_listen(const char *listen, struct sockaddr_storage *addr, int *loopback)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *h = listen;
    size_t hlen;
    struct addrinfo hints, *res = NULL;
    int rc;

    if (!colon || !colon[1])
        return err_set(ERR_INVALID, "http.listen: expected HOST:PORT, got \"%s\"", listen);
    hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host))
        return err_set(ERR_INVALID, "http.listen: expected HOST:PORT, got \"%s\"", listen);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0)
        return err_set(ERR_INVALID, "http.listen: %s: %s", listen, gai_strerror(rc));
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (addr->ss_family == AF_INET)
        *loopback = (ntohl(((struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127;
    else
        *loopback = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)addr)->sin6_addr);
    return 0;
}

/* The cert and key of http.tls_cert / http.tls_key into s (both or
 * neither); 0 when neither is set. */
static int load_tls(struct http_server *s)
{
    const char *cert = config_str(CFG_HTTP_TLS_CERT), *key = config_str(CFG_HTTP_TLS_KEY);
    strbuf c = STRBUF_INIT, k = STRBUF_INIT;
    int rc = 0;

    if (!cert && !key)
        return 0;
    if (!cert || !key)
        return err_set(ERR_INVALID, "http.tls_cert and http.tls_key go together: set both");
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
        return err_set(ERR_POLICY, "http.tls_cert: this libmicrohttpd has no TLS (GnuTLS)");
    strbuf_init(&c, 1 << 20);
    strbuf_init(&k, 1 << 20);
    if ((rc = fs_read_file(&c, cert, 1 << 20)) != 0 ||
        (rc = fs_read_file(&k, key, 1 << 20)) != 0) {
        err_wrap(rc, "http.tls_cert/http.tls_key");
        goto out;
    }
    s->tls_cert = strbuf_detach(&c, NULL);
    s->tls_key = strbuf_detach(&k, NULL);
out:
    strbuf_release(&c);
    strbuf_release(&k);
    return rc;
}

/* ---- answering ---- */

static void add_headers(struct MHD_Response *resp, const struct http_answer *ans)
{
    const char *cors = config_str(CFG_HTTP_CORS_ORIGIN);
    char n[32];

    MHD_add_response_header(resp, "Content-Security-Policy", CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (ans->ctype)
        MHD_add_response_header(resp, "Content-Type", ans->ctype);
    if (cors && *cors) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", cors);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (ans->retry_after > 0) {
        snprintf(n, sizeof(n), "%d", ans->retry_after); /* truncation: ok, a number fits */
        MHD_add_response_header(resp, "Retry-After", n);
    }
    if (ans->www_authenticate)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"goald\"");
    if (ans->link[0])
        MHD_add_response_header(resp, "Link", ans->link);
    if (ans->allow[0])
        MHD_add_response_header(resp, "Allow", ans->allow);
}

static enum MHD_Result send_answer(struct MHD_Connection *conn, struct http_answer *ans)
{
    struct MHD_Response *resp = ans->stream;
    enum MHD_Result ret;

    if (!resp) {
        resp = MHD_create_response_from_buffer(ans->len, ans->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(ans->body);
            return MHD_NO;
        }
        ans->body = NULL;
    }
    add_headers(resp, ans);
    ret = MHD_queue_response(conn, ans->status ? ans->status : 500, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A CORS preflight, when http.cors_origin is set: what the API allows. */
static int preflight(struct http_req *r, struct http_answer *ans)
{
    const char *cors = config_str(CFG_HTTP_CORS_ORIGIN);

    if (strcmp(r->method, "OPTIONS") != 0 || !cors || !*cors)
        return 0;
    ans->status = 204;
    ans->body = xstrdup("");
    ans->len = 0;
    ans->stream = MHD_create_response_from_buffer(0, ans->body, MHD_RESPMEM_MUST_FREE);
    ans->body = NULL;
    xcheck(ans->stream);
    MHD_add_response_header(ans->stream, "Access-Control-Allow-Methods", "GET, POST");
    MHD_add_response_header(ans->stream, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, Last-Event-ID");
    MHD_add_response_header(ans->stream, "Access-Control-Max-Age", "600");
    return 1;
}

/* The /v1 part: a store from the pool, the token, then the route. */
static void answer_v1(struct http_req *r, struct http_answer *ans)
{
    if (http_pool_take(r->srv, &r->st) != 0) {
        http_answer_error(ans, 503, "unavailable", NULL, "%s", err_last());
        return;
    }
    if (http_webhook_is(r->url)) { /* a forge's: its signature is checked instead */
        http_route(r, ans);
        return;
    }
    if (http_auth_check(r, ans))
        return;
    http_guard_proven(r->conn);
    http_route(r, ans);
}

/* Every request once gathered: refusals first (too large, traversal),
 * then the static pages, then /v1. */
static void answer(struct http_req *r, struct http_answer *ans)
{
    if (r->too_big) {
        http_answer_error(ans, 413, "too_large", NULL, "request body larger than %lld KiB "
                          "(http.max_body_kb)", (long long)config_int(CFG_HTTP_MAX_BODY_KB));
        return;
    }
    /* the path as libmicrohttpd decoded it: %2e%2e is ".." here */
    if (strstr(r->url, "..") || strchr(r->url, '\\')) {
        http_answer_error(ans, 400, "bad_request", NULL, "path traversal refused: %s", r->url);
        return;
    }
    if (preflight(r, ans))
        return;
    if ((!strcmp(r->url, "/") || !strncmp(r->url, "/static/", 8)) &&
        strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
        /* truncation: ok, a constant that fits */
        snprintf(ans->allow, sizeof(ans->allow), "GET, HEAD");
        http_answer_error(ans, 405, "method_not_allowed", NULL, "%s is not allowed on %s",
                          r->method, r->url);
        return;
    }
    if (http_static(r->url, ans))
        return;
    if (strncmp(r->url, "/v1/", 4) != 0) {
        http_answer_error(ans, 404, "not_found", NULL, "no such route: %s %s", r->method,
                          r->url);
        return;
    }
    answer_v1(r, ans);
}

static size_t body_cap(void)
{
    return (size_t)config_int(CFG_HTTP_MAX_BODY_KB) * 1024;
}

/* The first call of a request: its context, and a body announced larger
 * than the cap refused before it is read. */
static enum MHD_Result request_begin(struct http_server *s, struct MHD_Connection *conn,
                                     const char *url, const char *method, void **con_cls)
{
    struct http_req *r = xcalloc(1, sizeof(*r));
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");

    r->srv = s;
    r->conn = conn;
    r->url = url;
    r->method = method;
    strbuf_init(&r->body, body_cap());
    *con_cls = r;
    if (cl && strtoull(cl, NULL, 10) > body_cap()) {
        struct http_answer ans = {0};
        r->too_big = 1;
        r->answered = 1;
        http_guard_answering(conn);
        answer(r, &ans);
        return send_answer(conn, &ans);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http_req *r = *con_cls;
    struct http_answer ans = {0};

    (void)version;
    if (!r)
        return request_begin(cls, conn, url, method, con_cls);
    if (*upload_data_size) {
        if (!r->too_big && strbuf_add(&r->body, upload_data, *upload_data_size) != 0)
            r->too_big = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->answered)
        return MHD_YES;
    r->answered = 1;
    http_guard_answering(conn);
    err_clear();
    answer(r, &ans);
    return send_answer(conn, &ans);
}

/* A request's end: its store goes back to the pool (the answer was made
 * before the answer was sent: whatever became of the connection, the
 * store is as the route left it). */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_req *r = *con_cls;

    (void)cls;
    (void)toe;
    http_guard_waiting(conn); /* the next request on it has its deadline */
    if (!r)
        return;
    http_pool_give(r->srv, r->st, 1);
    strbuf_release(&r->body);
    free(r);
    *con_cls = NULL;
}

/* ---- start and stop ---- */

/* Refuse plain http away from loopback unless http.insecure_listen. */
static int check_exposure(const char *listen, int loopback, int tls)
{
    if (loopback || tls || config_bool(CFG_HTTP_INSECURE_LISTEN))
        return 0;
    return err_set(ERR_POLICY,
                   "http.listen: %s is not a loopback address: set http.tls_cert and "
                   "http.tls_key, or http.insecure_listen: true (tokens would cross the "
                   "network in clear)",
                   listen);
}

static void set_url(struct http_server *s, const struct sockaddr_storage *addr)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET6_ADDRSTRLEN] = "";
    int v6 = addr->ss_family == AF_INET6;

    if (v6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)addr)->sin6_addr, host, sizeof(host));
    else
        inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, host, sizeof(host));
    /* truncation: ok, an address and a port fit 300 bytes */
    snprintf(s->url, sizeof(s->url), "%s://%s%s%s:%u", s->tls_cert ? "https" : "http",
             v6 ? "[" : "", host, v6 ? "]" : "", di ? (unsigned)di->port : 0u);
}

/* Decode %XX in a path or query, except that a path holding %00 stays
 * as it came: decoded, the NUL would end the C string early and
 * "/static/app.js%00.db" would pass for "/static/app.js" (exact-name
 * lookups see the name whole, or not at all). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *uri)
{
    (void)cls;
    (void)c;
    if (strstr(uri, "%00"))
        return strlen(uri);
    return MHD_http_unescape(uri);
}

/* What libmicrohttpd said while this thread started a server (its first
 * complaint: the reason a start failed); its threads' later messages go to
 * stderr as its own logger would print them. */
static _Thread_local int starting;
static _Thread_local char start_err[256];

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!starting) {
        vfprintf(stderr, fmt, ap);
        return;
    }
    if (!start_err[0]) {
        size_t n;
        vsnprintf(start_err, sizeof(start_err), fmt, ap);
        n = strlen(start_err);
        while (n && (start_err[n - 1] == '\n' || start_err[n - 1] == '.'))
            start_err[--n] = '\0';
    }
}

/* Why the server at listen (addr) did not start, in the error slot: a
 * port in use is named; a certificate is blamed only when one is set. */
static int start_failed(const struct http_server *s, const char *listen,
                        const struct sockaddr_storage *addr)
{
    unsigned port =
        ntohs(addr->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)addr)->sin6_port
                                          : ((const struct sockaddr_in *)addr)->sin_port);

    if (strstr(start_err, "in use"))
        return err_set(ERR_IO,
                       "http: cannot listen on %s: port %u is in use (another goald "
                       "serve or daemon, or another program: ss -ltnp 'sport = :%u')",
                       listen, port, port);
    if (s->tls_cert)
        return err_set(ERR_IO,
                       "http: cannot listen on %s: %s (a bad http.tls_cert or "
                       "http.tls_key?)",
                       listen, start_err[0] ? start_err : "libmicrohttpd did not start");
    return err_set(ERR_IO, "http: cannot listen on %s: %s", listen,
                   start_err[0] ? start_err : "libmicrohttpd did not start");
}

static struct MHD_Daemon *start_mhd(struct http_server *s, struct sockaddr_storage *addr)
{
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem opts[13];
    struct MHD_Daemon *d;
    sigset_t all, old;
    int n = 0;

    if (addr->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* first: libmicrohttpd logs through the logger set when it reads it */
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, addr};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed,
                                        NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                        (intptr_t)config_int(CFG_HTTP_MAX_CONNECTIONS), NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 60, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http_guard_notify, s};
    if (s->tls_cert) {
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    /* its threads start with every signal blocked: signals stay with the
     * caller's thread (the daemon's handlers, serve's sigwait) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    starting = 1;
    start_err[0] = '\0';
    d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
                         MHD_OPTION_END);
    starting = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return d;
}

int http_server_start(http_server **out, const struct http_opts *o)
{
    const char *listen = o->listen ? o->listen : config_str(CFG_HTTP_LISTEN);
    struct http_server *s = xcalloc(1, sizeof(*s));
    struct sockaddr_storage addr;
    int loopback = 0, rc;

    if (!listen)
        listen = HTTP_DEFAULT_LISTEN;
    s->wake = o->wake;
    http_pool_init(s);
    http_guard_init(s);
    if ((rc = path_fmt(s->db_path, sizeof(s->db_path), "%s", o->db_path)) != 0 ||
        (rc = parse_listen(listen, &addr, &loopback)) != 0 || (rc = load_tls(s)) != 0 ||
        (rc = check_exposure(listen, loopback, s->tls_cert != NULL)) != 0 ||
        (rc = http_guard_start(s)) != 0)
        goto out;
    if (!(s->mhd = start_mhd(s, &addr))) {
        rc = start_failed(s, listen, &addr);
        goto out;
    }
    set_url(s, &addr);
    *out = s;
    s = NULL;
out:
    http_server_stop(s);
    return rc;
}

const char *http_server_url(const http_server *s)
{
    return s->url;
}

void http_server_stop(http_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    http_guard_stop(s);
    if (s->mhd)
        MHD_stop_daemon(s->mhd);
    http_guard_release(s);
    http_pool_close(s);
    free(s->tls_cert);
    free(s->tls_key);
    free(s);
}
