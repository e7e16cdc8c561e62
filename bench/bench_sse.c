/*
 * bench_sse - the event stream's fan-out: N clients at once on
 * GET /v1/events of a running `goald serve`, for SECONDS.
 *
 *   bench_sse PORT TOKEN DB CLIENTS SECONDS
 *
 * Each client is a plain socket (HTTP/1.1, the chunked body decoded here),
 * all in one poll() loop, resuming after the last event in DB at the start
 * (Last-Event-ID), so that they see only what the daemon emits while they
 * listen (plus what it emitted while they were connecting).  After SECONDS
 * it waits up to 5 s more for every client to reach the largest id any
 * client saw, then compares each client's ids with the events table of DB
 * up to that id: lost (in the table, not received) and repeated (received
 * again or out of order).  For every event that the table holds, that
 * every client received and that was written after the last client
 * connected: the spread from the first client's receipt to the last's
 * (the fan-out latency), and from the event's time (ts) to the last
 * receipt.  Prints key=value lines (bench/bench_http.sh reads them); exit
 * 0 when the run completed (whatever it measured), 1 on a usage or setup
 * error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/event.h"
#include "store/store.h"
#include "util/xalloc.h"

enum cstate { C_HEAD, C_BODY, C_DONE };
enum chunk { CH_SIZE, CH_DATA, CH_CRLF };

struct recv {
    int64_t id;
    int64_t us; /* wall clock, µs */
};

struct client {
    int fd;
    enum cstate state;
    int ok;      /* answered 200 */
    int chunked; /* Transfer-Encoding: chunked */
    char head[8192];
    size_t headlen;
    enum chunk ch;
    size_t chunk_left;
    char line[64]; /* the current SSE line's start: only "id: N" matters */
    size_t linelen;
    struct recv *got;
    size_t ngot, capgot;
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One byte of the event stream itself (chunking removed). */
static void sse_byte(struct client *c, char b, int64_t us)
{
    if (b != '\n') {
        if (c->linelen < sizeof(c->line) - 1)
            c->line[c->linelen++] = b;
        return;
    }
    c->line[c->linelen] = '\0';
    c->linelen = 0;
    if (strncmp(c->line, "id: ", 4) != 0)
        return;
    if (c->ngot == c->capgot) {
        c->capgot = c->capgot ? 2 * c->capgot : 256;
        c->got = xrealloc(c->got, c->capgot * sizeof(*c->got));
    }
    c->got[c->ngot].id = strtoll(c->line + 4, NULL, 10);
    c->got[c->ngot++].us = us;
}

/* One byte of the body: the chunked framing (RFC 9112 7.1) decoded. */
static void body_byte(struct client *c, char b, int64_t us)
{
    if (!c->chunked) {
        sse_byte(c, b, us);
        return;
    }
    switch (c->ch) {
    case CH_SIZE:
        if (b == '\n') {
            c->ch = c->chunk_left ? CH_DATA : CH_CRLF;
            if (!c->chunk_left)
                c->state = C_DONE; /* the last chunk: the server ended the stream */
        } else if (b >= '0' && b <= '9')
            c->chunk_left = c->chunk_left * 16 + (size_t)(b - '0');
        else if ((b | 0x20) >= 'a' && (b | 0x20) <= 'f')
            c->chunk_left = c->chunk_left * 16 + (size_t)((b | 0x20) - 'a' + 10);
        return;
    case CH_DATA:
        sse_byte(c, b, us);
        if (--c->chunk_left == 0)
            c->ch = CH_CRLF;
        return;
    case CH_CRLF:
        if (b == '\n')
            c->ch = CH_SIZE;
        return;
    }
}

/* The response head once complete: status and framing; the rest of p is
 * body. */
static void head_bytes(struct client *c, const char *p, size_t n, int64_t us)
{
    size_t take = sizeof(c->head) - 1 - c->headlen;
    char *end;

    if (take > n)
        take = n;
    memcpy(c->head + c->headlen, p, take);
    c->headlen += take;
    c->head[c->headlen] = '\0';
    if (!(end = strstr(c->head, "\r\n\r\n"))) {
        if (c->headlen == sizeof(c->head) - 1)
            c->state = C_DONE;
        return;
    }
    c->ok = !strncmp(c->head, "HTTP/1.1 200", 12);
    for (char *h = c->head; h < end; h++)
        if (!strncasecmp(h, "\nTransfer-Encoding: chunked", 27))
            c->chunked = 1;
    c->state = c->ok ? C_BODY : C_DONE;
    /* the body bytes that came with the head */
    for (char *b = end + 4; c->state == C_BODY && b < c->head + c->headlen; b++)
        body_byte(c, *b, us);
}

static int client_open(struct client *c, int port, const char *token, int64_t after)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char req[1024];
    int n;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    n = snprintf(req, sizeof(req),
                 "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                 "Accept: text/event-stream\r\nLast-Event-ID: %lld\r\n\r\n",
                 port, token, (long long)after);
    if (n < 0 || (size_t)n >= sizeof(req) || write(c->fd, req, (size_t)n) != n)
        return -1;
    return fcntl(c->fd, F_SETFL, O_NONBLOCK);
}

static void client_read(struct client *c)
{
    char buf[65536];
    ssize_t n = read(c->fd, buf, sizeof(buf));
    int64_t us = now_us();

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        c->state = C_DONE;
        return;
    }
    if (c->state == C_HEAD) {
        head_bytes(c, buf, (size_t)n, us);
        return;
    }
    for (ssize_t i = 0; i < n && c->state == C_BODY; i++)
        body_byte(c, buf[i], us);
}

/* Poll every open client until the wall clock passes until_us, or (when
 * want_id > 0) every open client has received want_id. */
static void pump(struct client *cl, int n, int64_t until_us, int64_t want_id)
{
    struct pollfd *p = xcalloc((size_t)n, sizeof(*p));

    for (;;) {
        int waiting = 0;
        for (int i = 0; i < n; i++) {
            p[i].fd = cl[i].state == C_DONE ? -1 : cl[i].fd;
            p[i].events = POLLIN;
            if (want_id > 0 && cl[i].state == C_BODY &&
                (cl[i].ngot == 0 || cl[i].got[cl[i].ngot - 1].id < want_id))
                waiting++;
        }
        if (now_us() >= until_us || (want_id > 0 && !waiting))
            break;
        if (poll(p, (nfds_t)n, 50) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++)
            if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                client_read(&cl[i]);
    }
    free(p);
}

struct ref {
    int64_t *id, *ts; /* ts in ms */
    size_t n, cap;
    int64_t upto;
};

static int ref_add(const struct store_event *ev, void *ctx)
{
    struct ref *r = ctx;

    if (ev->id > r->upto)
        return 1;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->id = xrealloc(r->id, r->cap * sizeof(*r->id));
        r->ts = xrealloc(r->ts, r->cap * sizeof(*r->ts));
    }
    r->id[r->n] = ev->id;
    r->ts[r->n++] = ev->ts;
    return 0;
}

static void print_dist(const char *name, int64_t *v, size_t n)
{
    if (n == 0) {
        printf("%s_n=0\n", name);
        return;
    }
    qsort(v, n, sizeof(*v), cmp64);
    printf("%s_n=%zu\n%s_median_ms=%.2f\n%s_p99_ms=%.2f\n%s_max_ms=%.2f\n", name, n, name,
           (double)v[n / 2] / 1000, name, (double)v[(n * 99) / 100] / 1000, name,
           (double)v[n - 1] / 1000);
}

/* Lost and repeated ids of each client against the reference, and the
 * latencies of the events every client got. */
static void compare(struct client *cl, int n, const struct ref *r, int64_t all_connected_us)
{
    int64_t *spread = xcalloc(r->n + 1, sizeof(int64_t)), *delay = xcalloc(r->n + 1, sizeof(int64_t));
    int64_t *first = xcalloc(r->n + 1, sizeof(int64_t)), *last = xcalloc(r->n + 1, sizeof(int64_t));
    size_t *seen = xcalloc(r->n + 1, sizeof(size_t)), nlat = 0;
    long lost = 0, repeated = 0, lossy = 0;
    size_t okc = 0;

    for (int i = 0; i < n; i++) {
        size_t k = 0, mine = 0;
        int64_t prev = 0;
        if (!cl[i].ok)
            continue;
        for (size_t j = 0; j < cl[i].ngot; j++) {
            const struct recv *g = &cl[i].got[j];
            if (g->id <= prev) {
                repeated++;
                continue;
            }
            prev = g->id;
            while (k < r->n && r->id[k] < g->id)
                k++;
            if (k == r->n || r->id[k] != g->id)
                continue; /* beyond the reference's end */
            mine++;
            if (!seen[k]++ || g->us < first[k])
                first[k] = g->us;
            if (g->us > last[k])
                last[k] = g->us;
        }
        okc++;
        lost += (long)(r->n - mine);
        lossy += mine < r->n;
    }
    for (size_t k = 0; k < r->n; k++) {
        if (seen[k] != okc || r->ts[k] * 1000 < all_connected_us)
            continue;
        spread[nlat] = last[k] - first[k];
        delay[nlat++] = last[k] - r->ts[k] * 1000;
    }
    printf("lost=%ld\nrepeated=%ld\nclients_with_loss=%ld\n", lost, repeated, lossy);
    print_dist("fanout", spread, nlat);
    print_dist("ts_to_last", delay, nlat);
    free(spread);
    free(delay);
    free(first);
    free(last);
    free(seen);
}

int main(int argc, char **argv)
{
    struct client *cl = NULL;
    struct ref r = {0};
    store *st = NULL;
    int n, port, seconds, connected = 0, stayed = 0, rc = 1;
    int64_t start = 0, top = 0, all_connected_us;

    if (argc != 6 || (port = atoi(argv[1])) <= 0 || (n = atoi(argv[4])) <= 0 ||
        (seconds = atoi(argv[5])) <= 0) {
        fprintf(stderr, "usage: bench_sse PORT TOKEN DB CLIENTS SECONDS\n");
        return 1;
    }
    if (store_open_existing(&st, argv[3]) != 0 || store_event_id_before(st, INT64_MAX, &start)) {
        fprintf(stderr, "bench_sse: %s: cannot read its events\n", argv[3]);
        goto out;
    }
    cl = xcalloc((size_t)n, sizeof(*cl));
    for (int i = 0; i < n; i++)
        if (client_open(&cl[i], port, argv[2], start) != 0)
            cl[i].state = C_DONE;
    /* every answer's head (or a refusal) within 10 s */
    for (int64_t t = now_us() + 10000000; now_us() < t;) {
        int heads = 0;
        for (int i = 0; i < n; i++)
            heads += cl[i].state == C_HEAD;
        if (!heads)
            break;
        pump(cl, n, now_us() + 50000, 0);
    }
    all_connected_us = now_us();
    for (int i = 0; i < n; i++)
        connected += cl[i].ok;
    pump(cl, n, all_connected_us + (int64_t)seconds * 1000000, 0);
    for (int i = 0; i < n; i++)
        if (cl[i].ok && cl[i].ngot && cl[i].got[cl[i].ngot - 1].id > top)
            top = cl[i].got[cl[i].ngot - 1].id;
    pump(cl, n, now_us() + 5000000, top);
    for (int i = 0; i < n; i++)
        stayed += cl[i].ok && cl[i].state == C_BODY;
    r.upto = top;
    if (store_event_each(st, NULL, start, 0, ref_add, &r) < 0) {
        fprintf(stderr, "bench_sse: %s: cannot read its events\n", argv[3]);
        goto out;
    }
    printf("clients=%d\nconnected=%d\nstayed=%d\nstart_id=%lld\nend_id=%lld\nevents=%zu\n", n,
           connected, stayed, (long long)start, (long long)top, r.n);
    compare(cl, n, &r, all_connected_us);
    rc = 0;
out:
    for (int i = 0; cl && i < n; i++) {
        if (cl[i].fd > 0)
            close(cl[i].fd);
        free(cl[i].got);
    }
    free(cl);
    free(r.id);
    free(r.ts);
    store_close(st);
    return rc;
}
