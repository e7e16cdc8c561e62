/*
 * sse.c - GET /v1/events?goal=&since= as Server-Sent Events.
 *
 * Each event is "id: SEQ" and "data: " the object of `goald events
 * --json` (lifecycle/views.h).  The stream polls the events table for ids
 * above the last one sent: event ids only grow, and SQLite has one writer
 * at a time, so an id is committed before any larger one and none is
 * skipped.  A client that reconnects with Last-Event-ID: N gets every
 * event after N, none twice.  A comment line every 15 s keeps proxies
 * from closing an idle stream (and finds a client that left).
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "http/internal.h"
#include "lifecycle/views.h"
#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define SSE_POLL_MS 200
#define SSE_KEEPALIVE_MS 15000
#define SSE_PAGE 200

struct sse {
    struct http_server *srv;
    char goal[ID_SIZE]; /* "" for every goal */
    int64_t last;       /* the last event id sent */
    strbuf out;
    size_t off;         /* of out, already sent */
    int64_t sent_at;    /* mono ms of the last write */
};

static int add_event(const struct store_event *ev, void *ctx)
{
    struct sse *s = ctx;
    cJSON *o = view_event(ev);
    char *text = xcheck(cJSON_PrintUnformatted(o));
    int rc = strbuf_addf(&s->out, "id: %lld\ndata: %s\n\n", (long long)ev->id, text);

    cJSON_free(text);
    cJSON_Delete(o);
    if (rc == 0)
        s->last = ev->id;
    return rc;
}

/* Fill s->out with what is next: new events, else a keepalive when due,
 * else nothing yet.  0, or an error of the store. */
static int fill(struct sse *s)
{
    store *st = NULL;
    int rc = http_pool_take(s->srv, &st);

    if (rc == 0) {
        rc = store_event_each(st, s->goal[0] ? s->goal : NULL, s->last, SSE_PAGE, add_event, s);
        http_pool_give(s->srv, st, rc == 0 || rc == ERR_TOOBIG);
    }

    if (rc == ERR_TOOBIG && s->out.len > 0)
        rc = 0; /* the page did not fit: what did is sent, the rest comes next */
    if (rc == 0 && s->out.len == 0 && time_mono_ms() - s->sent_at >= SSE_KEEPALIVE_MS)
        rc = strbuf_adds(&s->out, ": keepalive\n\n");
    return rc;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sse *s = cls;

    (void)pos;
    while (s->off == s->out.len) {
        strbuf_reset(&s->out);
        s->off = 0;
        if (atomic_load(&s->srv->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (fill(s) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (s->out.len == 0)
            time_sleep_ms(SSE_POLL_MS);
    }
    if (max > s->out.len - s->off)
        max = s->out.len - s->off;
    memcpy(buf, s->out.buf + s->off, max);
    s->off += max;
    s->sent_at = time_mono_ms();
    return (ssize_t)max;
}

static void sse_free(void *cls)
{
    struct sse *s = cls;

    strbuf_release(&s->out);
    free(s);
}

/* Where the stream starts: after Last-Event-ID, else after the last event
 * before ?since=, else at the first event.  0, or the answer. */
static int start_at(struct http_req *r, int64_t *after, struct http_answer *ans)
{
    const char *last = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID");
    const char *since = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "since");
    int64_t ms;
    char *end;
    int rc;

    *after = 0;
    if (last && *last) {
        long long n = strtoll(last, &end, 10);
        if (*end || n < 0)
            return !http_answer_error(ans, 400, "bad_request", "Last-Event-ID",
                                      "Last-Event-ID: expected an event id, got \"%s\"", last);
        *after = n;
        return 0;
    }
    if (!since)
        return 0;
    if (view_parse_since(since, time_now_ms(), &ms) != 0)
        return !http_answer_error(ans, 422, "invalid", "since",
                                  "since: expected an RFC 3339 date-time or a duration like "
                                  "10m (s, m, h, d), got \"%s\"",
                                  since);
    if ((rc = store_event_id_before(r->st, ms, after)) != 0)
        return !http_answer_err(ans, rc);
    return 0;
}

void http_sse_events(struct http_req *r, struct http_answer *ans)
{
    const char *goal = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "goal");
    struct sse *s;
    int64_t after;
    int rc;

    if (start_at(r, &after, ans))
        return;
    s = xcalloc(1, sizeof(*s));
    if (goal && (rc = store_resolve_id(r->st, "goals", goal, s->goal)) != 0) {
        free(s);
        http_answer_err(ans, rc);
        return;
    }
    s->srv = r->srv;
    s->last = after;
    strbuf_init(&s->out, 16 << 20);
    s->sent_at = time_mono_ms();
    /* a first comment line: the client sees the stream open at once */
    if (strbuf_adds(&s->out, ": goald events\nretry: 2000\n\n") != 0)
        abort(); /* 30 bytes into an empty 16 MiB buffer: cannot fail */
    ans->status = 200;
    ans->ctype = "text/event-stream";
    ans->stream = xcheck(MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                           sse_read, s, sse_free));
}
