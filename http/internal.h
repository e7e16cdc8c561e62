/*
 * internal.h - what the files of http/ share (not for other folders).
 *
 * A request is answered in three steps: server.c gathers it (headers,
 * body up to http.max_body_kb), auth.c checks its token, scope and rate,
 * routes.c (or sse.c, static.c) fills a struct http_answer, and server.c
 * sends it with the security headers.  Error bodies are
 * {"error": {"class", "message", "field"?}}.
 */
#ifndef GOALD_HTTP_INTERNAL_H
#define GOALD_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "http/http.h"
#include "store/token.h"
#include "util/hash.h"
#include "util/strbuf.h"

struct cJSON;

enum http_scope { SCOPE_NONE = 0, SCOPE_READ = 1, SCOPE_SUBMIT = 2, SCOPE_RESOLVE = 4,
                  SCOPE_ADMIN = 8 };

#define HTTP_POOL_IDLE 8 /* stores kept open between requests (pool.c) */

struct http_conn;
struct http_stream_count;

struct http_server {
    struct MHD_Daemon *mhd;
    char db_path[4096];
    void (*wake)(store *st);
    atomic_int stopping;   /* event streams end when set */
    char url[300];
    char *tls_cert, *tls_key; /* PEM text, NULL without TLS */
    pthread_mutex_t pool_mu;  /* pool.c: the idle stores */
    store *idle[HTTP_POOL_IDLE];
    int nidle;
    /* guard.c: the open connections, the event streams per token, the
     * thread that closes a connection past its deadline */
    pthread_mutex_t guard_mu;
    pthread_cond_t guard_cv;
    pthread_t guard_thread;
    int guard_running, guard_quit;
    struct http_conn *conns;
    struct http_stream_count *streams; /* guard_nstreams slots */
    int guard_nstreams;
};

/* One request, from its first header to its answer. */
struct http_req {
    struct http_server *srv;
    struct MHD_Connection *conn;
    const char *method, *url;
    strbuf body;
    int too_big;           /* the body passed the cap: 413 */
    int answered;          /* an early answer (413) was queued */
    struct store_token tok; /* the caller (after auth) */
    char tok_hash[HASH_HEX_SIZE]; /* its SHA-256 (event streams look it up again) */
    int scopes;            /* its scopes (enum http_scope bits) */
    store *st;             /* this request's, from the pool (pool.c); on_completed
                              gives it back */
};

/* What to send back: a JSON or text body, or a stream (SSE). */
struct http_answer {
    unsigned status;
    char *body; /* malloc'd, freed by the sender */
    size_t len;
    const char *ctype;
    int retry_after;       /* seconds, 429 */
    int www_authenticate;  /* 401 */
    char link[512];        /* a Link header (next page), "" when none */
    char allow[64];        /* an Allow header (405), "" when none */
    struct MHD_Response *stream; /* instead of body: sent as is */
};

/* Fill ans with a JSON body (takes v and deletes it). */
void http_answer_json(struct http_answer *ans, unsigned status, struct cJSON *v);
/* Fill ans with an error; field may be NULL.  Returns 0. */
int http_answer_error(struct http_answer *ans, unsigned status, const char *cls,
                      const char *field, const char *fmt, ...) GOALD_PRINTF(5, 6);
/* The answer for an error code of a lower layer (its message from the
 * slot): ERR_NOTFOUND 404, ERR_INVALID 422, ERR_AMBIGUOUS 400,
 * ERR_TRANSITION 409, ERR_BUSY 503, else 500. */
int http_answer_err(struct http_answer *ans, int rc);

/* auth.c: the token of the Authorization header into r->tok and r->scopes;
 * 0, or an answer is filled (400 a token in the query string, 401, 429)
 * and 1 returned. */
int http_auth_check(struct http_req *r, struct http_answer *ans);
/* Parse a comma list of scopes into bits; -1 (ERR_INVALID set) on an
 * unknown one. */
int http_scopes_parse(const char *list);
/* Has the caller scope need (admin has every scope)? */
int http_scope_has(const struct http_req *r, int need);
const char *http_scope_name(int scope);

/* routes.c: answer a /v1 request (after auth). */
void http_route(struct http_req *r, struct http_answer *ans);

/* routes_status.c: GET /v1/overview (routed, scope checked, by
 * http_route). */
void http_get_overview(struct http_req *r, char seg[][256], struct http_answer *ans);

/* An event naming the caller's token (its id and name, never the
 * secret): type http.write, with what was asked (method, path) and
 * goal_id (may be NULL).  Failures are logged, not returned: the write
 * itself has happened. */
void http_event_write(struct http_req *r, const char *goal_id, const char *what);

/* pool.c: the server's stores.  take: an idle one, else a new
 * store_open_existing() (0, or its error); give: back to the pool when
 * usable and the pool has room, else closed (st may be NULL); close: every
 * idle one, at the server's stop (after its threads ended). */
void http_pool_init(struct http_server *s);
int http_pool_take(struct http_server *s, store **out);
void http_pool_give(struct http_server *s, store *st, int usable);
void http_pool_close(struct http_server *s);

/* guard.c: what keeps slow or unauthenticated clients from taking every
 * connection.  init (before the server starts) and release (after its
 * threads ended): its lock and tables; start/stop: its thread (stop
 * before MHD_stop_daemon); notify: MHD_OPTION_NOTIFY_CONNECTION (cls: the server); answering: the
 * request on conn arrived whole (its deadline is off while it is
 * answered); waiting: it was answered (the next request's deadline
 * starts); proven: a valid token came on conn.  stream_open: 0, or -1
 * when token_id has http.streams_per_token streams open; stream_close:
 * one of them ended. */
void http_guard_init(struct http_server *s);
int http_guard_start(struct http_server *s);
void http_guard_stop(struct http_server *s);
void http_guard_release(struct http_server *s);
void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
void http_guard_answering(struct MHD_Connection *conn);
void http_guard_waiting(struct MHD_Connection *conn);
void http_guard_proven(struct MHD_Connection *conn);
int http_guard_stream_open(struct http_server *s, const char *token_id);
void http_guard_stream_close(struct http_server *s, const char *token_id);

/* sse.c: GET /v1/events as Server-Sent Events (routed, method and scope
 * checked, by http_route). */
void http_sse_events(struct http_req *r, struct http_answer *ans);

/* static.c: /v1/openapi.json (routed by http_route), and the dashboard's
 * pages (/ and /static/NAME) that need no token. */
void http_openapi(struct http_answer *ans);
/* 1 when url is a static page (answered into ans without a token). */
int http_static(const char *url, struct http_answer *ans);

#endif
