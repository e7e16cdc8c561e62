/*
 * http.c - the libcurl boundary of llm/: one POST, capped body, timeouts,
 * the server's wait (util/retry); libcurl errors become llm error classes here and nowhere
 * else.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "llm/llm_internal.h"
#include "util/log.h"
#include "util/retry.h"

struct sink {
    strbuf *body;
    int toobig, sized;
    struct llm_http_result *res;
    CURL *curl;
#define SINK_HEADERS 12
    char hname[SINK_HEADERS][40], hval[SINK_HEADERS][80];
    size_t nhdr;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;

    /* a declared length under the cap: the buffer at that size at once,
     * rather than doubled (and copied) on the way */
    if (!s->sized) {
        curl_off_t cl = -1;
        s->sized = 1;
        if (curl_easy_getinfo(s->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK &&
            cl > 0 && (uint64_t)cl <= (uint64_t)s->body->cap)
            (void)strbuf_grow(s->body, (size_t)cl);
    }

    if (strbuf_add(s->body, ptr, n) != 0) {
        s->toobig = 1;
        return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

/* The headers util/retry reads (Retry-After, retry-after-ms, the
 * x-ratelimit-* family), kept per response; the wait is computed once the
 * status is known. */
static int wait_header(const char *name)
{
    return !strcasecmp(name, "retry-after") || !strcasecmp(name, "retry-after-ms") ||
           !strncasecmp(name, "x-ratelimit-", 12);
}

static void keep_header(struct sink *s, const char *name, const char *v)
{
    size_t i = s->nhdr;

    if (i >= SINK_HEADERS)
        return;
    snprintf(s->hname[i], sizeof(s->hname[i]), "%s", name);
    snprintf(s->hval[i], sizeof(s->hval[i]), "%s", v);
    s->nhdr++;
}

static int64_t sink_retry_after(struct sink *s, int status)
{
    const char *names[SINK_HEADERS + 1], *values[SINK_HEADERS + 1];
    char st[16];
    size_t n = 0;

    snprintf(st, sizeof(st), "%d", status);
    names[n] = ":status";
    values[n++] = st;
    for (size_t i = 0; i < s->nhdr; i++, n++) {
        names[n] = s->hname[i];
        values[n] = s->hval[i];
    }
    return retry_after_ms(names, values, n, (int64_t)time(NULL));
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;
    char line[512];
    char *colon, *v;
    size_t len = n < sizeof(line) - 1 ? n : sizeof(line) - 1;

    memcpy(line, ptr, len);
    line[len] = '\0';
    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        line[--len] = '\0';
    if (!strncmp(line, "HTTP/", 5)) { /* a new response (after 100 Continue, redirects) */
        s->res->content_type[0] = '\0';
        s->res->retry_after_ms = -1;
        s->nhdr = 0;
        return n;
    }
    colon = strchr(line, ':');
    if (!colon)
        return n;
    *colon = '\0';
    v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!strcasecmp(line, "content-type"))
        snprintf(s->res->content_type, sizeof(s->res->content_type), "%s", v);
    else if (wait_header(line))
        keep_header(s, line, v);
    return n;
}

void llm_http_result_release(struct llm_http_result *r)
{
    strbuf_release(&r->body);
    r->status = 0;
    r->content_type[0] = '\0';
    r->retry_after_ms = -1;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *h)
{
    struct curl_slist *n = curl_slist_append(l, h);
    if (!n)
        abort();
    return n;
}

/* Header values must not carry CR/LF (a stage or run id from a caller). */
static void header_clean(char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n')
            *s = ' ';
}

int llm_http_post(llm_client *c, const char *url, const struct llm_request *req,
                  struct curl_slist *extra, const char *body, struct llm_http_result *res,
                  struct llm_error *err)
{
    struct curl_slist *h = NULL;
    struct sink sink;
    char line[512];
    CURLcode cc;
    long status = 0;
    int rc = 0;

    memset(res, 0, sizeof(*res));
    res->retry_after_ms = -1;
    strbuf_init(&res->body, c->max_body);
    sink.body = &res->body;
    sink.toobig = 0;
    sink.sized = 0;
    sink.res = res;
    sink.nhdr = 0;

    if (!c->curl) {
        static int curl_ready;
        if (!curl_ready) {
            if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                llm_error_setf(c, err, LLM_ERR_PROVIDER_API, 0, "libcurl: cannot initialise");
                llm_http_result_release(res);
                return ERR_FAIL;
            }
            curl_ready = 1;
        }
        c->curl = curl_easy_init();
        if (!c->curl)
            abort();
    } else {
        curl_easy_reset(c->curl); /* keeps the connection cache */
    }
    sink.curl = c->curl;
    h = add_header(h, "Content-Type: application/json");
    h = add_header(h, "Accept: application/json");
    h = add_header(h, "Expect:");
    if (req->stage && *req->stage)
        snprintf(line, sizeof(line), "X-Goald-Stage: %s", req->stage);
    else
        snprintf(line, sizeof(line), "X-Goald-Stage;");
    header_clean(line);
    h = add_header(h, line);
    /* "Name;" is libcurl's way to send a header with an empty value */
    if (req->run_id && *req->run_id)
        snprintf(line, sizeof(line), "X-Goald-Run: %s", req->run_id);
    else
        snprintf(line, sizeof(line), "X-Goald-Run;");
    header_clean(line);
    h = add_header(h, line);
    for (const struct curl_slist *e = extra; e; e = e->next)
        h = add_header(h, e->data);

    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &sink);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "goald/" GOALD_VERSION);
    curl_easy_setopt(c->curl, CURLOPT_ACCEPT_ENCODING, ""); /* whatever libcurl decodes */
    curl_easy_setopt(c->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
    curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");

    cc = curl_easy_perform(c->curl);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    res->status = (int)status;
    res->retry_after_ms = sink_retry_after(&sink, res->status);
    if (sink.toobig || cc == CURLE_FILESIZE_EXCEEDED) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, res->status,
                       "%s: response body larger than %zu bytes (llm.max_response_bytes)", url,
                       c->max_body);
        rc = ERR_FAIL;
        goto out;
    }
    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        llm_error_setf(c, err, LLM_ERR_TIMEOUT, res->status, "%s: %s", url, curl_easy_strerror(cc));
        rc = ERR_FAIL;
        goto out;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        llm_error_setf(c, err, LLM_ERR_PROVIDER_API, 0, "%s: %s (check base_url)", url,
                       curl_easy_strerror(cc));
        rc = ERR_FAIL;
        goto out;
    default:
        /* connection refused or reset, DNS, TLS, an empty reply: the
         * provider's side, worth another try */
        llm_error_setf(c, err, LLM_ERR_PROVIDER_API, res->status, "%s: %s", url,
                       curl_easy_strerror(cc));
        rc = ERR_FAIL;
        goto out;
    }
    log_debug("llm: POST %s: HTTP %d, %zu bytes", url, res->status, res->body.len);
out:
    curl_slist_free_all(h);
    if (rc)
        llm_http_result_release(res);
    return rc;
}

int llm_http_check(llm_client *c, enum llm_kind kind, const char *url,
                   const struct llm_http_result *res, struct llm_error *err)
{
    if (res->status < 200 || res->status >= 300) {
        llm_classify_http(c, kind, res->status, strbuf_cstr(&res->body), res->retry_after_ms, err);
        return ERR_FAIL;
    }
    if (res->content_type[0] && !strcasestr(res->content_type, "json")) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, res->status,
                       "%s: unexpected content type %s", url, res->content_type);
        return ERR_FAIL;
    }
    return 0;
}
