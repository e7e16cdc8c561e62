/*
 * http.c - the model providers' side of util/http: one POST with the
 * standard headers, the client's timeouts and body cap, and the transport
 * failures as llm error classes (converted here and nowhere else).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llm/llm_internal.h"
#include "util/http.h"
#include "util/log.h"

void llm_http_result_release(struct llm_http_result *r)
{
    strbuf_release(&r->body);
    r->status = 0;
    r->content_type[0] = '\0';
    r->retry_after_ms = -1;
}

/* Header values must not carry CR/LF (a stage or run id from a caller). */
static void header_clean(char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n')
            *s = ' ';
}

/* "Name: value", or "Name;" (libcurl's way to send an empty value), into
 * line, cleaned of line breaks. */
static void header_line(char *line, size_t n, const char *name, const char *value)
{
    if (value && *value)
        /* truncation: ok, a stage name or an id fits 512 bytes */
        snprintf(line, n, "%s: %s", name, value);
    else
        snprintf(line, n, "%s;", name); /* truncation: ok, a stage name or an id fits 512 bytes */
    header_clean(line);
}

#define LLM_HTTP_MAX_EXTRA 8

/* A transport failure as an llm error: a timeout is a timeout, a bad
 * base_url the configuration's, an oversized body an invalid response,
 * the rest (refused, reset, DNS, TLS, an empty reply) the provider's side,
 * worth another try. */
static void transport_error(llm_client *c, const struct http_response *hr, struct llm_error *err)
{
    int status = (int)hr->status;

    switch (hr->fail) {
    case HTTP_FAIL_TOOBIG:
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, status, "%s (llm.max_response_bytes)",
                       err_last());
        break;
    case HTTP_FAIL_TIMEOUT:
        llm_error_setf(c, err, LLM_ERR_TIMEOUT, status, "%s", err_last());
        break;
    case HTTP_FAIL_URL:
        llm_error_setf(c, err, LLM_ERR_PROVIDER_API, 0, "%s (check base_url)", err_last());
        break;
    default:
        llm_error_setf(c, err, LLM_ERR_PROVIDER_API, status, "%s", err_last());
    }
}

int llm_http_post(llm_client *c, const char *url, const struct llm_request *req,
                  const char *const *extra, const char *body, struct llm_http_result *res,
                  struct llm_error *err)
{
    char stage[512], run[512];
    const char *lines[LLM_HTTP_MAX_EXTRA + 6];
    struct http_request rq = {.method = "POST", .url = url, .headers = lines, .body = body};
    struct http_response hr;
    const char *ct;
    size_t n = 0;
    int rc;

    memset(res, 0, sizeof(*res));
    res->retry_after_ms = -1;
    lines[n++] = "Content-Type: application/json";
    lines[n++] = "Accept: application/json";
    header_line(stage, sizeof(stage), "X-Goald-Stage", req->stage);
    lines[n++] = stage;
    header_line(run, sizeof(run), "X-Goald-Run", req->run_id);
    lines[n++] = run;
    for (size_t i = 0; extra && extra[i] && i < LLM_HTTP_MAX_EXTRA; i++)
        lines[n++] = extra[i];
    lines[n] = NULL;
    rq.connect_timeout_ms = c->connect_timeout_ms;
    rq.timeout_ms = c->timeout_ms;
    rq.max_body = c->max_body;

    /* libcurl is loaded at the first request: a chain of scripted models
     * never needs it */
    if (!c->http && http_conn_open(&c->http) != 0) {
        llm_error_setf(c, err, LLM_ERR_PROVIDER_API, 0, "%s", err_last());
        return ERR_FAIL;
    }
    rc = http_perform(&hr, c->http, &rq);
    res->status = (int)hr.status;
    res->retry_after_ms = hr.retry_after_ms;
    if (rc) {
        transport_error(c, &hr, err);
        http_response_release(&hr);
        return ERR_FAIL;
    }
    if ((ct = http_response_header(&hr, "content-type")))
        /* truncation: ok, a content type, compared by its start */
        snprintf(res->content_type, sizeof(res->content_type), "%s", ct);
    res->body = hr.body; /* the body moves to res */
    strbuf_init(&hr.body, 0);
    http_response_release(&hr);
    log_debug("llm: POST %s: HTTP %d, %zu bytes", url, res->status, res->body.len);
    return 0;
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
