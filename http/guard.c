/*
 * guard.c - what keeps slow or unauthenticated clients from taking every
 * connection of a thread-per-connection server.
 *
 * - A deadline: a request, its headers and body, must arrive whole within
 *   http.request_timeout_s of the connection's start (or of the previous
 *   answer on it).  libmicrohttpd's own timeout only counts idle time, so a
 *   client sending a byte now and then would hold its thread for ever; a
 *   thread here looks every GUARD_TICK_MS and shuts down (shutdown(2)) the
 *   socket of a connection past its deadline, which ends its thread.  No
 *   deadline runs while a request is answered (an event stream lasts).
 * - Caps on connections that have not shown a valid token: per client
 *   address (http.unauth_per_ip) and in total (http.unauth_connections, at
 *   most half of http.max_connections, so valid clients always find
 *   room).  A new connection is let in; when it puts its address or the
 *   total over the cap, the oldest such connection still waiting for its
 *   request is closed (a client with a token has its request in at once
 *   and is no longer counted).
 * - Event streams per token (http.streams_per_token).
 *
 * Every struct http_conn lives from libmicrohttpd's STARTED notification
 * to its CLOSED one, which comes before the socket is closed: a socket is
 * shut down only under guard_mu while its struct is listed, so never one
 * reused by another connection.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "http/internal.h"
#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define GUARD_TICK_MS 250

struct http_conn {
    struct http_conn *prev, *next;
    struct http_server *srv;
    int fd;
    unsigned char addr[16]; /* the client's address (IPv4 in the first 4 bytes) */
    int64_t opened;         /* mono ms */
    int64_t deadline;       /* mono ms by which its request must have arrived; 0 while answered */
    int proven;             /* a valid token came on it */
    int cut;                /* shut down here: no longer counted */
};

struct http_stream_count {
    char token_id[ID_SIZE]; /* "" for a free slot */
    int n;
};

static int64_t request_deadline(void)
{
    return time_mono_ms() + config_int(CFG_HTTP_REQUEST_TIMEOUT_S) * 1000;
}

static void conn_addr(struct http_conn *c, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    if (sa && sa->sa_family == AF_INET)
        memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    else if (sa && sa->sa_family == AF_INET6)
        memcpy(c->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static void cut(struct http_conn *c, const char *why)
{
    c->cut = 1;
    if (shutdown(c->fd, SHUT_RDWR) != 0)
        log_msg(LOG_DEBUG, "http: shutdown: %s", strerror(errno));
    log_msg(LOG_DEBUG, "http: connection closed: %s", why);
}

/* The oldest connection without a valid token that waits for its request
 * (from addr, or from anywhere when addr is NULL), and how many there are
 * without a valid token. */
static struct http_conn *oldest_unproven(struct http_server *s, const unsigned char *addr,
                                         int *count)
{
    struct http_conn *old = NULL;

    *count = 0;
    for (struct http_conn *c = s->conns; c; c = c->next) {
        if (c->proven || c->cut || (addr && memcmp(c->addr, addr, sizeof(c->addr)) != 0))
            continue;
        ++*count;
        if (c->deadline && (!old || c->opened < old->opened))
            old = c;
    }
    return old;
}

/* Hold the caps after c came in (guard_mu held). */
static void enforce_caps(struct http_server *s, struct http_conn *c)
{
    int64_t per_ip = config_int(CFG_HTTP_UNAUTH_PER_IP);
    int64_t total = config_int(CFG_HTTP_UNAUTH_CONNECTIONS);
    int64_t half = config_int(CFG_HTTP_MAX_CONNECTIONS) / 2;
    struct http_conn *old;
    int n;

    if (total > half)
        total = half > 0 ? half : 1;
    if ((old = oldest_unproven(s, c->addr, &n)) && n > per_ip)
        cut(old, "http.unauth_per_ip");
    if ((old = oldest_unproven(s, NULL, &n)) && n > total)
        cut(old, "http.unauth_connections");
}

void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    struct http_server *s = cls;
    struct http_conn *c = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = xcalloc(1, sizeof(*c));
        c->srv = s;
        c->fd = ci ? ci->connect_fd : -1;
        conn_addr(c, conn);
        c->opened = time_mono_ms();
        c->deadline = request_deadline();
        pthread_mutex_lock(&s->guard_mu);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        enforce_caps(s, c);
        pthread_mutex_unlock(&s->guard_mu);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&s->guard_mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&s->guard_mu);
    free(c);
    *socket_context = NULL;
}

/* The struct of conn, or NULL (a connection the guard did not see). */
static struct http_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

static void set_deadline(struct MHD_Connection *conn, int on)
{
    struct http_conn *c = conn_of(conn);

    if (!c)
        return;
    pthread_mutex_lock(&c->srv->guard_mu);
    c->deadline = on ? request_deadline() : 0;
    pthread_mutex_unlock(&c->srv->guard_mu);
}

void http_guard_answering(struct MHD_Connection *conn)
{
    set_deadline(conn, 0);
}

void http_guard_waiting(struct MHD_Connection *conn)
{
    set_deadline(conn, 1);
}

void http_guard_proven(struct MHD_Connection *conn)
{
    struct http_conn *c = conn_of(conn);

    if (!c)
        return;
    pthread_mutex_lock(&c->srv->guard_mu);
    c->proven = 1;
    pthread_mutex_unlock(&c->srv->guard_mu);
}

/* ---- event streams per token ---- */

int http_guard_stream_open(struct http_server *s, const char *token_id)
{
    struct http_stream_count *free_slot = NULL, *mine = NULL;
    int rc = 0;

    pthread_mutex_lock(&s->guard_mu);
    for (int i = 0; i < s->guard_nstreams && !mine; i++)
        if (!strcmp(s->streams[i].token_id, token_id))
            mine = &s->streams[i];
        else if (!s->streams[i].token_id[0] && !free_slot)
            free_slot = &s->streams[i];
    if (!mine && (mine = free_slot) != NULL)
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(mine->token_id, sizeof(mine->token_id), "%s", token_id);
    if (!mine || mine->n >= config_int(CFG_HTTP_STREAMS_PER_TOKEN))
        rc = -1;
    else
        mine->n++;
    pthread_mutex_unlock(&s->guard_mu);
    return rc;
}

void http_guard_stream_close(struct http_server *s, const char *token_id)
{
    pthread_mutex_lock(&s->guard_mu);
    for (int i = 0; i < s->guard_nstreams; i++)
        if (!strcmp(s->streams[i].token_id, token_id)) {
            if (--s->streams[i].n <= 0)
                memset(&s->streams[i], 0, sizeof(s->streams[i]));
            break;
        }
    pthread_mutex_unlock(&s->guard_mu);
}

/* ---- the deadline's thread ---- */

static void *guard_main(void *arg)
{
    struct http_server *s = arg;
    struct timespec until;

    pthread_mutex_lock(&s->guard_mu);
    while (!s->guard_quit) {
        int64_t now = time_mono_ms();
        for (struct http_conn *c = s->conns; c; c = c->next)
            if (c->deadline && now > c->deadline && !c->cut)
                cut(c, "http.request_timeout_s");
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += GUARD_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->guard_cv, &s->guard_mu, &until);
    }
    pthread_mutex_unlock(&s->guard_mu);
    return NULL;
}

void http_guard_init(struct http_server *s)
{
    pthread_condattr_t ca;

    pthread_mutex_init(&s->guard_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->guard_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* one stream per connection at most: a slot each */
    s->guard_nstreams = (int)config_int(CFG_HTTP_MAX_CONNECTIONS);
    s->streams = xcalloc((size_t)s->guard_nstreams, sizeof(*s->streams));
}

int http_guard_start(struct http_server *s)
{
    int rc = pthread_create(&s->guard_thread, NULL, guard_main, s);

    if (rc != 0)
        return err_set(ERR_IO, "http: cannot start the request deadline's thread: %s",
                       strerror(rc));
    s->guard_running = 1;
    return 0;
}

void http_guard_stop(struct http_server *s)
{
    if (!s->guard_running)
        return;
    pthread_mutex_lock(&s->guard_mu);
    s->guard_quit = 1;
    pthread_cond_signal(&s->guard_cv);
    pthread_mutex_unlock(&s->guard_mu);
    pthread_join(s->guard_thread, NULL);
    s->guard_running = 0;
}

void http_guard_release(struct http_server *s)
{
    pthread_cond_destroy(&s->guard_cv);
    pthread_mutex_destroy(&s->guard_mu);
    free(s->streams);
    s->streams = NULL;
}
