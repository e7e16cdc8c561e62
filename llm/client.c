/*
 * client.c - the model chain from the configuration (llm.models or the
 * environment shortcut), the client's life, and what it tells about its
 * models.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "util/xalloc.h"
#include "store/llm.h"
#include "util/timeutil.h"
#include "util/log.h"
#include "util/config.h"
#include "util/hash.h"
#include "util/secret.h"

const char *llm_model_key(const struct llm_model *m)
{
    const char *v;

    if (!m->api_key_env || !*m->api_key_env)
        return NULL;
    v = secret_get(m->api_key_env);
    return v && *v ? v : NULL;
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
    const char *g = secret_get("GOALD_LLM_API_KEY");
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

/* m's prices: the table's for its family, each replaced by the configured
 * one (prices[k] >= 0).  Known when the table knows the family, or input
 * and output are configured (cached input then defaults to input); a
 * script model sends nothing anywhere and costs 0. */
static void model_prices(struct llm_model *m, const double *prices)
{
    m->price_known = llm_price_default(m->model, &m->price_in, &m->price_cached_in, &m->price_out);
    if (!prices)
        prices = (const double[3]){-1, -1, -1};
    if (!m->price_known && prices[0] >= 0)
        m->price_cached_in = prices[0];
    if (prices[0] >= 0)
        m->price_in = prices[0];
    if (prices[1] >= 0)
        m->price_cached_in = prices[1];
    if (prices[2] >= 0)
        m->price_out = prices[2];
    if (prices[0] >= 0 && prices[2] >= 0)
        m->price_known = 1;
    if (m->kind == LLM_KIND_SCRIPT)
        m->price_known = 1;
}

/* A model to add (model_add()): where names it in messages; base_url,
 * key_env and script may be NULL (the provider's defaults); prices as
 * model_prices() takes them; context_window 0 for the default.  Every
 * pointer is the caller's. */
struct model_spec {
    const char *where, *provider, *model, *base_url, *key_env, *script;
    const double *prices;
    int64_t context_window;
};

static int model_add(llm_client *c, const struct model_spec *spec)
{
    const char *where = spec->where, *provider = spec->provider, *model = spec->model;
    const char *base_url = spec->base_url, *key_env = spec->key_env, *script = spec->script;
    const double *prices = spec->prices;
    int64_t context_window = spec->context_window;
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
    m.provider = xstrdup(provider);
    m.model = xstrdup(model);
    m.base_url = xstrdup(base_url && *base_url ? base_url : default_base_url(m.kind));
    bl = strlen(m.base_url);
    while (bl && m.base_url[bl - 1] == '/')
        m.base_url[--bl] = '\0';
    m.api_key_env = xstrdup(key_env ? key_env : default_key_env(m.kind));
    m.script = xstrdup(m.kind == LLM_KIND_SCRIPT ? script : NULL);
    model_prices(&m, prices);
    m.window_set = context_window > 0;
    /* a script model sends nothing anywhere: no window unless configured */
    m.context_window = context_window > 0            ? context_window
                       : m.kind == LLM_KIND_SCRIPT ? 0
                                                   : llm_context_window_default(model);
    n = xrealloc(c->models, (c->nmodels + 1) * sizeof(*n));
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
                                        "price_out",   "script",   "context_window",
                                        NULL};
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
        int64_t window = 0;
        const cJSON *f;

        /* truncation: ok, a field named in a message */
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
            if (!strcmp(f->string, "context_window")) {
                if (!cJSON_IsNumber(f) || f->valuedouble < 1024 || f->valuedouble > 1e8 ||
                    f->valuedouble != (double)(int64_t)f->valuedouble)
                    return err_set(ERR_INVALID,
                                   "%s.context_window: expected a whole number of tokens from "
                                   "1024 to 100000000",
                                   where);
                window = (int64_t)f->valuedouble;
            } else if (!strncmp(f->string, "price_", 6)) {
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
        rc = model_add(c, &(struct model_spec){where, jstr(it, "provider"), jstr(it, "model"),
                                               jstr(it, "base_url"), jstr(it, "api_key_env"),
                                               jstr(it, "script") ? jstr(it, "script")
                                                                  : config_str(CFG_LLM_SCRIPT),
                                               prices, window});
        if (rc)
            return rc;
        i++;
    }
    return 0;
}

/* llm.price_in, llm.price_cached_in, llm.price_out (-1 when unset). */
static void shortcut_prices(double prices[3])
{
    static const enum cfg_key keys[] = {CFG_LLM_PRICE_IN, CFG_LLM_PRICE_CACHED_IN,
                                        CFG_LLM_PRICE_OUT};

    for (int k = 0; k < 3; k++)
        prices[k] = config_str(keys[k]) ? config_double(keys[k]) : -1;
}

/* The shortcut: llm.provider (default openai, or script when only
 * llm.script is set), llm.model, llm.base_url, llm.fallback_model. */
static int models_from_shortcut(llm_client *c)
{
    const char *provider = config_str(CFG_LLM_PROVIDER);
    const char *model = config_str(CFG_LLM_MODEL);
    const char *script = config_str(CFG_LLM_SCRIPT);
    const char *fb = config_str(CFG_LLM_FALLBACK_MODEL);
    double prices[3];
    int rc;

    if (!provider)
        provider = script && !model ? "script" : "openai";
    shortcut_prices(prices);
    if (!model && strcmp(provider, "script") != 0)
        return err_set(ERR_INVALID,
                       "no model is configured: set GOALD_LLM_BASE_URL and GOALD_LLM_MODEL, or "
                       "llm in the config; `goald doctor --llm` checks it");
    struct model_spec spec = {.where = "llm",
                              .provider = provider,
                              .model = model,
                              .base_url = config_str(CFG_LLM_BASE_URL),
                              .key_env = shortcut_key_env(provider),
                              .script = script,
                              .prices = prices,
                              .context_window = config_int(CFG_LLM_CONTEXT_WINDOW)};

    rc = model_add(c, &spec);
    if (rc == 0 && fb && *fb) {
        spec.where = "llm.fallback_model";
        spec.model = fb;
        rc = model_add(c, &spec);
    }
    return rc;
}

int llm_client_open(llm_client **out, store *st)
{
    const cJSON *models = config_json(CFG_LLM_MODELS);
    llm_client *c;
    int rc;

    /* libcurl is initialised at the first HTTP request (http.c): a chain of
     * scripted models never loads it */
    c = xcalloc(1, sizeof(*c));
    c->st = st;
    c->connect_timeout_ms = config_int(CFG_LLM_CONNECT_TIMEOUT_MS);
    c->timeout_ms = config_int(CFG_LLM_TIMEOUT_MS);
    c->max_body = (size_t)config_int(CFG_LLM_MAX_RESPONSE_BYTES);
    if (c->max_body == 0) /* room for a write at the file-size cap, escaped */
        c->max_body = ((size_t)config_int(CFG_TOOLS_MAX_FILE_MB) << 21) + ((size_t)1 << 20);
    c->max_output_tokens = (int)config_int(CFG_LLM_MAX_OUTPUT_TOKENS);
    c->anthropic_version = xstrdup(config_str(CFG_LLM_ANTHROPIC_VERSION));
    /* the environment shortcut wins over a chain from the config file */
    if (models && !(config_str(CFG_LLM_MODEL) && !strcmp(config_source(CFG_LLM_MODEL), "env") &&
                    strcmp(config_source(CFG_LLM_MODELS), "env") != 0)) {
        c->from_chain = 1;
        rc = models_from_json(c, models);
    } else
        rc = models_from_shortcut(c);
    if (rc) {
        llm_client_free(c);
        return rc;
    }
    llm_quirks_load(c);
    /* a client that will call models (a job): the window an Ollama server
     * really applies (llm/ollama.c) */
    if (st)
        for (size_t i = 0; i < c->nmodels; i++)
            llm_ollama_probe(c, &c->models[i]);
    *out = c;
    return 0;
}

/* ---- what endpoints taught, across jobs --------------------------------- */

void llm_quirks_load(llm_client *c)
{
    if (!c->st)
        return;
    for (size_t i = 0; i < c->nmodels; i++) {
        struct llm_model *m = &c->models[i];
        struct store_llm_quirks q;
        int rc;

        if (m->kind != LLM_KIND_OPENAI || !m->base_url || !m->model)
            continue;
        rc = store_llm_quirks_get(c->st, m->base_url, m->model, &q);
        if (rc == ERR_NOTFOUND)
            continue;
        if (rc) {
            log_warn("llm: endpoint quirks: %s", err_last());
            return;
        }
        m->use_max_completion |= q.use_max_completion;
        m->no_response_format |= q.no_response_format;
        /* a window the endpoint stated, when smaller than the one
         * configured or assumed from the model's name */
        if (q.context_window > 0 &&
            (m->context_window <= 0 || q.context_window < m->context_window))
            m->context_window = q.context_window;
        if (q.context_window > 0)
            m->window_learned = q.context_window;
    }
}

void llm_quirks_save(llm_client *c, const struct llm_model *m)
{
    struct store_llm_quirks q;

    if (!c->st || !m->base_url || !m->model)
        return;
    q.use_max_completion = m->use_max_completion;
    q.no_response_format = m->no_response_format;
    q.context_window = m->context_window;
    if (store_llm_quirks_put(c->st, m->base_url, m->model, &q) != 0)
        log_warn("llm: endpoint quirks of %s %s: %s", m->base_url, m->model, err_last());
}

/* The fingerprint, computed once per configuration loaded (every tick and
 * every claim asks for it): the environment's keys only change with a
 * restart, the settings with config_load(). */
static void config_fingerprint_compute(char out[65]);

void llm_config_fingerprint(char out[65])
{
    static char cached[65];
    static unsigned gen;
    static int have;
    unsigned now = config_generation();

    if (!have || gen != now) {
        config_fingerprint_compute(cached);
        gen = now;
        have = 1;
    }
    memcpy(out, cached, sizeof(cached));
}

static void config_fingerprint_compute(char out[65])
{
    static const enum cfg_key keys[] = {CFG_LLM_PROVIDER,       CFG_LLM_MODEL,  CFG_LLM_BASE_URL,
                                        CFG_LLM_FALLBACK_MODEL, CFG_LLM_SCRIPT, CFG_LLM_MODELS};
    static const char *const key_vars[] = {"GOALD_LLM_API_KEY", "OPENAI_API_KEY",
                                           "ANTHROPIC_API_KEY", NULL};
    const cJSON *models = config_json(CFG_LLM_MODELS), *m;
    strbuf sb = STRBUF_INIT; /* what is hashed: cut at its cap */

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = keys[i] == CFG_LLM_MODELS ? NULL : config_str(keys[i]);
        strbuf_addf_cut(&sb, "%d=%s\x1f", (int)keys[i], v ? v : "");
    }
    if (models) {
        char *t = cJSON_PrintUnformatted(models);
        strbuf_adds_cut(&sb, t ? t : "");
        cJSON_free(t);
    }
    /* a key is represented by its length only: never stored, not even hashed */
    for (int i = 0; key_vars[i]; i++) {
        const char *v = secret_get(key_vars[i]);
        strbuf_addf_cut(&sb, "\x1f%s:%zu", key_vars[i], v ? strlen(v) : 0);
    }
    const cJSON *chain = cJSON_IsArray(models) ? models : NULL;
    cJSON_ArrayForEach(m, chain)
    {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "api_key_env");
        const char *v = cJSON_IsString(e) ? secret_get(e->valuestring) : NULL;
        if (cJSON_IsString(e))
            strbuf_addf_cut(&sb, "\x1f%s:%zu", e->valuestring, v ? strlen(v) : 0);
    }
    hash_sha256_hex(out, sb.buf ? sb.buf : "", sb.len);
    strbuf_release(&sb);
}

void llm_client_free(llm_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nmodels; i++)
        model_release(&c->models[i]);
    free(c->models);
    http_conn_free(c->http);
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
    out->price_known = m->price_known;
    out->script = m->script;
    out->context_window = m->context_window;
    return 0;
}

int llm_client_prices_check(const llm_client *c)
{
    for (size_t i = 0; i < c->nmodels; i++) {
        const struct llm_model *m = &c->models[i];
        if (m->price_known)
            continue;
        if (c->from_chain)
            return err_set(ERR_INVALID,
                           "model %s (llm.models[%zu]) has no known price, so a USD budget "
                           "(budget.max_cost_usd) cannot be kept: set llm.models[%zu].price_in "
                           "and price_out (USD per million tokens; price_cached_in too)",
                           m->model, i, i);
        return err_set(ERR_INVALID,
                       "model %s has no known price, so a USD budget (budget.max_cost_usd) "
                       "cannot be kept: set llm.price_in and llm.price_out (USD per million "
                       "tokens; llm.price_cached_in too; GOALD_LLM_PRICE_IN, ...)",
                       m->model);
    }
    return 0;
}
