/*
 * http.c - the one HTTP client policy (util/http.h): the libcurl easy
 * handle's setup, the capped body, the kept headers and the server's wait.
 * libcurl's errors are converted here and nowhere else.
 */
#include "util/http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/err.h"
#include "util/retry.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* a header line longer than this is not kept (no header we read is) */
#define HTTP_HEADER_LINE_MAX 8192

struct http_conn {
    CURL *curl;
};

/* What the callbacks of one transfer share. */
struct sink {
    struct http_response *res;
    CURL *curl;
    int drop, toobig, sized;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int curl_ready(void)
{
    pthread_once(&curl_once, curl_init_once);
    return curl_init_rc == 0 ? 0 : err_set(ERR_FAIL, "libcurl: cannot initialise");
}

int http_conn_open(http_conn **out)
{
    http_conn *c;
    int rc;

    if ((rc = curl_ready()) != 0)
        return rc;
    c = xcalloc(1, sizeof(*c));
    if (!(c->curl = curl_easy_init())) {
        free(c);
        return err_set(ERR_NOMEM, "libcurl: cannot make a handle");
    }
    *out = c;
    return 0;
}

void http_conn_free(http_conn *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c);
}

static void headers_clear(struct http_response *res)
{
    for (size_t i = 0; i < res->nheaders; i++) {
        free(res->name[i]);
        free(res->value[i]);
    }
    res->nheaders = 0;
}

void http_response_release(struct http_response *res)
{
    headers_clear(res);
    strbuf_release(&res->body);
    res->status = 0;
    res->retry_after_ms = -1;
    res->fail = HTTP_OK;
}

const char *http_response_header(const struct http_response *res, const char *name)
{
    for (size_t i = 0; i < res->nheaders; i++)
        if (strcasecmp(res->name[i], name) == 0)
            return res->value[i];
    return NULL;
}

int http_escape(strbuf *out, const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    int rc = e ? strbuf_adds(out, e) : err_set(ERR_NOMEM, "out of memory");

    curl_free(e);
    return rc;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;

    if (s->drop)
        return n;
    /* a declared length under the cap: the buffer at that size at once,
     * rather than doubled (and copied) on the way */
    if (!s->sized) {
        curl_off_t cl = -1;
        s->sized = 1;
        if (curl_easy_getinfo(s->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK &&
            cl > 0 && (uint64_t)cl <= (uint64_t)s->res->body.cap &&
            strbuf_grow(&s->res->body, (size_t)cl) != 0)
            err_clear(); /* only a hint: the append below enforces the cap */
    }
    if (strbuf_add(&s->res->body, ptr, n) != 0) {
        s->toobig = 1;
        return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

/* Keep "Name: value" (value without its leading blanks and trailing
 * blanks and line end); a status line starts a new response. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct http_response *res = ((struct sink *)ud)->res;
    size_t n = size * nmemb, k, v, e;

    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* after 100 Continue, redirects */
        headers_clear(res);
        return n;
    }
    for (k = 0; k < n && p[k] != ':'; k++)
        ;
    if (k == 0 || k >= n || res->nheaders >= HTTP_MAX_HEADERS || n > HTTP_HEADER_LINE_MAX)
        return n;
    for (v = k + 1; v < n && (p[v] == ' ' || p[v] == '\t'); v++)
        ;
    for (e = n; e > v && strchr("\r\n \t", p[e - 1]); e--)
        ;
    res->name[res->nheaders] = xstrndup(p, k);
    res->value[res->nheaders] = xstrndup(p + v, e - v);
    res->nheaders++;
    return n;
}

/* The server's wait from the kept headers, the status passed as the
 * pseudo-header ":status" (util/retry.h). */
static int64_t response_wait(const struct http_response *res)
{
    const char *names[HTTP_MAX_HEADERS + 1], *values[HTTP_MAX_HEADERS + 1];
    char st[24];
    size_t n = 0;

    snprintf(st, sizeof(st), "%ld", res->status); /* truncation: ok, a number fits */
    names[n] = ":status";
    values[n++] = st;
    for (size_t i = 0; i < res->nheaders; i++, n++) {
        names[n] = res->name[i];
        values[n] = res->value[i];
    }
    return retry_after_ms(names, values, n, time_now_ms() / 1000);
}

/* The request's header list: the caller's lines, and "Expect:" (no
 * 100-continue round trip before a body). */
static struct curl_slist *header_add(struct curl_slist *h, const char *line)
{
    struct curl_slist *n = curl_slist_append(h, line); /* xcheck() evaluates twice */

    return xcheck(n);
}

static struct curl_slist *header_list(const struct http_request *rq)
{
    struct curl_slist *h = header_add(NULL, "Expect:");

    for (const char *const *l = rq->headers; l && *l; l++)
        h = header_add(h, *l);
    return h;
}

static void set_method(CURL *c, const struct http_request *rq)
{
    if (rq->body) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(rq->body));
    }
    if (strcmp(rq->method, rq->body ? "POST" : "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
}

/* The policy: every option a request of goald's gets (util/http.h). */
static void set_policy(CURL *c, const struct http_request *rq, struct curl_slist *h,
                       struct sink *s, char *errbuf)
{
    curl_easy_setopt(c, CURLOPT_URL, rq->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    set_method(c, rq);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)rq->connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)rq->timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "goald/" GOALD_VERSION);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* whatever libcurl decodes */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* never carry a token elsewhere */
    if (!rq->drop_body)
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)rq->max_body);
}

/* libcurl's result as our error: the class in res->fail, the message in
 * the error slot. */
static int transfer_err(struct http_response *res, const struct http_request *rq,
                        const struct sink *s, CURLcode cc, const char *errbuf)
{
    const char *shown = rq->shown ? rq->shown : rq->url;

    if (s->toobig || cc == CURLE_FILESIZE_EXCEEDED) {
        res->fail = HTTP_FAIL_TOOBIG;
        return err_set(ERR_FAIL, "%s %s: response body larger than %zu bytes", rq->method, shown,
                       rq->max_body);
    }
    res->fail = cc == CURLE_OPERATION_TIMEDOUT                                    ? HTTP_FAIL_TIMEOUT
                : cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_URL_MALFORMAT ? HTTP_FAIL_URL
                                                                                : HTTP_FAIL_NET;
    return err_set(res->fail == HTTP_FAIL_TIMEOUT ? ERR_TIMEOUT : ERR_FAIL, "%s %s: %s",
                   rq->method, shown, errbuf[0] ? errbuf : curl_easy_strerror(cc));
}

int http_perform(struct http_response *res, http_conn *conn, const struct http_request *rq)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct sink s = {.res = res, .drop = rq->drop_body};
    struct curl_slist *h = NULL;
    http_conn *own = NULL;
    CURLcode cc;
    int rc;

    memset(res, 0, sizeof(*res));
    res->retry_after_ms = -1;
    strbuf_init(&res->body, rq->max_body);
    if (!conn && (rc = http_conn_open(&own)) != 0)
        return rc;
    if (conn)
        curl_easy_reset(conn->curl); /* keeps the connection cache */
    s.curl = conn ? conn->curl : own->curl;
    h = header_list(rq);
    set_policy(s.curl, rq, h, &s, errbuf);
    cc = curl_easy_perform(s.curl);
    curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &res->status);
    res->retry_after_ms = response_wait(res);
    rc = cc == CURLE_OK && !s.toobig ? 0 : transfer_err(res, rq, &s, cc, errbuf);
    curl_slist_free_all(h);
    http_conn_free(own);
    return rc;
}
