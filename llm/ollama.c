/*
 * ollama.c - the context window an Ollama server really applies.
 *
 * Ollama's OpenAI-compatible endpoint (/v1/chat/completions) ignores
 * options such as num_ctx: every request runs with the window the server
 * applies (the model's num_ctx parameter, else OLLAMA_CONTEXT_LENGTH, else
 * a default of 4096 tokens on a small GPU), and a longer prompt is cut
 * silently, whatever the model's published window.  So goald asks the
 * server (POST /api/show: model_info's <arch>.context_length, the
 * parameters' num_ctx; GET /api/ps: the context_length of the model when
 * loaded) and uses that window for compaction and the output budget.
 * The answer is remembered in the store for the endpoint and model (the
 * window, or that the server is not an Ollama: a 404 or another answer),
 * so that one probe serves every job for an hour, not one probe a job.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "store/llm.h"
#include "util/http.h"
#include "util/log.h"
#include "util/timeutil.h"

/* The smallest window Ollama applies by default (a GPU under 24 GiB). */
#define OLLAMA_DEFAULT_CTX 4096
/* A probe is a small request to a server nearby: never the chat's timeout. */
#define OLLAMA_PROBE_TIMEOUT_MS 10000
/* How long a remembered answer stands before the server is asked again
 * (an operator may change the model's num_ctx). */
#define OLLAMA_PROBE_KEEP_MS (3600 * 1000LL)

/* "num_ctx    8192" among the parameters text (one "name value" a line):
 * the value, or 0. */
static int64_t parameters_num_ctx(const char *params)
{
    for (const char *p = params; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!strncmp(p, "num_ctx", 7) && (p[7] == ' ' || p[7] == '\t')) {
            long long v = strtoll(p + 7, NULL, 10);
            return v > 0 ? (int64_t)v : 0;
        }
    }
    return 0;
}

/* model_info's "<arch>.context_length": the trained window, or 0. */
static int64_t trained_length(const cJSON *info)
{
    const cJSON *it;
    const char *suffix = ".context_length";
    size_t sl = strlen(suffix);

    cJSON_ArrayForEach(it, info)
    {
        size_t n = it->string ? strlen(it->string) : 0;
        if (n > sl && !strcmp(it->string + n - sl, suffix) && cJSON_IsNumber(it) &&
            it->valuedouble > 0 && it->valuedouble < 1e9)
            return (int64_t)it->valuedouble;
    }
    return 0;
}

/* The context_length /api/ps reports for model (loaded), or 0. */
static int64_t loaded_length(const char *ps_json, const char *model)
{
    cJSON *root = ps_json ? cJSON_Parse(ps_json) : NULL;
    const cJSON *it;
    int64_t n = 0;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "models"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "model"));
        const cJSON *cl = cJSON_GetObjectItemCaseSensitive(it, "context_length");
        if (((name && !strcmp(name, model)) || (m && !strcmp(m, model))) && cJSON_IsNumber(cl) &&
            cl->valuedouble > 0 && cl->valuedouble < 1e9) {
            n = (int64_t)cl->valuedouble;
            break;
        }
    }
    cJSON_Delete(root);
    return n;
}

int64_t llm_ollama_window(const char *show_json, const char *ps_json, const char *model)
{
    cJSON *show = show_json ? cJSON_Parse(show_json) : NULL;
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(show, "model_info");
    const char *params = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(show, "parameters"));
    int64_t trained, applied, w = 0;

    if (!cJSON_IsObject(info))
        goto out; /* not an Ollama answer */
    trained = trained_length(info);
    /* what the server runs the model with: its num_ctx, else (the server's
     * own default) what it loaded it with, else the smallest default */
    applied = parameters_num_ctx(params);
    if (applied <= 0)
        applied = loaded_length(ps_json, model);
    if (applied <= 0)
        applied = OLLAMA_DEFAULT_CTX;
    w = trained > 0 && trained < applied ? trained : applied;
out:
    cJSON_Delete(show);
    return w;
}

/* One request of the probe: 0 with the body in *out (a 200), 1 for
 * another answer (the server is not an Ollama), -1 when none came. */
static int probe_request(llm_client *c, const char *method, const char *url, const char *body,
                         strbuf *out)
{
    const char *headers[] = {"Content-Type: application/json", "Accept: application/json", NULL};
    struct http_request rq = {.method = method,
                              .url = url,
                              .headers = headers,
                              .body = body,
                              .max_body = (size_t)1 << 20};
    struct http_response res;
    int rc;

    rq.connect_timeout_ms = c->connect_timeout_ms;
    rq.timeout_ms =
        c->timeout_ms < OLLAMA_PROBE_TIMEOUT_MS ? c->timeout_ms : OLLAMA_PROBE_TIMEOUT_MS;
    rc = http_perform(&res, NULL, &rq);
    if (rc == 0 && res.status == 200) {
        *out = res.body;
        memset(&res.body, 0, sizeof(res.body));
    } else {
        err_clear();
        rc = rc == 0 ? 1 : -1;
    }
    http_response_release(&res);
    return rc;
}

/* The host of url is one an Ollama server of the operator's own would
 * have: loopback, a private network (10/8, 172.16/12, 192.168/16), or a
 * name without a dot (a container's service name).  A public provider is
 * never asked: every job would spend a round trip on its 404. */
int llm_url_is_local(const char *url)
{
    const char *h = strstr(url, "://");
    char host[256];
    size_t n;
    int a = 0, b = 0;

    h = h ? h + 3 : url;
    if (*h == '[')
        return !strncmp(h, "[::1]", 5);
    n = strcspn(h, ":/");
    if (n == 0 || n >= sizeof(host))
        return 0;
    memcpy(host, h, n);
    host[n] = '\0';
    if (!strcmp(host, "localhost") || !strchr(host, '.'))
        return 1;
    if (sscanf(host, "%d.%d.", &a, &b) != 2)
        return 0;
    return a == 127 || a == 10 || (a == 192 && b == 168) || (a == 172 && b >= 16 && b <= 31);
}

/* Is m possibly served by an Ollama of the operator's own: an openai
 * entry on a local host whose base URL ends in /v1, whose window the
 * configuration does not state? */
static int maybe_ollama(const struct llm_model *m)
{
    size_t n = m->base_url ? strlen(m->base_url) : 0;

    return m->kind == LLM_KIND_OPENAI && !m->window_set && n > 3 &&
           !strcmp(m->base_url + n - 3, "/v1") && llm_url_is_local(m->base_url);
}

/* m's window is w, the server's (a smaller one an error of this endpoint
 * stated still wins). */
static void window_apply(struct llm_model *m, int64_t w)
{
    if (m->window_learned > 0 && m->window_learned < w)
        w = m->window_learned;
    if (w != m->context_window)
        log_info("llm: %s at %s: the server applies a context window of %lld tokens (was %lld)",
                 m->model, m->base_url, (long long)w, (long long)m->context_window);
    m->context_window = w;
}

/* The probe's answer for m remembered in the store, recent enough: 1 (the
 * window applied when it was an Ollama's), else 0 (ask the server). */
static int probe_remembered(llm_client *c, struct llm_model *m)
{
    int64_t w = 0, at = 0;
    int found = 0;

    if (!c->st)
        return 0;
    if (store_llm_probe_get(c->st, m->base_url, m->model, &w, &at, &found) != 0) {
        log_warn("llm: window probe of %s: %s", m->base_url, err_last());
        return 0;
    }
    if (!found || time_now_ms() - at >= OLLAMA_PROBE_KEEP_MS || time_now_ms() < at)
        return 0;
    if (w > 0)
        window_apply(m, w);
    return 1;
}

void llm_ollama_probe(llm_client *c, struct llm_model *m)
{
    strbuf url = STRBUF_INIT, show = STRBUF_INIT, ps = STRBUF_INIT;
    cJSON *req = NULL;
    char *body = NULL;
    size_t root_len;
    int64_t w = 0;
    int rc;

    if (!maybe_ollama(m) || probe_remembered(c, m))
        return;
    root_len = strlen(m->base_url) - 3; /* the server's root, without /v1 */
    req = cJSON_CreateObject();
    if (!req || !cJSON_AddStringToObject(req, "model", m->model) ||
        !(body = cJSON_PrintUnformatted(req)) ||
        strbuf_addf(&url, "%.*s/api/show", (int)root_len, m->base_url) != 0)
        goto out;
    rc = probe_request(c, "POST", strbuf_cstr(&url), body, &show);
    if (rc < 0)
        goto out; /* not answering: asked again by the next job */
    if (rc == 0) {
        strbuf_reset(&url);
        if (strbuf_addf(&url, "%.*s/api/ps", (int)root_len, m->base_url) != 0 ||
            probe_request(c, "GET", strbuf_cstr(&url), NULL, &ps) != 0)
            strbuf_reset(&ps);
        w = llm_ollama_window(strbuf_cstr(&show), ps.len ? strbuf_cstr(&ps) : NULL, m->model);
    }
    /* remembered either way: the window, or 0 (not an Ollama, the window
     * stays) */
    if (c->st && store_llm_probe_put(c->st, m->base_url, m->model, w > 0 ? w : 0) != 0)
        log_warn("llm: window probe of %s: %s", m->base_url, err_last());
    if (w > 0)
        window_apply(m, w);
out:
    cJSON_free(body);
    cJSON_Delete(req);
    strbuf_release(&url);
    strbuf_release(&show);
    strbuf_release(&ps);
}
