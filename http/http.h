/*
 * http.h - `goald serve`: the HTTP API (/v1, JSON) on libmicrohttpd.
 *
 * Layer: above lifecycle/ (it calls the same functions the CLI does:
 * intake, cancel, resolve, the report and the views of lifecycle/views.h),
 * below daemon/ and cli/.  docs/http.md describes the API; docs/openapi.json
 * is its description, embedded and served at /v1/openapi.json.
 *
 * Threads: one per connection (libmicrohttpd's thread-per-connection
 * mode); a request takes a store from the server's pool (http/pool.c) for
 * as long as it is answered, so a connection is used by one thread at a
 * time and none is opened per HTTP connection.
 */
#ifndef GOALD_HTTP_HTTP_H
#define GOALD_HTTP_HTTP_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

#define HTTP_DEFAULT_LISTEN "127.0.0.1:7878"

struct http_opts {
    const char *db_path; /* required; must exist (store_open_existing) */
    const char *listen;  /* HOST:PORT or [V6]:PORT; NULL: config http.listen, else
                            HTTP_DEFAULT_LISTEN.  Port 0: any free port */
    /* called after a write (submit, cancel, resolve) with the request's
     * store, to wake the daemons (daemon_wake, which lives above this
     * layer); may be NULL */
    void (*wake)(store *st);
};

typedef struct http_server http_server;

/* Start serving in the background.  Refuses (ERR_POLICY, naming the
 * setting) a non-loopback address without TLS (http.tls_cert and
 * http.tls_key) unless http.insecure_listen is true; ERR_INVALID for a bad
 * address, ERR_IO when it cannot listen.  On success *out is set; stop it
 * with http_server_stop(), which frees it. */
int http_server_start(http_server **out, const struct http_opts *o);

/* The address it listens on, "http://127.0.0.1:7878" or "https://...",
 * with the real port (valid until http_server_stop()). */
const char *http_server_url(const http_server *s);

/* Stop: end the event streams, answer what is in flight, close and free.
 * Accepts NULL. */
void http_server_stop(http_server *s);

/* Tokens (the api_tokens table: only their SHA-256 is stored).  scopes is
 * a comma list of read, submit, resolve, admin (ERR_INVALID naming the
 * wrong one); name may be NULL ("").  secret receives the token, shown
 * once; id its id.  Both write an event (token.created, token.revoked)
 * naming the token's id and name. */
#define HTTP_TOKEN_SIZE 69 /* "gld_" + 64 hex + NUL */
int http_token_create(store *st, const char *scopes, const char *name, char secret[HTTP_TOKEN_SIZE],
                      char id[ID_SIZE]);
/* Revoke the token whose id begins with prefix: ERR_NOTFOUND,
 * ERR_AMBIGUOUS, ERR_TRANSITION (already revoked).  id receives its id. */
int http_token_revoke(store *st, const char *prefix, char id[ID_SIZE]);

#endif
