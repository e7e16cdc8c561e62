/*
 * error.c - error classes and their names, the error value, and the
 * redaction every message passes through before it is stored or shown.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "util/secret.h"

static const char *const class_names[LLM_ERR__COUNT] = {
    [LLM_ERR_NONE] = "",
    [LLM_ERR_RATE_LIMIT] = "rate_limit",
    [LLM_ERR_PROVIDER_API] = "provider_api",
    [LLM_ERR_TIMEOUT] = "timeout",
    [LLM_ERR_AUTH] = "auth",
    [LLM_ERR_CONTEXT_LENGTH] = "context_length",
    [LLM_ERR_INVALID_RESPONSE] = "invalid_response",
    [LLM_ERR_BUDGET] = "budget",
    [LLM_ERR_CONFIG] = "config",
    [LLM_ERR_TRUNCATED] = "truncated",
    [LLM_ERR_REFUSED] = "refused",
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

/* ---- what an error body says of the model's output limit ---------------- */

/* The number after the first occurrence of key in s (digits, maybe with
 * thousands commas), or 0. */
static long number_after(const char *s, const char *key)
{
    const char *p = s ? strstr(s, key) : NULL;
    long n = 0;

    if (!p)
        return 0;
    for (p += strlen(key); *p == ' ' || *p == '`'; p++)
        ;
    for (; isdigit((unsigned char)*p) || (*p == ',' && isdigit((unsigned char)p[1])); p++)
        if (*p != ',' && n < 100000000)
            n = n * 10 + (*p - '0');
    return n;
}

const char *llm_error_message(const cJSON *root)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error"), *v;

    if (cJSON_IsObject(e))
        v = cJSON_GetObjectItemCaseSensitive(e, "message");
    else if (cJSON_IsString(e))
        v = e;
    else
        v = cJSON_GetObjectItemCaseSensitive(root, "message");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int llm_output_limit_stated(int status, const char *body)
{
    cJSON *root;
    const char *msg = NULL;
    long limit = 0;

    if (status != 400 && status != 422)
        return 0;
    root = cJSON_Parse(body ? body : "");
    msg = llm_error_message(root);
    /* Anthropic: "max_tokens: 8192 > 4096, which is the maximum allowed
     * number of output tokens for claude-..." */
    if (msg && strstr(msg, "which is the maximum allowed")) {
        const char *gt = strstr(msg, " > ");
        if (gt && gt < strstr(msg, "which is the maximum allowed"))
            limit = number_after(gt, " > ");
    }
    /* OpenAI: "max_tokens is too large: 8192. This model supports at most
     * 4096 completion tokens, whereas you provided 8192." */
    if (!limit && msg && strstr(msg, "completion tokens"))
        limit = number_after(msg, "supports at most ");
    cJSON_Delete(root);
    return limit >= 1 && limit <= 1 << 24 ? (int)limit : 0;
}

/* ---- redaction ---------------------------------------------------------- */

static const char *const usual_key_vars[] = {"GOALD_LLM_API_KEY", "OPENAI_API_KEY",
                                             "ANTHROPIC_API_KEY", NULL};

#define REDACTED "***REDACTED***"

static int is_tok(char ch)
{
    return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '.';
}

/* Replace every occurrence of needle in *s.  Over the cap, an error (*s
 * unchanged): a redaction is never cut, since a cut could end inside a
 * secret that then goes unmatched. */
static int redact_value(strbuf *s, const char *needle)
{
    size_t n = needle ? strlen(needle) : 0;
    strbuf out = STRBUF_INIT;
    const char *p, *hit;
    int rc = 0;

    if (n < 6 || !strstr(strbuf_cstr(s), needle))
        return 0;
    for (p = strbuf_cstr(s); rc == 0 && (hit = strstr(p, needle)); p = hit + n)
        if ((rc = strbuf_add(&out, p, (size_t)(hit - p))) == 0)
            rc = strbuf_adds(&out, REDACTED);
    if (rc == 0)
        rc = strbuf_adds(&out, p);
    if (rc) {
        strbuf_release(&out);
        return rc;
    }
    strbuf_release(s);
    *s = out;
    return 0;
}

/* Tokens shaped like keys: "sk-..." (OpenAI, Anthropic "sk-ant-...") and
 * whatever follows "Bearer ". */
static int redact_shapes(strbuf *s)
{
    strbuf out = STRBUF_INIT;
    const char *p = strbuf_cstr(s);
    int rc = 0;

    while (rc == 0 && *p) {
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
                rc = strbuf_add(&out, p, 7);
                p += 7;
                skip = k - 7;
            }
        }
        if (rc) {
            break;
        } else if (skip) {
            rc = strbuf_adds(&out, REDACTED);
            p += skip;
        } else {
            rc = strbuf_addc(&out, *p++);
        }
    }
    if (rc) {
        strbuf_release(&out);
        return rc;
    }
    strbuf_release(s);
    *s = out;
    return 0;
}

char *llm_redact(const llm_client *c, const char *s)
{
    strbuf sb = STRBUF_INIT;

    int rc = strbuf_adds(&sb, s ? s : "");

    for (size_t i = 0; rc == 0 && c && i < c->nmodels; i++)
        rc = redact_value(&sb, llm_model_key(&c->models[i]));
    for (int i = 0; rc == 0 && usual_key_vars[i]; i++)
        rc = redact_value(&sb, secret_get(usual_key_vars[i]));
    if (rc == 0)
        rc = redact_shapes(&sb);
    /* a text over the cap comes back empty, never cut (nor unredacted) */
    if (rc)
        strbuf_reset(&sb);
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
