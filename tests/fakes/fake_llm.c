/*
 * fake_llm - a scripted OpenAI-compatible (or Anthropic-shaped) HTTP
 * server on 127.0.0.1 for the tests and the bench.
 *
 *   fake_llm --port-file F [--mode openai|anthropic] --script S.jsonl [--log L.jsonl]
 *
 * Binds an ephemeral port and writes it to F (atomically, once
 * listening).  Serves POST .../chat/completions (openai mode) or
 * .../messages (anthropic mode), one script entry per request, in order.
 * An entry is a JSON object:
 *   {"content": "text" | {...}, "tool_calls": [{"name", "arguments", "id"}],
 *    "usage": {"input", "cached_input", "cache_write", "output"},
 *    "finish_reason"}                    a reply in the mode's shape
 *   "status": N, "headers": {"Retry-After": "1"}, "content_type": "text/html"
 *                                        status, extra headers, content type
 *   "body": {...} | "raw": "text"        the body verbatim instead of a reply
 *   "hang_ms": N                         wait N ms before answering
 *   "drip_ms": N, "chunks": K            send the reply in K pieces, N ms apart
 *   "big_bytes": N                       a body of N bytes
 *   "echo_key": true                     an error body quoting the request's key
 *                                        (as a careless server would)
 *   "repeat": N                          serve this entry N times (0: forever)
 * A script that runs out answers 500 {"error":{"type":"fake_exhausted"}}.
 * Every request (method, path, headers, body) is appended to L as one JSON
 * line.  Exits on SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/strbuf.h"

static volatile sig_atomic_t stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cJSON **entries;
static size_t nentries, next_entry;
static int served_of_entry;
static long nrequests;
static int anthropic_mode;
static FILE *log_file;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void nap(long ms)
{
    while (ms > 0 && !stop) {
        long step = ms < 20 ? ms : 20;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

struct conn {
    strbuf body;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    cJSON *h = cls;
    char lower[256];
    size_t i;

    (void)kind;
    for (i = 0; key[i] && i < sizeof(lower) - 1; i++)
        lower[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i]);
    lower[i] = '\0';
    cJSON_AddStringToObject(h, lower, value ? value : "");
    return MHD_YES;
}

/* The next entry (NULL when the script is exhausted); a borrowed copy. */
static cJSON *take_entry(long *reqno)
{
    cJSON *e = NULL;

    pthread_mutex_lock(&lock);
    *reqno = ++nrequests;
    if (next_entry < nentries) {
        const cJSON *rep;
        e = cJSON_Duplicate(entries[next_entry], 1);
        rep = cJSON_GetObjectItemCaseSensitive(entries[next_entry], "repeat");
        served_of_entry++;
        if (!cJSON_IsNumber(rep) || (rep->valueint > 0 && served_of_entry >= rep->valueint)) {
            next_entry++;
            served_of_entry = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return e;
}

static int64_t jint(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static char *content_text(const cJSON *e)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
    if (cJSON_IsString(c))
        return strdup(c->valuestring);
    if (c && !cJSON_IsNull(c))
        return cJSON_PrintUnformatted(c);
    return NULL;
}

static char *args_text(const cJSON *call)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    if (cJSON_IsString(a))
        return strdup(a->valuestring);
    return a ? cJSON_PrintUnformatted(a) : strdup("{}");
}

/* A reply in the mode's shape. */
static char *render_reply(const cJSON *e, const char *model, long reqno)
{
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(e, "tool_calls");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(e, "usage");
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(e, "finish_reason");
    cJSON *root = cJSON_CreateObject();
    char *text = content_text(e);
    char id[64];
    char *out;
    int ncalls = cJSON_GetArraySize(calls);
    const cJSON *call;
    int i = 0;

    if (anthropic_mode) {
        cJSON *content, *u;
        snprintf(id, sizeof(id), "msg_fake_%ld", reqno);
        cJSON_AddStringToObject(root, "id", id);
        cJSON_AddStringToObject(root, "type", "message");
        cJSON_AddStringToObject(root, "role", "assistant");
        cJSON_AddStringToObject(root, "model", model);
        content = cJSON_AddArrayToObject(root, "content");
        if (text) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "type", "text");
            cJSON_AddStringToObject(b, "text", text);
            cJSON_AddItemToArray(content, b);
        }
        cJSON_ArrayForEach(call, calls)
        {
            cJSON *b = cJSON_CreateObject();
            char *a = args_text(call);
            cJSON *input = cJSON_Parse(a);
            snprintf(id, sizeof(id), "toolu_fake_%ld_%d", reqno, i++);
            cJSON_AddStringToObject(b, "type", "tool_use");
            cJSON_AddStringToObject(b, "id", id);
            cJSON_AddStringToObject(b, "name",
                                    cJSON_GetObjectItemCaseSensitive(call, "name")->valuestring);
            /* input that is not JSON is sent as a string: a broken server */
            cJSON_AddItemToObject(b, "input", input ? input : cJSON_CreateString(a));
            cJSON_AddItemToArray(content, b);
            free(a);
        }
        cJSON_AddStringToObject(root, "stop_reason",
                                cJSON_IsString(fr) ? fr->valuestring
                                : ncalls           ? "tool_use"
                                                   : "end_turn");
        cJSON_AddNullToObject(root, "stop_sequence");
        u = cJSON_AddObjectToObject(root, "usage");
        cJSON_AddNumberToObject(u, "input_tokens", (double)jint(usage, "input"));
        cJSON_AddNumberToObject(u, "cache_creation_input_tokens",
                                (double)jint(usage, "cache_write"));
        cJSON_AddNumberToObject(u, "cache_read_input_tokens", (double)jint(usage, "cached_input"));
        cJSON_AddNumberToObject(u, "output_tokens", (double)jint(usage, "output"));
    } else {
        cJSON *choices, *ch, *msg, *u, *d;
        snprintf(id, sizeof(id), "chatcmpl-fake-%ld", reqno);
        cJSON_AddStringToObject(root, "id", id);
        cJSON_AddStringToObject(root, "object", "chat.completion");
        cJSON_AddNumberToObject(root, "created", (double)time(NULL));
        cJSON_AddStringToObject(root, "model", model);
        choices = cJSON_AddArrayToObject(root, "choices");
        ch = cJSON_CreateObject();
        cJSON_AddItemToArray(choices, ch);
        cJSON_AddNumberToObject(ch, "index", 0);
        msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        if (text)
            cJSON_AddStringToObject(msg, "content", text);
        else
            cJSON_AddNullToObject(msg, "content");
        if (ncalls) {
            cJSON *tc = cJSON_AddArrayToObject(msg, "tool_calls");
            cJSON_ArrayForEach(call, calls)
            {
                cJSON *o = cJSON_CreateObject();
                cJSON *fn;
                char *a = args_text(call);
                snprintf(id, sizeof(id), "call_fake_%ld_%d", reqno, i++);
                cJSON_AddStringToObject(o, "id", id);
                cJSON_AddStringToObject(o, "type", "function");
                fn = cJSON_AddObjectToObject(o, "function");
                cJSON_AddStringToObject(
                    fn, "name", cJSON_GetObjectItemCaseSensitive(call, "name")->valuestring);
                cJSON_AddStringToObject(fn, "arguments", a);
                cJSON_AddItemToArray(tc, o);
                free(a);
            }
        }
        cJSON_AddStringToObject(ch, "finish_reason",
                                cJSON_IsString(fr) ? fr->valuestring
                                : ncalls           ? "tool_calls"
                                                   : "stop");
        u = cJSON_AddObjectToObject(root, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", (double)jint(usage, "input"));
        cJSON_AddNumberToObject(u, "completion_tokens", (double)jint(usage, "output"));
        cJSON_AddNumberToObject(u, "total_tokens",
                                (double)(jint(usage, "input") + jint(usage, "output")));
        d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
        cJSON_AddNumberToObject(d, "cached_tokens", (double)jint(usage, "cached_input"));
        d = cJSON_AddObjectToObject(u, "completion_tokens_details");
        cJSON_AddNumberToObject(d, "reasoning_tokens", (double)jint(usage, "reasoning"));
    }
    out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(text);
    return out;
}

/* Slow drip and big bodies are produced by a callback. */
struct stream {
    char *data; /* drip: the body; big: NULL */
    size_t len, sent;
    long drip_ms;
    size_t chunk;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    size_t n;

    (void)pos;
    if (s->sent >= s->len || stop)
        return MHD_CONTENT_READER_END_OF_STREAM;
    n = s->len - s->sent;
    if (n > max)
        n = max;
    if (s->drip_ms) {
        if (s->sent > 0)
            nap(s->drip_ms);
        if (n > s->chunk)
            n = s->chunk;
    }
    if (s->data) {
        memcpy(buf, s->data + s->sent, n);
    } else { /* {"x":"aaaa...  never closed: size is the point */
        for (size_t i = 0; i < n; i++)
            buf[i] = (s->sent + i) == 0  ? '{'
                     : (s->sent + i) < 6 ? "\"x\":\""[s->sent + i - 1]
                                         : 'a';
    }
    s->sent += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *s = cls;
    free(s->data);
    free(s);
}

static void log_request(struct MHD_Connection *conn, const char *method, const char *url,
                        const strbuf *body, long reqno)
{
    cJSON *o, *h, *b;
    char *line;

    if (!log_file)
        return;
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)reqno);
    cJSON_AddStringToObject(o, "method", method);
    cJSON_AddStringToObject(o, "path", url);
    h = cJSON_AddObjectToObject(o, "headers");
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, h);
    b = cJSON_Parse(strbuf_cstr(body));
    cJSON_AddItemToObject(o, "body", b ? b : cJSON_CreateString(strbuf_cstr(body)));
    line = cJSON_PrintUnformatted(o);
    pthread_mutex_lock(&lock);
    fprintf(log_file, "%s\n", line);
    fflush(log_file);
    pthread_mutex_unlock(&lock);
    cJSON_free(line);
    cJSON_Delete(o);
}

static enum MHD_Result queue(struct MHD_Connection *conn, int status, struct MHD_Response *r,
                             const char *ctype, const cJSON *headers)
{
    const cJSON *h;
    enum MHD_Result ret;

    MHD_add_response_header(r, "Content-Type", ctype ? ctype : "application/json");
    cJSON_ArrayForEach(h, headers) if (cJSON_IsString(h))
        MHD_add_response_header(r, h->string, h->valuestring);
    ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result answer(struct MHD_Connection *conn, int status, const char *ctype,
                              const cJSON *headers, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    return queue(conn, status, r, ctype, headers);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    struct conn *c = *con_cls;
    cJSON *e, *req;
    const cJSON *v, *ctype_j, *headers;
    const char *model = "fake-model", *ctype = NULL;
    const char *want = anthropic_mode ? "/messages" : "/chat/completions";
    size_t ul = strlen(url), wl = strlen(want);
    int status = 200;
    long reqno = 0;
    enum MHD_Result ret;
    char *body = NULL;

    (void)cls;
    (void)version;
    if (!c) {
        c = calloc(1, sizeof(*c));
        strbuf_init(&c->body, 64 << 20);
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_size) {
        strbuf_add(&c->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0 || ul < wl || strcmp(url + ul - wl, want) != 0) {
        log_request(conn, method, url, &c->body, 0);
        return answer(conn, 404, NULL, NULL,
                      "{\"error\":{\"message\":\"fake_llm: no such endpoint\",\"type\":"
                      "\"not_found_error\"}}");
    }
    e = take_entry(&reqno);
    log_request(conn, method, url, &c->body, reqno);
    req = cJSON_Parse(strbuf_cstr(&c->body));
    v = cJSON_GetObjectItemCaseSensitive(req, "model");
    if (cJSON_IsString(v))
        model = v->valuestring;
    if (!e) {
        ret = answer(conn, 500, NULL, NULL,
                     "{\"error\":{\"message\":\"fake_llm: script exhausted\",\"type\":"
                     "\"fake_exhausted\"}}");
        goto out;
    }
    headers = cJSON_GetObjectItemCaseSensitive(e, "headers");
    ctype_j = cJSON_GetObjectItemCaseSensitive(e, "content_type");
    if (cJSON_IsString(ctype_j))
        ctype = ctype_j->valuestring;
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "status")))
        status = v->valueint;
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "hang_ms")))
        nap((long)v->valuedouble);
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "big_bytes"))) {
        struct stream *s = calloc(1, sizeof(*s));
        s->len = (size_t)v->valuedouble;
        ret = queue(conn, status,
                    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, s,
                                                      stream_free),
                    ctype, headers);
        goto out;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "echo_key"))) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *xkey = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key");
        cJSON *o = cJSON_CreateObject();
        cJSON *er = cJSON_AddObjectToObject(o, "error");
        strbuf m = STRBUF_INIT;
        strbuf_addf(&m, "Incorrect API key provided: %s. Header was: %s",
                    xkey                                     ? xkey
                    : (auth && !strncmp(auth, "Bearer ", 7)) ? auth + 7
                                                             : "(none)",
                    auth   ? auth
                    : xkey ? xkey
                           : "(none)");
        cJSON_AddStringToObject(er, "message", strbuf_cstr(&m));
        cJSON_AddStringToObject(er, "type",
                                anthropic_mode ? "authentication_error" : "invalid_request_error");
        if (!anthropic_mode)
            cJSON_AddStringToObject(er, "code", "invalid_api_key");
        else
            cJSON_AddStringToObject(o, "type", "error");
        strbuf_release(&m);
        body = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    } else if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(e, "raw"))) {
        body = strdup(v->valuestring);
    } else if ((v = cJSON_GetObjectItemCaseSensitive(e, "body"))) {
        body = cJSON_PrintUnformatted(v);
    } else {
        body = render_reply(e, model, reqno);
    }
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "drip_ms"))) {
        struct stream *s = calloc(1, sizeof(*s));
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "chunks");
        size_t chunks = cJSON_IsNumber(k) && k->valueint > 0 ? (size_t)k->valueint : 10;
        s->data = body;
        s->len = strlen(body);
        s->drip_ms = (long)v->valuedouble;
        s->chunk = s->len / chunks + 1;
        body = NULL;
        ret = queue(
            conn, status,
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_read, s, stream_free),
            ctype, headers);
        goto out;
    }
    ret = answer(conn, status, ctype, headers, body);
out:
    free(body);
    cJSON_Delete(req);
    cJSON_Delete(e);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct conn *c = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (c) {
        strbuf_release(&c->body);
        free(c);
        *con_cls = NULL;
    }
}

static int load_script(const char *path)
{
    strbuf text = STRBUF_INIT;
    char *p, *nl;
    size_t lineno = 0;

    strbuf_init(&text, 64 << 20);
    if (fs_read_file(&text, path, 64 << 20) != 0) {
        fprintf(stderr, "fake_llm: %s: cannot read\n", path);
        return -1;
    }
    for (p = text.buf; p && *p; p = nl ? nl + 1 : NULL) {
        cJSON *j;
        nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        j = cJSON_Parse(p);
        if (!cJSON_IsObject(j)) {
            fprintf(stderr, "fake_llm: %s:%zu: not a JSON object\n", path, lineno);
            cJSON_Delete(j);
            strbuf_release(&text);
            return -1;
        }
        entries = realloc(entries, (nentries + 1) * sizeof(*entries));
        entries[nentries++] = j;
    }
    strbuf_release(&text);
    return 0;
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *script = NULL, *log_path = NULL;
    struct sockaddr_in addr;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    struct sigaction sa;
    char tmp[4096], num[32];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
            port_file = argv[++i];
        else if (!strcmp(argv[i], "--script") && i + 1 < argc)
            script = argv[++i];
        else if (!strcmp(argv[i], "--log") && i + 1 < argc)
            log_path = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            i++;
            if (!strcmp(argv[i], "anthropic"))
                anthropic_mode = 1;
            else if (strcmp(argv[i], "openai") != 0) {
                fprintf(stderr, "fake_llm: --mode: openai or anthropic\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: fake_llm --port-file F [--mode openai|anthropic] "
                            "--script S.jsonl [--log L.jsonl]\n");
            return 2;
        }
    }
    if (!port_file || !script) {
        fprintf(stderr, "fake_llm: --port-file and --script are required\n");
        return 2;
    }
    if (load_script(script) != 0)
        return 2;
    if (log_path && !(log_file = fopen(log_path, "a"))) {
        fprintf(stderr, "fake_llm: %s: cannot open\n", log_path);
        return 2;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                             MHD_USE_ERROR_LOG,
                         0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &addr,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "fake_llm: cannot start the server\n");
        return 1;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(num, sizeof(num), "%u\n", (unsigned)info->port);
    snprintf(tmp, sizeof(tmp), "%s", port_file);
    if (fs_write_atomic(port_file, num, strlen(num), 0644) != 0) {
        fprintf(stderr, "fake_llm: %s: cannot write\n", port_file);
        MHD_stop_daemon(d);
        return 1;
    }
    while (!stop)
        nap(50);
    MHD_stop_daemon(d);
    for (size_t i = 0; i < nentries; i++)
        cJSON_Delete(entries[i]);
    free(entries);
    if (log_file)
        fclose(log_file);
    return 0;
}
