/*
 * llm.c - the client: the model chain from the configuration, the retry
 * policy on one model, failover along the chain, events, accounting,
 * budget checks, and the helpers of llm.h.
 */
#include "llm/llm.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/id.h"
#include "util/log.h"
#include "util/timeutil.h"

static const char *const class_names[LLM_ERR__COUNT] = {
    [LLM_ERR_NONE] = "",
    [LLM_ERR_RATE_LIMIT] = "rate_limit",
    [LLM_ERR_PROVIDER_API] = "provider_api",
    [LLM_ERR_TIMEOUT] = "timeout",
    [LLM_ERR_AUTH] = "auth",
    [LLM_ERR_CONTEXT_LENGTH] = "context_length",
    [LLM_ERR_INVALID_RESPONSE] = "invalid_response",
    [LLM_ERR_BUDGET] = "budget",
};

const char *llm_error_class_name(enum llm_error_class c)
{
    return (unsigned)c < LLM_ERR__COUNT ? class_names[c] : "";
}

int llm_error_class_parse(const char *name)
{
    for (int i = 1; i < LLM_ERR__COUNT; i++)
        if (name && !strcmp(name, class_names[i]))
            return i;
    return -1;
}

int llm_error_fails_over(enum llm_error_class c)
{
    /* budget is the goal's or the account's money: another model of the
     * same goal would spend it too.  Everything else is about this model
     * or its endpoint, so the next one may do better (auth included: the
     * next entry may use another provider and key). */
    return c != LLM_ERR_NONE && c != LLM_ERR_BUDGET;
}

char *llm_strdup(const char *s)
{
    char *d;

    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        abort();
    return d;
}

const char *llm_model_key(const struct llm_model *m)
{
    const char *v;

    if (!m->api_key_env || !*m->api_key_env)
        return NULL;
    v = getenv(m->api_key_env);
    return v && *v ? v : NULL;
}

/* ---- redaction ---------------------------------------------------------- */

static const char *const usual_key_vars[] = {"GOALD_LLM_API_KEY", "OPENAI_API_KEY",
                                             "ANTHROPIC_API_KEY", NULL};

#define REDACTED "***REDACTED***"

static int is_tok(char ch)
{
    return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '.';
}

/* Replace every occurrence of needle in *s. */
static void redact_value(strbuf *s, const char *needle)
{
    size_t n = needle ? strlen(needle) : 0;
    strbuf out = STRBUF_INIT;
    const char *p, *hit;

    if (n < 6 || !strstr(strbuf_cstr(s), needle))
        return;
    for (p = strbuf_cstr(s); (hit = strstr(p, needle)); p = hit + n) {
        strbuf_add(&out, p, (size_t)(hit - p));
        strbuf_adds(&out, REDACTED);
    }
    strbuf_adds(&out, p);
    strbuf_release(s);
    *s = out;
}

/* Tokens shaped like keys: "sk-..." (OpenAI, Anthropic "sk-ant-...") and
 * whatever follows "Bearer ". */
static void redact_shapes(strbuf *s)
{
    strbuf out = STRBUF_INIT;
    const char *p = strbuf_cstr(s);

    while (*p) {
        size_t skip = 0;
        if (!strncmp(p, "sk-", 3) && (p == strbuf_cstr(s) || !is_tok(p[-1]))) {
            size_t k = 3;
            while (is_tok(p[k]))
                k++;
            if (k >= 11)
                skip = k;
        } else if (!strncasecmp(p, "bearer ", 7)) {
            size_t k = 7;
            while (is_tok(p[k]))
                k++;
            if (k > 7) {
                strbuf_add(&out, p, 7);
                p += 7;
                skip = k - 7;
            }
        }
        if (skip) {
            strbuf_adds(&out, REDACTED);
            p += skip;
        } else {
            strbuf_addc(&out, *p++);
        }
    }
    strbuf_release(s);
    *s = out;
}

char *llm_redact(const llm_client *c, const char *s)
{
    strbuf sb = STRBUF_INIT;

    strbuf_adds(&sb, s ? s : "");
    for (size_t i = 0; c && i < c->nmodels; i++)
        redact_value(&sb, llm_model_key(&c->models[i]));
    for (int i = 0; usual_key_vars[i]; i++)
        redact_value(&sb, getenv(usual_key_vars[i]));
    redact_shapes(&sb);
    return strbuf_detach(&sb, NULL);
}

void llm_error_setf(llm_client *c, struct llm_error *err, enum llm_error_class cls, int status,
                    const char *fmt, ...)
{
    char buf[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(err->message);
    err->message = llm_redact(c, buf);
    err->cls = cls;
    err->http_status = status;
}

/* ---- memory helpers ----------------------------------------------------- */

int llm_message_init(struct llm_message *m, enum llm_role role, const char *content)
{
    memset(m, 0, sizeof(*m));
    m->role = role;
    m->content = llm_strdup(content);
    return 0;
}

int llm_message_add_call(struct llm_message *m, const char *id, const char *name,
                         const char *arguments)
{
    struct llm_tool_call *n = realloc(m->calls, (m->ncalls + 1) * sizeof(*n));

    if (!n)
        abort();
    m->calls = n;
    n[m->ncalls].id = llm_strdup(id ? id : "");
    n[m->ncalls].name = llm_strdup(name ? name : "");
    n[m->ncalls].arguments = llm_strdup(arguments ? arguments : "{}");
    m->ncalls++;
    return 0;
}

int llm_message_tool_result(struct llm_message *m, const char *call_id, const char *content,
                            int is_error)
{
    llm_message_init(m, LLM_TOOL, content);
    m->tool_call_id = llm_strdup(call_id ? call_id : "");
    m->is_error = is_error != 0;
    return 0;
}

void llm_message_release(struct llm_message *m)
{
    if (!m)
        return;
    free(m->content);
    for (size_t i = 0; i < m->ncalls; i++) {
        free(m->calls[i].id);
        free(m->calls[i].name);
        free(m->calls[i].arguments);
    }
    free(m->calls);
    free(m->tool_call_id);
    memset(m, 0, sizeof(*m));
}

void llm_messages_free(struct llm_message *msgs, size_t n)
{
    if (!msgs)
        return;
    for (size_t i = 0; i < n; i++)
        llm_message_release(&msgs[i]);
    free(msgs);
}

void llm_response_release(struct llm_response *r)
{
    if (!r)
        return;
    llm_message_release(&r->message);
    free(r->json);
    free(r->finish_reason);
    free(r->model);
    free(r->provider);
    memset(r, 0, sizeof(*r));
}

void llm_error_release(struct llm_error *e)
{
    if (!e)
        return;
    free(e->message);
    memset(e, 0, sizeof(*e));
    e->retry_after_ms = -1;
}

/* ---- JSON helpers --------------------------------------------------------- */

int llm_json_extract(char **out, const char *text)
{
    const char *p;

    for (p = text ? strchr(text, '{') : NULL; p; p = strchr(p + 1, '{')) {
        int depth = 0, in_str = 0, esc = 0;
        const char *q;
        for (q = p; *q; q++) {
            if (in_str) {
                if (esc)
                    esc = 0;
                else if (*q == '\\')
                    esc = 1;
                else if (*q == '"')
                    in_str = 0;
                continue;
            }
            if (*q == '"')
                in_str = 1;
            else if (*q == '{')
                depth++;
            else if (*q == '}' && --depth == 0)
                break;
        }
        if (!*q)
            continue; /* unbalanced from here: try the next '{' */
        size_t len = (size_t)(q - p) + 1;
        cJSON *j = cJSON_ParseWithLength(p, len);
        if (j && cJSON_IsObject(j)) {
            cJSON_Delete(j);
            *out = strndup(p, len);
            if (!*out)
                abort();
            return 0;
        }
        cJSON_Delete(j);
    }
    return err_set(ERR_NOTFOUND, "no JSON object in the answer");
}

static const char *const role_names[] = {"system", "user", "assistant", "tool"};

int llm_messages_from_json(struct llm_message **out, size_t *n, const cJSON *arr)
{
    struct llm_message *msgs = NULL;
    size_t count = 0, i = 0;
    const cJSON *it;
    int rc = 0;

    if (!cJSON_IsArray(arr))
        return err_set(ERR_INVALID, "messages: expected an array");
    count = (size_t)cJSON_GetArraySize(arr);
    msgs = calloc(count ? count : 1, sizeof(*msgs));
    if (!msgs)
        abort();
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(it, "tool_calls");
        const cJSON *tcid = cJSON_GetObjectItemCaseSensitive(it, "tool_call_id");
        int r = -1;

        for (int k = 0; k < 4 && cJSON_IsString(role); k++)
            if (!strcmp(role->valuestring, role_names[k]))
                r = k;
        if (r < 0) {
            rc = err_set(ERR_INVALID,
                         "messages[%zu].role: expected system, user, assistant or tool", i);
            goto out;
        }
        llm_message_init(&msgs[i], (enum llm_role)r, NULL);
        if (cJSON_IsString(content)) {
            msgs[i].content = llm_strdup(content->valuestring);
        } else if (cJSON_IsArray(content)) { /* content parts: keep the text ones */
            strbuf sb = STRBUF_INIT;
            const cJSON *part;
            cJSON_ArrayForEach(part, content)
            {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
                if (cJSON_IsString(t))
                    strbuf_adds(&sb, t->valuestring);
            }
            msgs[i].content = strbuf_detach(&sb, NULL);
        } else if (content && !cJSON_IsNull(content)) {
            rc = err_set(ERR_INVALID, "messages[%zu].content: expected a string", i);
            goto out;
        }
        if (calls && !cJSON_IsNull(calls)) {
            const cJSON *call;
            size_t j = 0;
            if (!cJSON_IsArray(calls)) {
                rc = err_set(ERR_INVALID, "messages[%zu].tool_calls: expected an array", i);
                goto out;
            }
            cJSON_ArrayForEach(call, calls)
            {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
                const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
                char *a = NULL;
                if (!cJSON_IsString(name)) {
                    rc = err_set(ERR_INVALID,
                                 "messages[%zu].tool_calls[%zu].function.name: expected a string",
                                 i, j);
                    goto out;
                }
                if (cJSON_IsObject(args))
                    a = cJSON_PrintUnformatted(args);
                llm_message_add_call(&msgs[i], cJSON_IsString(id) ? id->valuestring : "",
                                     name->valuestring,
                                     a                      ? a
                                     : cJSON_IsString(args) ? args->valuestring
                                                            : "{}");
                cJSON_free(a);
                j++;
            }
        }
        if (cJSON_IsString(tcid))
            msgs[i].tool_call_id = llm_strdup(tcid->valuestring);
        if (r == LLM_TOOL && !msgs[i].tool_call_id) {
            rc = err_set(ERR_INVALID, "messages[%zu].tool_call_id: required for a tool message", i);
            goto out;
        }
        msgs[i].is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "is_error"));
        i++;
    }
    *out = msgs;
    *n = count;
    msgs = NULL;
out:
    if (msgs)
        llm_messages_free(msgs, count);
    return rc;
}

cJSON *llm_message_to_json(const struct llm_message *m)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "role", role_names[m->role]);
    if (m->content)
        cJSON_AddStringToObject(o, "content", m->content);
    else
        cJSON_AddNullToObject(o, "content");
    if (m->ncalls) {
        cJSON *arr = cJSON_AddArrayToObject(o, "tool_calls");
        for (size_t i = 0; i < m->ncalls; i++) {
            cJSON *c = cJSON_CreateObject();
            cJSON *fn;
            cJSON_AddStringToObject(c, "id", m->calls[i].id);
            cJSON_AddStringToObject(c, "type", "function");
            fn = cJSON_AddObjectToObject(c, "function");
            cJSON_AddStringToObject(fn, "name", m->calls[i].name);
            cJSON_AddStringToObject(fn, "arguments", m->calls[i].arguments);
            cJSON_AddItemToArray(arr, c);
        }
    }
    if (m->tool_call_id)
        cJSON_AddStringToObject(o, "tool_call_id", m->tool_call_id);
    if (m->is_error)
        cJSON_AddBoolToObject(o, "is_error", 1);
    return o;
}

/* ---- prices ----------------------------------------------------------- */

/* Published list prices, USD per million tokens (input, cached input,
 * output), used when a chain entry gives none.  Unknown models cost 0:
 * set price_in/price_cached_in/price_out in llm.models for them.  The
 * longest matching prefix wins ("gpt-4o-mini" before "gpt-4o"). */
static const struct {
    const char *prefix;
    double in, cached_in, out;
} default_prices[] = {
    {"gpt-4o-mini", 0.15, 0.075, 0.60},
    {"gpt-4o", 2.50, 1.25, 10.00},
    {"gpt-4.1-nano", 0.10, 0.025, 0.40},
    {"gpt-4.1-mini", 0.40, 0.10, 1.60},
    {"gpt-4.1", 2.00, 0.50, 8.00},
    {"o4-mini", 1.10, 0.275, 4.40},
    {"o3-mini", 1.10, 0.55, 4.40},
    {"claude-3-5-haiku", 0.80, 0.08, 4.00},
    {"claude-3-5-sonnet", 3.00, 0.30, 15.00},
    {"claude-3-7-sonnet", 3.00, 0.30, 15.00},
    {"claude-sonnet-4", 3.00, 0.30, 15.00},
    {"claude-opus-4", 15.00, 1.50, 75.00},
};

static void default_price(const char *model, double *in, double *cached, double *out)
{
    size_t best = 0;

    *in = *cached = *out = 0;
    for (size_t i = 0; model && i < sizeof(default_prices) / sizeof(default_prices[0]); i++) {
        size_t n = strlen(default_prices[i].prefix);
        if (n > best && !strncmp(model, default_prices[i].prefix, n)) {
            best = n;
            *in = default_prices[i].in;
            *cached = default_prices[i].cached_in;
            *out = default_prices[i].out;
        }
    }
}

double llm_cost(const struct llm_usage *u, double price_in, double price_cached_in,
                double price_out)
{
    int64_t cached = u->cached_input < u->input ? u->cached_input : u->input;
    double c = (double)(u->input - cached) * price_in + (double)cached * price_cached_in +
               (double)u->output * price_out;
    return c / 1e6;
}

/* ---- the client --------------------------------------------------------- */

static int kind_parse(const char *p, enum llm_kind *k)
{
    if (!strcmp(p, "openai"))
        *k = LLM_KIND_OPENAI;
    else if (!strcmp(p, "anthropic"))
        *k = LLM_KIND_ANTHROPIC;
    else if (!strcmp(p, "script"))
        *k = LLM_KIND_SCRIPT;
    else
        return -1;
    return 0;
}

/* The key variable of a chain entry that names none: the provider's usual
 * one.  (GOALD_LLM_API_KEY belongs to the environment shortcut.) */
static const char *default_key_env(enum llm_kind k)
{
    if (k == LLM_KIND_SCRIPT)
        return "";
    return k == LLM_KIND_ANTHROPIC ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
}

/* The shortcut's key variable: GOALD_LLM_API_KEY when set, else (NULL)
 * the provider's usual one. */
static const char *shortcut_key_env(const char *provider)
{
    const char *g = getenv("GOALD_LLM_API_KEY");
    enum llm_kind k;

    if (kind_parse(provider, &k) != 0 || k == LLM_KIND_SCRIPT)
        return NULL;
    return g && *g ? "GOALD_LLM_API_KEY" : NULL;
}

static const char *default_base_url(enum llm_kind k)
{
    return k == LLM_KIND_ANTHROPIC ? "https://api.anthropic.com/v1"
           : k == LLM_KIND_OPENAI  ? "https://api.openai.com/v1"
                                   : "";
}

static void model_release(struct llm_model *m)
{
    free(m->provider);
    free(m->model);
    free(m->base_url);
    free(m->api_key_env);
    free(m->script);
}

static int model_add(llm_client *c, const char *where, const char *provider, const char *model,
                     const char *base_url, const char *key_env, const char *script,
                     const double *prices)
{
    struct llm_model m;
    struct llm_model *n;
    size_t bl;

    memset(&m, 0, sizeof(m));
    if (!provider || kind_parse(provider, &m.kind) != 0)
        return err_set(ERR_INVALID, "%s.provider: expected openai, anthropic or script", where);
    if (m.kind == LLM_KIND_SCRIPT) {
        if (!script || !*script)
            return err_set(ERR_INVALID,
                           "%s: the script provider needs a file (llm.script or GOALD_LLM_SCRIPT)",
                           where);
        if (!model || !*model)
            model = "script";
    }
    if (!model || !*model)
        return err_set(ERR_INVALID, "%s.model: required (llm.model or GOALD_LLM_MODEL)", where);
    if (key_env && strchr(key_env, '=')) /* a key pasted where its variable's name goes */
        return err_set(ERR_INVALID, "%s.api_key_env: expected the name of a variable", where);
    m.provider = llm_strdup(provider);
    m.model = llm_strdup(model);
    m.base_url = llm_strdup(base_url && *base_url ? base_url : default_base_url(m.kind));
    bl = strlen(m.base_url);
    while (bl && m.base_url[bl - 1] == '/')
        m.base_url[--bl] = '\0';
    m.api_key_env = llm_strdup(key_env ? key_env : default_key_env(m.kind));
    m.script = llm_strdup(m.kind == LLM_KIND_SCRIPT ? script : NULL);
    default_price(model, &m.price_in, &m.price_cached_in, &m.price_out);
    if (prices) {
        if (prices[0] >= 0)
            m.price_in = prices[0];
        if (prices[1] >= 0)
            m.price_cached_in = prices[1];
        if (prices[2] >= 0)
            m.price_out = prices[2];
    }
    n = realloc(c->models, (c->nmodels + 1) * sizeof(*n));
    if (!n)
        abort();
    c->models = n;
    c->models[c->nmodels++] = m;
    return 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int models_from_json(llm_client *c, const cJSON *arr)
{
    static const char *const known[] = {"provider",    "model",    "base_url",
                                        "api_key_env", "price_in", "price_cached_in",
                                        "price_out",   "script",   NULL};
    static const char *const price_keys[] = {"price_in", "price_cached_in", "price_out"};
    const cJSON *it;
    size_t i = 0;
    int rc;

    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
        return err_set(ERR_INVALID, "llm.models: expected a non-empty array");
    cJSON_ArrayForEach(it, arr)
    {
        char where[64];
        double prices[3] = {-1, -1, -1};
        const cJSON *f;

        snprintf(where, sizeof(where), "llm.models[%zu]", i);
        if (!cJSON_IsObject(it))
            return err_set(ERR_INVALID, "%s: expected an object", where);
        cJSON_ArrayForEach(f, it)
        {
            int ok = 0;
            for (int k = 0; known[k]; k++)
                ok |= !strcmp(f->string, known[k]);
            if (!ok)
                return err_set(ERR_INVALID, "%s.%s: unknown key", where, f->string);
            if (!strncmp(f->string, "price_", 6)) {
                if (!cJSON_IsNumber(f) || f->valuedouble < 0)
                    return err_set(ERR_INVALID, "%s.%s: expected a number >= 0", where, f->string);
            } else if (!cJSON_IsString(f)) {
                return err_set(ERR_INVALID, "%s.%s: expected a string", where, f->string);
            }
        }
        for (int k = 0; k < 3; k++) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, price_keys[k]);
            if (cJSON_IsNumber(p))
                prices[k] = p->valuedouble;
        }
        rc =
            model_add(c, where, jstr(it, "provider"), jstr(it, "model"), jstr(it, "base_url"),
                      jstr(it, "api_key_env"),
                      jstr(it, "script") ? jstr(it, "script") : config_str(CFG_LLM_SCRIPT), prices);
        if (rc)
            return rc;
        i++;
    }
    return 0;
}

/* The shortcut: llm.provider (default openai, or script when only
 * llm.script is set), llm.model, llm.base_url, llm.fallback_model. */
static int models_from_shortcut(llm_client *c)
{
    const char *provider = config_str(CFG_LLM_PROVIDER);
    const char *model = config_str(CFG_LLM_MODEL);
    const char *script = config_str(CFG_LLM_SCRIPT);
    const char *fb = config_str(CFG_LLM_FALLBACK_MODEL);
    int rc;

    if (!provider)
        provider = script && !model ? "script" : "openai";
    if (!model && strcmp(provider, "script") != 0)
        return err_set(ERR_INVALID, "no model configured: set llm.models in the config file, "
                                    "or GOALD_LLM_MODEL (see docs/llm.md)");
    rc = model_add(c, "llm", provider, model, config_str(CFG_LLM_BASE_URL),
                   shortcut_key_env(provider), script, NULL);
    if (rc == 0 && fb && *fb)
        rc = model_add(c, "llm.fallback_model", provider, fb, config_str(CFG_LLM_BASE_URL),
                       shortcut_key_env(provider), script, NULL);
    return rc;
}

int llm_client_open(llm_client **out, store *st)
{
    static int curl_ready;
    const cJSON *models = config_json(CFG_LLM_MODELS);
    llm_client *c;
    int rc;

    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return err_set(ERR_FAIL, "libcurl: cannot initialise");
        curl_ready = 1;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->st = st;
    c->connect_timeout_ms = config_int(CFG_LLM_CONNECT_TIMEOUT_MS);
    c->timeout_ms = config_int(CFG_LLM_TIMEOUT_MS);
    c->max_body = (size_t)config_int(CFG_LLM_MAX_RESPONSE_BYTES);
    c->max_output_tokens = (int)config_int(CFG_LLM_MAX_OUTPUT_TOKENS);
    c->anthropic_version = llm_strdup(config_str(CFG_LLM_ANTHROPIC_VERSION));
    /* the environment shortcut wins over a chain from the config file */
    if (models && !(config_str(CFG_LLM_MODEL) && !strcmp(config_source(CFG_LLM_MODEL), "env") &&
                    strcmp(config_source(CFG_LLM_MODELS), "env") != 0))
        rc = models_from_json(c, models);
    else
        rc = models_from_shortcut(c);
    if (rc) {
        llm_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void llm_client_free(llm_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nmodels; i++)
        model_release(&c->models[i]);
    free(c->models);
    if (c->curl)
        curl_easy_cleanup(c->curl);
    llm_scripts_free(c->scripts);
    free(c->anthropic_version);
    free(c);
}

size_t llm_client_nmodels(const llm_client *c)
{
    return c->nmodels;
}

int llm_client_model(const llm_client *c, size_t i, struct llm_model_info *out)
{
    const struct llm_model *m;

    if (i >= c->nmodels)
        return err_set(ERR_INVALID, "no model at chain position %zu", i);
    m = &c->models[i];
    out->provider = m->provider;
    out->model = m->model;
    out->base_url = m->base_url;
    out->api_key_env = m->api_key_env;
    out->key_set = llm_model_key(m) != NULL;
    out->price_in = m->price_in;
    out->price_cached_in = m->price_cached_in;
    out->price_out = m->price_out;
    out->script = m->script;
    return 0;
}

/* ---- events, accounting, budget ---------------------------------------- */

struct call_ids {
    const char *run_id, *item_id;
    char goal_id[ID_SIZE]; /* "" when unknown */
    char item_buf[ID_SIZE];
};

static void ids_resolve(llm_client *c, const struct llm_request *req, struct call_ids *ids)
{
    sqlite3_stmt *s;

    memset(ids, 0, sizeof(*ids));
    ids->run_id = req->run_id;
    ids->item_id = req->item_id;
    if (req->goal_id)
        snprintf(ids->goal_id, sizeof(ids->goal_id), "%s", req->goal_id);
    if (!c->st || !req->run_id || (req->goal_id && req->item_id))
        return;
    if (store_prepare(c->st, &s, "SELECT goal_id, item_id FROM runs WHERE id = ?") != 0)
        return;
    store_bind_text(s, 1, req->run_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        if (!req->goal_id && sqlite3_column_text(s, 0))
            snprintf(ids->goal_id, sizeof(ids->goal_id), "%s", sqlite3_column_text(s, 0));
        if (!req->item_id && sqlite3_column_text(s, 1)) {
            snprintf(ids->item_buf, sizeof(ids->item_buf), "%s", sqlite3_column_text(s, 1));
            ids->item_id = ids->item_buf;
        }
    }
    store_done(s);
}

/* Write one event in its own transaction; a failure is logged, not fatal
 * (the call itself went through or failed for its own reason). */
static void event_put(llm_client *c, const struct call_ids *ids, const char *type, cJSON *p)
{
    if (c->st) {
        if (store_tx_begin(c->st) == 0) {
            if (store_event_add(c->st, ids->goal_id[0] ? ids->goal_id : NULL, ids->item_id,
                                ids->run_id, type, p, NULL) == 0)
                store_tx_commit(c->st);
            else {
                log_warn("llm: %s event: %s", type, err_last());
                store_tx_rollback(c->st);
            }
        }
    }
    cJSON_Delete(p);
}

int llm_account(store *st, const char *run_id, const char *goal_id, const struct llm_usage *u,
                double cost_usd)
{
    char gid[ID_SIZE] = "";
    sqlite3_stmt *s = NULL;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if (run_id) {
        if ((rc = store_prepare(st, &s,
                                "UPDATE runs SET tokens_in = tokens_in + ?, tokens_cached = "
                                "tokens_cached + ?, tokens_out = tokens_out + ?, cost_usd = "
                                "cost_usd + ? WHERE id = ? RETURNING goal_id")) != 0)
            goto out;
        sqlite3_bind_int64(s, 1, u->input);
        sqlite3_bind_int64(s, 2, u->cached_input);
        sqlite3_bind_int64(s, 3, u->output);
        sqlite3_bind_double(s, 4, cost_usd);
        store_bind_text(s, 5, run_id);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW && sqlite3_column_text(s, 0))
            snprintf(gid, sizeof(gid), "%s", sqlite3_column_text(s, 0));
        else if (step != SQLITE_ROW && step != SQLITE_DONE) {
            rc = store_err(st, "recording run usage");
            goto out;
        }
        while (step == SQLITE_ROW)
            step = sqlite3_step(s);
        store_done(s);
        s = NULL;
    }
    if (!goal_id && gid[0])
        goal_id = gid;
    if (goal_id) {
        if ((rc = store_prepare(st, &s,
                                "UPDATE goals SET spent_tokens = spent_tokens + ?, "
                                "spent_cost_usd = spent_cost_usd + ? WHERE id = ?")) != 0)
            goto out;
        sqlite3_bind_int64(s, 1, u->input + u->output);
        sqlite3_bind_double(s, 2, cost_usd);
        store_bind_text(s, 3, goal_id);
        if (sqlite3_step(s) != SQLITE_DONE) {
            rc = store_err(st, "recording goal usage");
            goto out;
        }
    }
out:
    store_done(s);
    if (rc) {
        store_tx_rollback(st);
        return rc;
    }
    return store_tx_commit(st);
}

/* The run remembers the model that answered it last (runs.model and
 * runs.provider, shown by reports). */
static int run_set_model(store *st, const char *run_id, const struct llm_model *m)
{
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, "UPDATE runs SET model = ?, provider = ? WHERE id = ?")) != 0)
        return rc;
    store_bind_text(s, 1, m->model);
    store_bind_text(s, 2, m->provider);
    store_bind_text(s, 3, run_id);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(st, "recording the run's model");
    store_done(s);
    return rc;
}

/* 1 (and err set) when the goal has spent its token or cost budget. */
static int budget_exhausted(llm_client *c, const struct call_ids *ids, struct llm_error *err)
{
    sqlite3_stmt *s;
    int over = 0;

    if (!c->st || !ids->goal_id[0])
        return 0;
    if (store_prepare(c->st, &s,
                      "SELECT budget_max_tokens, budget_max_cost_usd, spent_tokens, "
                      "spent_cost_usd FROM goals WHERE id = ?") != 0)
        return 0;
    store_bind_text(s, 1, ids->goal_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        int64_t spent = sqlite3_column_int64(s, 2);
        double spent_usd = sqlite3_column_double(s, 3);
        if (sqlite3_column_type(s, 0) != SQLITE_NULL && spent >= sqlite3_column_int64(s, 0)) {
            llm_error_setf(c, err, LLM_ERR_BUDGET, 0,
                           "goal token budget spent: %lld of %lld tokens", (long long)spent,
                           (long long)sqlite3_column_int64(s, 0));
            over = 1;
        } else if (sqlite3_column_type(s, 1) != SQLITE_NULL &&
                   spent_usd >= sqlite3_column_double(s, 1)) {
            llm_error_setf(c, err, LLM_ERR_BUDGET, 0, "goal cost budget spent: $%.4f of $%.4f",
                           spent_usd, sqlite3_column_double(s, 1));
            over = 1;
        }
    }
    store_done(s);
    return over;
}

/* ---- one model, with retries --------------------------------------------- */

static int provider_call(llm_client *c, struct llm_model *m, const struct llm_request *req,
                         struct llm_response *resp, struct llm_error *err)
{
    switch (m->kind) {
    case LLM_KIND_OPENAI:
        return llm_openai_chat(c, m, req, resp, err);
    case LLM_KIND_ANTHROPIC:
        return llm_anthropic_chat(c, m, req, resp, err);
    case LLM_KIND_SCRIPT:
        return llm_script_chat(c, m, req, resp, err);
    }
    return err_set(ERR_INVALID, "unknown provider");
}

static int64_t backoff_ms(int retry)
{
    int64_t base = config_int(CFG_LLM_RETRY_BACKOFF_MS);
    int64_t cap = config_int(CFG_LLM_RETRY_BACKOFF_MAX_MS);
    int64_t d = base;
    unsigned r = 0;

    for (int i = 0; i < retry && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    /* jitter: between half and all of it, so that many jobs do not retry
     * in step */
    id_random(&r, sizeof(r));
    return d / 2 + (d > 1 ? (int64_t)(r % (unsigned)(d / 2 + 1)) : 0);
}

/* Whether a provider_api error is worth another try on the same model:
 * the server's trouble (5xx, no answer, 408, 409, 429 under this class),
 * not a refused request (400, 404, ...). */
static int provider_transient(const struct llm_error *e)
{
    int s = e->http_status;
    return s == 0 || s >= 500 || s == 408 || s == 409 || s == 429;
}

static cJSON *base_payload(const struct llm_request *req, const struct llm_model *m, int index,
                           int attempt)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "stage", req->stage ? req->stage : "");
    cJSON_AddStringToObject(p, "provider", m->provider);
    cJSON_AddStringToObject(p, "model", m->model);
    cJSON_AddNumberToObject(p, "model_index", index);
    cJSON_AddNumberToObject(p, "attempt", attempt);
    return p;
}

int llm_chat(llm_client *c, int model_index, const struct llm_request *req,
             struct llm_response *resp, struct llm_error *err)
{
    struct call_ids ids;
    struct llm_model *m;
    int n_rate = 0, n_transient = 0, n_invalid = 0;
    int attempt = 0;

    memset(resp, 0, sizeof(*resp));
    memset(err, 0, sizeof(*err));
    err->retry_after_ms = -1;
    err->model_index = model_index;
    if (model_index < 0 || (size_t)model_index >= c->nmodels)
        return err_set(ERR_INVALID, "no model at chain position %d (the chain has %zu)",
                       model_index, c->nmodels);
    if (!req->nmessages)
        return err_set(ERR_INVALID, "a chat request needs at least one message");
    m = &c->models[model_index];
    ids_resolve(c, req, &ids);

    for (;;) {
        int64_t t0, wait = -1;
        int rc, final;

        attempt++;
        if (budget_exhausted(c, &ids, err)) {
            cJSON *p = base_payload(req, m, model_index, attempt);
            cJSON_AddStringToObject(p, "class", "budget");
            cJSON_AddStringToObject(p, "message", err->message);
            event_put(c, &ids, "llm.error", p);
            return ERR_FAIL;
        }
        event_put(c, &ids, "llm.request", base_payload(req, m, model_index, attempt));
        t0 = time_mono_ms();
        llm_error_release(err);
        err->model_index = model_index;
        rc = provider_call(c, m, req, resp, err);
        if (rc == ERR_INVALID)
            return rc; /* the caller's request is wrong: no event, no retry */
        final = rc == ERR_NOTFOUND;
        if (final)
            rc = ERR_FAIL;
        if (rc == 0 && req->response_schema && !resp->json) {
            const char *text = resp->message.content;
            if (llm_json_extract(&resp->json, text) != 0) {
                llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                               "stage %s: the answer holds no JSON object",
                               req->stage ? req->stage : "?");
                llm_response_release(resp);
                rc = ERR_FAIL;
            }
        }
        if (rc == 0) {
            cJSON *p = base_payload(req, m, model_index, attempt);
            resp->latency_ms = time_mono_ms() - t0;
            resp->cost_usd = llm_cost(&resp->usage, m->price_in, m->price_cached_in, m->price_out);
            resp->model_index = model_index;
            if (!resp->model)
                resp->model = llm_strdup(m->model);
            resp->provider = llm_strdup(m->provider);
            if (!resp->finish_reason)
                resp->finish_reason = llm_strdup(resp->message.ncalls ? "tool_calls" : "stop");
            cJSON_AddStringToObject(p, "response_model", resp->model);
            cJSON_AddNumberToObject(p, "tokens_in", (double)resp->usage.input);
            cJSON_AddNumberToObject(p, "tokens_cached", (double)resp->usage.cached_input);
            cJSON_AddNumberToObject(p, "tokens_out", (double)resp->usage.output);
            cJSON_AddNumberToObject(p, "cost_usd", resp->cost_usd);
            cJSON_AddNumberToObject(p, "latency_ms", (double)resp->latency_ms);
            cJSON_AddStringToObject(p, "finish_reason", resp->finish_reason);
            cJSON_AddNumberToObject(p, "tool_calls", (double)resp->message.ncalls);
            if (c->st) {
                /* the usage and its event in one transaction */
                rc = store_tx_begin(c->st);
                if (rc == 0)
                    rc = store_event_add(c->st, ids.goal_id[0] ? ids.goal_id : NULL, ids.item_id,
                                         ids.run_id, "llm.response", p, NULL);
                if (rc == 0)
                    rc = llm_account(c->st, ids.run_id, ids.goal_id[0] ? ids.goal_id : NULL,
                                     &resp->usage, resp->cost_usd);
                if (rc == 0 && ids.run_id)
                    rc = run_set_model(c->st, ids.run_id, m);
                if (rc == 0)
                    rc = store_tx_commit(c->st);
                else
                    store_tx_rollback(c->st);
            }
            cJSON_Delete(p);
            if (rc) {
                llm_error_setf(c, err, LLM_ERR_NONE, 0, "recording usage: %s", err_last());
                llm_response_release(resp);
                return rc;
            }
            return 0;
        }

        /* a failure: decide on another try on this model */
        switch (final ? LLM_ERR_NONE : err->cls) {
        case LLM_ERR_RATE_LIMIT:
            if (n_rate < config_int(CFG_LLM_RETRY_RATE_LIMIT)) {
                wait = err->retry_after_ms >= 0 ? err->retry_after_ms : backoff_ms(n_rate);
                if (wait > config_int(CFG_LLM_RETRY_AFTER_MAX_MS))
                    wait = -1; /* too long to sit on: let the chain move on */
                else
                    n_rate++;
            }
            break;
        case LLM_ERR_PROVIDER_API:
        case LLM_ERR_TIMEOUT:
            if ((err->cls == LLM_ERR_TIMEOUT || provider_transient(err)) &&
                n_transient < config_int(CFG_LLM_RETRY_MAX)) {
                wait = backoff_ms(n_transient);
                /* a 503 may say when to come back: not sooner than that */
                if (err->retry_after_ms > wait)
                    wait = err->retry_after_ms;
                if (wait > config_int(CFG_LLM_RETRY_AFTER_MAX_MS))
                    wait = -1;
                else
                    n_transient++;
            }
            break;
        case LLM_ERR_INVALID_RESPONSE:
            if (n_invalid < config_int(CFG_LLM_RETRY_INVALID)) {
                wait = 0;
                n_invalid++;
            }
            break;
        default: /* auth, context_length, budget: another try cannot help */
            break;
        }
        {
            cJSON *p = base_payload(req, m, model_index, attempt);
            cJSON_AddStringToObject(p, "class", llm_error_class_name(err->cls));
            cJSON_AddNumberToObject(p, "status", err->http_status);
            if (err->retry_after_ms >= 0)
                cJSON_AddNumberToObject(p, "retry_after_ms", (double)err->retry_after_ms);
            cJSON_AddBoolToObject(p, "retry", wait >= 0);
            if (wait >= 0)
                cJSON_AddNumberToObject(p, "wait_ms", (double)wait);
            cJSON_AddStringToObject(p, "message", err->message ? err->message : "");
            event_put(c, &ids, "llm.error", p);
        }
        log_info("llm: %s %s: %s: %s%s", m->provider, m->model, llm_error_class_name(err->cls),
                 err->message ? err->message : "", wait >= 0 ? " (retrying)" : "");
        if (wait < 0)
            return ERR_FAIL;
        if (wait > 0)
            time_sleep_ms(wait);
    }
}

int llm_chat_chain(llm_client *c, int start_index, const struct llm_request *req,
                   struct llm_response *resp, struct llm_error *err, int *index_out)
{
    int i = start_index < 0 ? 0 : start_index;
    int rc;

    if ((size_t)i >= c->nmodels) /* a persisted index past a shortened chain */
        i = (int)c->nmodels - 1;
    for (;;) {
        rc = llm_chat(c, i, req, resp, err);
        *index_out = i;
        if (rc != ERR_FAIL || !llm_error_fails_over(err->cls) || (size_t)i + 1 >= c->nmodels)
            return rc;
        {
            struct call_ids ids;
            cJSON *p = cJSON_CreateObject();
            ids_resolve(c, req, &ids);
            cJSON_AddStringToObject(p, "stage", req->stage ? req->stage : "");
            cJSON_AddStringToObject(p, "from", c->models[i].model);
            cJSON_AddStringToObject(p, "to", c->models[i + 1].model);
            cJSON_AddNumberToObject(p, "from_index", i);
            cJSON_AddNumberToObject(p, "to_index", i + 1);
            cJSON_AddStringToObject(p, "class", llm_error_class_name(err->cls));
            event_put(c, &ids, "llm.failover", p);
            log_info("llm: failover from %s to %s after %s", c->models[i].model,
                     c->models[i + 1].model, llm_error_class_name(err->cls));
        }
        llm_error_release(err);
        i++;
    }
}
