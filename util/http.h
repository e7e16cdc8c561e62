/*
 * http.h - the one HTTP client policy of goald (libcurl), used by the model
 * providers (llm/http.c) and the forge and webhook calls (vcs/forge.c);
 * each caller keeps its own protocol (headers, statuses, retries).
 *
 * The policy: http and https only; redirects never followed (a token is
 * never carried elsewhere); libcurl's TLS verification and proxy settings
 * (the environment's *_proxy) left at their defaults; the User-Agent
 * goald/VERSION; any content encoding libcurl can decode; "Expect:" off;
 * a connect and a total timeout; the response body capped (a bigger one
 * fails, never cut); the last response's headers kept (a 1xx's or a
 * redirect's dropped) with the server's wait read from them (util/retry).
 * libcurl is initialised at the first request, once per process.
 */
#ifndef GOALD_UTIL_HTTP_H
#define GOALD_UTIL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

/* A kept connection (one libcurl easy handle: its connection cache is
 * reused by the next request).  Free with http_conn_free() (accepts NULL). */
typedef struct http_conn http_conn;

int http_conn_open(http_conn **out);
void http_conn_free(http_conn *c);

struct http_request {
    const char *method;          /* "GET", "POST", ... */
    const char *url;
    const char *shown;           /* how messages name the URL; NULL: url */
    const char *const *headers;  /* "Name: value" lines, NULL-terminated; may be NULL */
    const char *body;            /* NULL: none */
    int64_t connect_timeout_ms;  /* 0: libcurl's default */
    int64_t timeout_ms;          /* the whole request; 0: none */
    size_t max_body;             /* the response body's cap in bytes */
    int drop_body;               /* 1: the body is not wanted (not kept, not capped) */
};

#define HTTP_MAX_HEADERS 64

/* Why no answer came (HTTP_OK when one did, whatever its status). */
enum http_fail {
    HTTP_OK,
    HTTP_FAIL_TIMEOUT, /* connect or total timeout */
    HTTP_FAIL_URL,     /* a malformed URL or a scheme other than http(s) */
    HTTP_FAIL_TOOBIG,  /* the body passed max_body */
    HTTP_FAIL_NET,     /* refused, reset, DNS, TLS, an empty reply, ... */
};

struct http_response {
    long status;             /* 0 when no answer came */
    strbuf body;             /* capped at max_body */
    size_t nheaders;         /* the last response's headers, names as sent */
    char *name[HTTP_MAX_HEADERS], *value[HTTP_MAX_HEADERS];
    int64_t retry_after_ms;  /* the server's wait (util/retry.h), -1: none */
    enum http_fail fail;
};

/* Send rq on conn (NULL: a handle of its own for this request) and fill
 * *res (initialised here; release it with http_response_release(), also
 * after an error).  0 when an answer arrived, whatever its status; else
 * ERR_TIMEOUT (timeout) or ERR_FAIL (any other transport failure, res->fail
 * saying which), or ERR_NOMEM (no handle), with the error slot set to
 * "METHOD SHOWN: libcurl's reason" (or "... response body larger than N
 * bytes"). */
int http_perform(struct http_response *res, http_conn *conn, const struct http_request *rq);

void http_response_release(struct http_response *res);

/* The value of the last response's header name (case-insensitive), or NULL;
 * valid until the response is released. */
const char *http_response_header(const struct http_response *res, const char *name);

/* Append s percent-encoded (a URL path segment or query value) to out. */
int http_escape(strbuf *out, const char *s);

#endif
