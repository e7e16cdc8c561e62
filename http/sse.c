/*
 * sse.c - GET /v1/events?goal=&since= as Server-Sent Events.
 *
 * Each event is "id: SEQ" and "data: " the object of `goald events
 * --json` (lifecycle/views.h), every string of its payload redacted
 * (util/redact.h; a payload sent in slices is as stored).  The stream
 * polls the events table for ids above the last one sent: event ids only
 * grow, and SQLite has one writer at a time, so an id is committed before
 * any larger one and none is skipped.  A client that reconnects with
 * Last-Event-ID: N gets every event after N, none twice.  A comment line
 * every 15 s keeps proxies from closing an idle stream (and finds a
 * client that left).
 *
 * Memory is bounded whatever the table holds: a look reads at most
 * SSE_PAGE events and stops once SSE_OUT_SOFT bytes are waiting; a payload
 * over SSE_INLINE_MAX bytes is never loaded whole but read from the store
 * SSE_SLICE bytes at a time, each slice sent before the next is read
 * (whitespace outside its strings dropped, so the data line stays one
 * line).  Every SSE_RECHECK_MS the stream looks its token up again and
 * ends when it was revoked.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/internal.h"
#include "lifecycle/views.h"
#include "store/event.h"
#include "store/goal.h"
#include "util/config.h"
#include "util/err.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define SSE_POLL_MS 200
#define SSE_KEEPALIVE_MS 15000
#define SSE_RECHECK_MS 2000
#define SSE_PAGE 200
#define SSE_INLINE_MAX ((size_t)64 << 10) /* a larger payload is sent in slices */
#define SSE_SLICE ((size_t)64 << 10)
#define SSE_OUT_SOFT ((size_t)256 << 10) /* a look stops adding events past this */
#define SSE_OUT_CAP ((size_t)2 << 20)    /* one small event past the soft cap fits */
#define SSE_STOP 1                       /* add_event: the look is over (not an error) */
#define SSE_END 2                        /* fill: the token was revoked: end the stream */

struct sse {
    struct http_server *srv;
    char goal[ID_SIZE]; /* "" for every goal */
    char tok_id[ID_SIZE], tok_hash[HASH_HEX_SIZE];
    int64_t last; /* the last event id sent whole */
    strbuf out;
    size_t off;         /* of out, already sent */
    int64_t sent_at;    /* mono ms of the last write */
    int64_t checked_at; /* mono ms of the last look at the token */
    /* the large event being sent in slices (big_id 0: none) */
    int64_t big_id, big_off, big_size;
    int in_str, esc; /* where the slices left the JSON text */
    char slice[SSE_SLICE];
};

/* The head of a large event: "id:", then its object up to its payload,
 * which the slices complete. */
static int start_big(struct sse *s, const struct store_event *ev)
{
    struct store_event head = *ev;
    cJSON *o;
    char *text;
    size_t n;
    int rc;

    head.payload = "0";
    o = view_event(&head);
    text = cJSON_PrintUnformatted(o);
    n = strlen(text);
    /* view_event puts the payload last: the text ends in ":0}" */
    rc = strbuf_addf(&s->out, "id: %lld\ndata: %.*s", (long long)ev->id, (int)(n - 2), text);
    cJSON_free(text);
    cJSON_Delete(o);
    if (rc)
        return rc;
    s->big_id = ev->id;
    s->big_off = 0;
    s->big_size = ev->payload_size;
    s->in_str = s->esc = 0;
    return SSE_STOP;
}

/* Every string under v (keys aside) with its secrets redacted: a payload
 * may quote what a tool printed or the model wrote. */
static void redact_tree(cJSON *v)
{
    cJSON *c;

    cJSON_ArrayForEach(c, v)
    {
        char *red;
        if (!cJSON_IsString(c) || !c->valuestring) {
            redact_tree(c);
            continue;
        }
        red = xcheck(redact_str(c->valuestring, NULL));
        /* cJSON allocates with malloc (no hooks are set): its string is
         * swapped for the redacted one, whatever its key */
        free(c->valuestring);
        c->valuestring = red;
    }
}

static int add_event(const struct store_event *ev, void *ctx)
{
    struct sse *s = ctx;
    cJSON *o;
    char *text;
    size_t before = s->out.len;
    int rc;

    if (!ev->payload)
        return s->out.len ? SSE_STOP : start_big(s, ev); /* alone in its looks */
    o = view_event(ev);
    redact_tree(cJSON_GetObjectItem(o, "payload"));
    text = cJSON_PrintUnformatted(o);
    rc = strbuf_addf(&s->out, "id: %lld\ndata: %s\n\n", (long long)ev->id, text);
    cJSON_free(text);
    cJSON_Delete(o);
    if (rc == ERR_TOOBIG && before > 0)
        return SSE_STOP; /* it comes first in the next look */
    if (rc)
        return rc;
    s->last = ev->id;
    return s->out.len >= SSE_OUT_SOFT ? SSE_STOP : 0;
}

/* A slice of the large payload into out: whitespace outside strings is
 * dropped and a raw control byte inside one escaped, so that the data
 * line holds no line break (the store keeps valid JSON: none is there). */
static int add_slice(struct sse *s, const char *p, size_t n)
{
    char esc[8];
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!s->in_str) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
                continue;
            s->in_str = c == '"';
        } else if (s->esc) {
            s->esc = 0;
        } else if (c == '\\') {
            s->esc = 1;
        } else if (c == '"') {
            s->in_str = 0;
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c); /* truncation: ok, six bytes fit */
            rc = strbuf_adds(&s->out, esc);
            continue;
        }
        rc = strbuf_addc(&s->out, (char)c);
    }
    return rc;
}

/* The next slice of the large event; its end closes the event. */
static int next_slice(struct sse *s, store *st)
{
    size_t got = 0;
    int rc = store_event_payload_read(st, s->big_id, s->big_off, s->slice, sizeof(s->slice), &got);

    if (rc)
        return rc;
    if ((rc = add_slice(s, s->slice, got)) != 0)
        return rc;
    s->big_off += (int64_t)got;
    if (got > 0 && s->big_off < s->big_size)
        return 0;
    if ((rc = strbuf_adds(&s->out, "}\n\n")) != 0)
        return rc;
    s->last = s->big_id;
    s->big_id = 0;
    return 0;
}

/* Is the stream's token still live?  0, SSE_END, or an error. */
static int recheck(struct sse *s, store *st)
{
    struct store_token tok;
    int rc;

    if (time_mono_ms() - s->checked_at < SSE_RECHECK_MS)
        return 0;
    rc = store_token_get_by_hash(st, s->tok_hash, &tok);
    if (rc == ERR_NOTFOUND || (rc == 0 && tok.revoked_at != 0))
        return SSE_END;
    s->checked_at = time_mono_ms();
    return rc;
}

/* Fill s->out with what is next: a slice of a large event, new events,
 * else a keepalive when due, else nothing yet.  0, SSE_END, or an error
 * of the store. */
static int fill(struct sse *s)
{
    store *st = NULL;
    int rc = http_pool_take(s->srv, &st);

    if (rc == 0 && (rc = recheck(s, st)) == 0) {
        if (s->big_id)
            rc = next_slice(s, st);
        else
            rc = store_event_each_capped(st, s->goal[0] ? s->goal : NULL, s->last, SSE_PAGE,
                                         SSE_INLINE_MAX, add_event, s);
        if (rc == SSE_STOP)
            rc = 0;
    }
    http_pool_give(s->srv, st, rc == 0 || rc == SSE_END);
    if (rc == 0 && s->out.len == 0 && time_mono_ms() - s->sent_at >= SSE_KEEPALIVE_MS)
        rc = strbuf_adds(&s->out, ": keepalive\n\n");
    return rc;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sse *s = cls;
    int rc;

    (void)pos;
    while (s->off == s->out.len) {
        strbuf_reset(&s->out);
        s->off = 0;
        if (atomic_load(&s->srv->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if ((rc = fill(s)) == SSE_END)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (rc != 0)
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

    http_guard_stream_close(s->srv, s->tok_id);
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
    char gid[ID_SIZE] = "";
    struct sse *s;
    int64_t after;
    int rc;

    if (start_at(r, &after, ans))
        return;
    if (goal && (rc = store_resolve_id(r->st, STORE_KIND_GOAL, goal, gid)) != 0) {
        http_answer_err(ans, rc);
        return;
    }
    if (http_guard_stream_open(r->srv, r->tok.id) != 0) {
        ans->retry_after = SSE_RECHECK_MS / 1000;
        http_answer_error(ans, 429, "rate_limited", NULL,
                          "this token has %lld event streams open already "
                          "(http.streams_per_token): close one first",
                          (long long)config_int(CFG_HTTP_STREAMS_PER_TOKEN));
        return;
    }
    s = xcalloc(1, sizeof(*s));
    s->srv = r->srv;
    snprintf(s->goal, sizeof(s->goal), "%s", gid); /* truncation: ok, an id, ID_SIZE both */
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(s->tok_id, sizeof(s->tok_id), "%s", r->tok.id);
    /* truncation: ok, a hash, HASH_HEX_SIZE both */
    snprintf(s->tok_hash, sizeof(s->tok_hash), "%s", r->tok_hash);
    s->last = after;
    strbuf_init(&s->out, SSE_OUT_CAP);
    s->sent_at = s->checked_at = time_mono_ms();
    /* a first comment line: the client sees the stream open at once */
    if (strbuf_adds(&s->out, ": goald events\nretry: 2000\n\n") != 0)
        abort(); /* 30 bytes into an empty 2 MiB buffer: cannot fail */
    ans->status = 200;
    ans->ctype = "text/event-stream";
    ans->stream = xcheck(
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, sse_read, s, sse_free));
}
