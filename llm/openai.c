/*
 * openai.c - the OpenAI-compatible Chat Completions provider (OpenAI,
 * Ollama, vLLM, llama.cpp server, ...), and the error classifier shared
 * with the Anthropic provider.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llm/llm_internal.h"
#include "util/jsonbig.h"
#include "util/log.h"
#include "util/path.h"
#include "util/xalloc.h"

/* The text sent for a tool result: errors are marked, since the Chat
 * Completions API has no field for it. */
static int tool_content(strbuf *sb, const struct llm_message *m)
{
    int rc = m->is_error ? strbuf_adds(sb, "[tool error] ") : 0;

    return rc ? rc : strbuf_adds(sb, m->content && *m->content ? m->content : "(no output)");
}

/* When the endpoint refused response_format, the schema goes into the
 * prompt and the answer is extracted from the text. */
static int schema_instruction(strbuf *sb, const char *schema)
{
    int rc = strbuf_adds(sb, "Answer with exactly one JSON object and nothing else. It must "
                             "match this JSON schema:\n");

    return rc ? rc : strbuf_adds(sb, schema);
}

/* One message of the history as Chat Completions wants it; sys_extra (may
 * be NULL) joins the first message's text.  NULL (the error in the slot)
 * when a text outgrows its buffer's cap. */
static cJSON *message_json(const struct llm_message *mm, int first, const char *sys_extra)
{
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    cJSON *o = cJSON_CreateObject();
    strbuf sb = STRBUF_INIT;
    int rc = 0;

    cJSON_AddStringToObject(o, "role", roles[mm->role]);
    if (mm->role == LLM_TOOL) {
        rc = tool_content(&sb, mm);
        cJSON_AddStringToObject(o, "tool_call_id", mm->tool_call_id ? mm->tool_call_id : "");
        cJSON_AddStringToObject(o, "content", strbuf_cstr(&sb));
    } else if (mm->content && first && sys_extra) {
        /* the JSON instruction joins the first system message: chat
         * templates (Qwen's) refuse a system message that is not first */
        if ((rc = strbuf_adds(&sb, mm->content)) == 0 && (rc = strbuf_adds(&sb, "\n\n")) == 0)
            rc = strbuf_adds(&sb, sys_extra);
        cJSON_AddStringToObject(o, "content", strbuf_cstr(&sb));
    } else if (mm->content) {
        cJSON_AddStringToObject(o, "content", mm->content);
    } else if (mm->role == LLM_ASSISTANT && mm->ncalls) {
        cJSON_AddNullToObject(o, "content");
    } else {
        /* content is required without tool_calls (after a refusal or a
         * content filter); Ollama refuses null */
        cJSON_AddStringToObject(o, "content", "");
    }
    if (mm->role == LLM_ASSISTANT && mm->ncalls)
        llm_message_calls_json(o, mm);
    strbuf_release(&sb);
    if (rc) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* "messages": when the endpoint refused response_format, the schema's
 * instruction joins the first system message, or comes first as one. */
static int messages_json(cJSON *root, const struct llm_request *req, int with_response_format,
                         strbuf *instr)
{
    cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
    const char *sys_extra = NULL;
    int rc;

    if (req->response_schema && !with_response_format) {
        if ((rc = schema_instruction(instr, req->response_schema)) != 0)
            return rc;
        if (req->nmessages && req->messages[0].role == LLM_SYSTEM && req->messages[0].content)
            sys_extra = strbuf_cstr(instr);
        else { /* no system message to join: one, first */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "role", "system");
            cJSON_AddStringToObject(o, "content", strbuf_cstr(instr));
            cJSON_AddItemToArray(msgs, o);
        }
    }
    for (size_t i = 0; i < req->nmessages; i++) {
        cJSON *o = message_json(&req->messages[i], i == 0, sys_extra);
        if (!o)
            return ERR_TOOBIG;
        cJSON_AddItemToArray(msgs, o);
    }
    return 0;
}

/* "response_format": a json_schema named for the stage.  ERR_INVALID for
 * a schema that is not a JSON object. */
static int response_format_json(cJSON *root, const struct llm_request *req)
{
    cJSON *rf, *js;
    cJSON *schema = llm_schema_parse(req->response_schema, "response_schema");
    char name[64];
    size_t k = 0;

    if (!schema)
        return ERR_INVALID;
    /* the name must match ^[a-zA-Z0-9_-]+$ */
    for (const char *p = req->stage ? req->stage : "answer"; *p && k < sizeof(name) - 1; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '-')
            name[k++] = *p;
    name[k] = '\0';
    rf = cJSON_AddObjectToObject(root, "response_format");
    js = cJSON_CreateObject();
    cJSON_AddStringToObject(rf, "type", "json_schema");
    cJSON_AddStringToObject(js, "name", k ? name : "answer");
    cJSON_AddItemToObject(js, "schema", schema);
    cJSON_AddItemToObject(rf, "json_schema", js);
    return 0;
}

int llm_openai_build(strbuf *out, const struct llm_model *m, const struct llm_request *req,
                     int max_tokens, int with_response_format)
{
    cJSON *root = cJSON_CreateObject();
    strbuf instr = STRBUF_INIT;
    char *text = NULL;
    int rc;

    xcheck(root);
    cJSON_AddStringToObject(root, "model", m->model);
    if ((rc = messages_json(root, req, with_response_format, &instr)) != 0 ||
        (rc = llm_tools_json(root, req, LLM_KIND_OPENAI)) != 0)
        goto out;
    if (req->response_schema && with_response_format &&
        (rc = response_format_json(root, req)) != 0)
        goto out;
    if (max_tokens > 0)
        cJSON_AddNumberToObject(
            root, m->use_max_completion ? "max_completion_tokens" : "max_tokens", max_tokens);
    text = cJSON_PrintUnformatted(root);
    rc = strbuf_adds(out, xcheck(text));
out:
    strbuf_release(&instr);
    cJSON_free(text);
    cJSON_Delete(root);
    return rc;
}


/* A JSON syntax check that allocates nothing: the end of the value at p,
 * or NULL.  Used on tool arguments, which may be megabytes (a write's
 * content): parsing them into a tree only to check them held a second
 * copy. */
static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* The 4 hex digits after u at p as a number, or -1. */
static long hex4(const char *p)
{
    long v = 0;

    for (int k = 1; k <= 4; k++) {
        if (!isxdigit((unsigned char)p[k]))
            return -1;
        v = v * 16 + (isdigit((unsigned char)p[k]) ? p[k] - '0' : (tolower(p[k]) - 'a' + 10));
    }
    return v;
}

/* A \u escape at p (its u) checked as cJSON checks it: four hex digits,
 * a high surrogate followed by an escaped low one, never a low one
 * alone.  Its last character, or NULL. */
static const char *skip_u_escape(const char *p)
{
    long hi = hex4(p), lo;

    if (hi < 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
        return NULL;
    if (hi < 0xD800 || hi > 0xDBFF)
        return p + 4;
    if (p[5] != '\\' || p[6] != 'u' || (lo = hex4(p + 6)) < 0xDC00 || lo > 0xDFFF)
        return NULL;
    return p + 10;
}

static const char *skip_value(const char *p, int depth)
{
    p = ws(p);
    if (depth > 1000) /* cJSON's nesting limit */
        return NULL;
    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            if ((unsigned char)*p < 0x20)
                return NULL;
            if (*p == '\\') {
                p++;
                if (*p == 'u') {
                    if (!(p = skip_u_escape(p)))
                        return NULL;
                } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                    return NULL;
                }
            }
        }
        return p + 1;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        p = ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                if (*(p = ws(p)) != '"' || !(p = skip_value(p, depth + 1)) || *(p = ws(p)) != ':')
                    return NULL;
                p++;
            }
            if (!(p = skip_value(p, depth + 1)))
                return NULL;
            p = ws(p);
            if (*p == close)
                return p + 1;
            if (*p != ',')
                return NULL;
            p++;
        }
    }
    if (!strncmp(p, "true", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    if (!strncmp(p, "null", 4))
        return p + 4;
    if (*p == '-' || isdigit((unsigned char)*p)) {
        char *end;
        strtod(p, &end);
        return end > p ? end : NULL;
    }
    return NULL;
}

/* 1 when text is a JSON object (trailing text ignored, as cJSON_Parse does). */
static int is_json_object(const char *text)
{
    const char *p = ws(text);
    return *p == '{' && skip_value(p, 0) != NULL;
}

/* One tool call (calls[i]) into resp->message: its arguments move from
 * the tree (a write's content is megabytes), an id is made up for a
 * server that sends none (*tag: one per answer).  cut: the answer was cut
 * at the output cap, so arguments that are not a JSON object are the cut
 * (the call is left out; the answer is never run) rather than an error.
 * 0 or ERR_FAIL with err set. */
static int tool_call_take(llm_client *c, struct jsonbig *jb, const cJSON *call, size_t i,
                          unsigned *tag, int cut, struct llm_response *resp, struct llm_error *err)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
    cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    struct llm_tool_call *tc;
    char *a = NULL;
    char idbuf[32];

    if (!cJSON_IsString(name) || !*name->valuestring) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "tool_calls[%zu]: no function name",
                       i);
        return ERR_FAIL;
    }
    if (!cJSON_IsString(args) && !cJSON_IsObject(args) && args && !cJSON_IsNull(args)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "tool_calls[%zu] (%s): arguments are not a JSON string", i,
                       name->valuestring);
        return ERR_FAIL;
    }
    /* the arguments move into the message instead of being copied: a
     * string is taken from the tree (the body's own buffer when long), an
     * object (some servers send the object itself) printed */
    if (cJSON_IsObject(args))
        a = jsonbig_print_take(jb, args);
    else if (cJSON_IsString(args) && *args->valuestring)
        a = jsonbig_take(jb, args);
    if (!a)
        a = xstrdup("{}");
    if (!is_json_object(a)) {
        free(a);
        if (cut)
            return 0;
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "tool_calls[%zu] (%s): arguments are not a JSON object", i,
                       name->valuestring);
        return ERR_FAIL;
    }
    /* a server without ids (Ollama, llama.cpp): ids unique across the run
     * (and its other processes), since a failover to Anthropic refuses a
     * tool_use id twice in one conversation */
    if (!(cJSON_IsString(id) && *id->valuestring)) {
        if (!*tag)
            llm_call_tag(tag);
        /* truncation: ok, a hex tag and a call's index fit */
        snprintf(idbuf, sizeof(idbuf), "call_%08x_%zu", *tag, i);
    }
    llm_message_add_call(&resp->message,
                         cJSON_IsString(id) && *id->valuestring ? id->valuestring : idbuf,
                         name->valuestring, "{}");
    tc = &resp->message.calls[resp->message.ncalls - 1];
    free(tc->arguments);
    tc->arguments = a;
    return 0;
}

/* The message's tool_calls (absent or null: none).  0 or ERR_FAIL. */
static int tool_calls_take(llm_client *c, struct jsonbig *jb, const cJSON *calls, int cut,
                           struct llm_response *resp, struct llm_error *err)
{
    const cJSON *call;
    size_t i = 0;
    unsigned tag = 0;

    if (!calls || cJSON_IsNull(calls))
        return 0;
    if (!cJSON_IsArray(calls)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "choices[0].message.tool_calls: expected an array");
        return ERR_FAIL;
    }
    cJSON_ArrayForEach(call, calls)
    {
        if (tool_call_take(c, jb, call, i, &tag, cut, resp, err) != 0)
            return ERR_FAIL;
        i++;
    }
    return 0;
}

/* The message's text: content (taken from the tree), and a refusal,
 * which the history keeps as the assistant's text.  0 or ERR_FAIL. */
static int content_take(llm_client *c, struct jsonbig *jb, const cJSON *msg,
                        struct llm_response *resp, struct llm_error *err)
{
    cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, "refusal");

    if (cJSON_IsString(content))
        resp->message.content = jsonbig_take(jb, content);
    else if (content && !cJSON_IsNull(content)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "choices[0].message.content: expected a string");
        return ERR_FAIL;
    }
    if (cJSON_IsString(v) && *v->valuestring) {
        resp->refusal = xstrdup(v->valuestring);
        if (!resp->message.content)
            resp->message.content = xstrdup(v->valuestring);
    }
    return 0;
}

/* finish_reason, the model that answered, and the usage. */
static void answer_meta(const cJSON *root, const cJSON *choice, struct llm_response *resp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");

    if (cJSON_IsString(v))
        resp->finish_reason = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (cJSON_IsString(v))
        resp->model = xstrdup(v->valuestring);
    /* completion_tokens already counts reasoning tokens
     * (completion_tokens_details.reasoning_tokens is a breakdown) */
    resp->usage.input = llm_token_count(usage, "prompt_tokens");
    resp->usage.output = llm_token_count(usage, "completion_tokens");
    resp->usage.cached_input = llm_token_count(
        cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"), "cached_tokens");
}

int llm_openai_parse_take(llm_client *c, char *body, size_t len, struct llm_response *resp,
                          struct llm_error *err)
{
    struct jsonbig jb;
    cJSON *root, *choices, *choice, *msg;
    const cJSON *fr;
    int rc = ERR_FAIL, cut;

    /* the body's long strings (a write's arguments) are decoded inside it:
     * no second copy of a file the model writes */
    if (llm_reply_parse(c, &jb, &body, len, err) != 0)
        goto out;
    root = jb.root;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "error"))) {
        llm_reply_error(c, LLM_KIND_OPENAI, root, err);
        goto out;
    }
    choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    choice = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
    if (!cJSON_IsObject(msg)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "response has no choices[0].message");
        goto out;
    }
    llm_message_init(&resp->message, LLM_ASSISTANT, NULL);
    fr = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
    cut = cJSON_IsString(fr) &&
          (!strcmp(fr->valuestring, "length") || !strcmp(fr->valuestring, "content_filter"));
    if (content_take(c, &jb, msg, resp, err) != 0 ||
        tool_calls_take(c, &jb, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"), cut, resp,
                        err) != 0)
        goto out;
    answer_meta(root, choice, resp);
    rc = 0;
out:
    if (rc)
        llm_response_release(resp);
    jsonbig_release(&jb);
    return rc;
}

int llm_openai_parse(llm_client *c, const char *body, struct llm_response *resp,
                     struct llm_error *err)
{
    size_t len = strlen(body);
    char *copy = xmalloc(len + 1);

    memcpy(copy, body, len + 1);
    return llm_openai_parse_take(c, copy, len, resp, err);
}

/* ---- error classification ----------------------------------------------- */

static int has(const char *s, const char *needle)
{
    return s && strcasestr(s, needle) != NULL;
}

/* The endpoint does not serve the configured model: OpenAI's 404
 * model_not_found, Anthropic's 404 not_found_error naming the model,
 * Ollama's 404 'model "x" not found' (native or /v1).  Not the provider's
 * trouble: the configuration's. */
static int unknown_model(int status, const char *type, const char *code, const char *message)
{
    if (has(code, "model_not_found"))
        return 1;
    if (status != 404 && !has(type, "not_found_error"))
        return 0;
    return has(message, "model") &&
           (has(type, "not_found_error") || has(message, "not found") ||
            has(message, "does not exist") || has(message, "not_found"));
}

/* What an error body says: its type, code, param and message (borrowed
 * from root), and a retry hint in seconds or ms when the headers gave
 * none. */
struct error_body {
    const char *type, *code, *param, *message;
    int64_t retry_after_ms;
};

static void error_body_read(struct error_body *eb, const cJSON *root)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *v;

    if (cJSON_IsObject(e)) {
        if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(e, "type")))
            eb->type = v->valuestring;
        if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(e, "code")))
            eb->code = v->valuestring;
        if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(e, "param")))
            eb->param = v->valuestring;
        if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(e, "message")))
            eb->message = v->valuestring;
        /* a retry hint in the body: seconds or ms */
        if (eb->retry_after_ms < 0 &&
            cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "retry_after")))
            eb->retry_after_ms = (int64_t)(v->valuedouble * 1000);
        if (eb->retry_after_ms < 0 &&
            cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(e, "retry_after_ms")))
            eb->retry_after_ms = (int64_t)v->valuedouble;
    } else if (cJSON_IsString(e)) { /* Ollama and friends: {"error":"text"} */
        eb->message = e->valuestring;
    } else if (cJSON_IsObject(root) &&
               cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "message"))) {
        /* vLLM's older body: {"object":"error","message":"...","type":...,"code":400} */
        v = cJSON_GetObjectItemCaseSensitive(root, "type");
        eb->message = cJSON_GetObjectItemCaseSensitive(root, "message")->valuestring;
        if (cJSON_IsString(v))
            eb->type = v->valuestring;
    }
}

/* A prompt longer than the model's window, by the body's words. */
static int context_too_long(int status, const struct error_body *eb)
{
    if (has(eb->code, "context_length_exceeded") || has(eb->code, "string_above_max_length") ||
        has(eb->type, "request_too_large") || has(eb->type, "exceed_context_size"))
        return 1;
    return (has(eb->type, "invalid_request_error") || status == 400) &&
           (has(eb->message, "prompt is too long") || has(eb->message, "context length") ||
            has(eb->message, "exceed context limit") || has(eb->message, "context window") ||
            has(eb->message, "maximum context"));
}

/* The class from the body's machine-readable type and code, or -1. */
static int class_from_body(int status, const struct error_body *eb)
{
    const char *type = eb->type, *code = eb->code;

    if (unknown_model(status, type, code, eb->message))
        return LLM_ERR_CONFIG;
    if (context_too_long(status, eb))
        return LLM_ERR_CONTEXT_LENGTH;
    if (has(code, "insufficient_quota") || has(type, "insufficient_quota") ||
        has(code, "billing") || status == 402)
        return LLM_ERR_BUDGET;
    if (has(type, "rate_limit") || has(code, "rate_limit") || has(type, "overloaded_error"))
        return has(type, "overloaded_error") ? LLM_ERR_PROVIDER_API : LLM_ERR_RATE_LIMIT;
    if (has(type, "authentication_error") || has(type, "permission_error") ||
        has(code, "invalid_api_key") || has(code, "invalid_authentication"))
        return LLM_ERR_AUTH;
    if (has(type, "server_error") || has(type, "api_error"))
        return LLM_ERR_PROVIDER_API;
    return -1;
}

/* The class from the status alone. */
static enum llm_error_class class_from_status(int status)
{
    switch (status) {
    case 429:
        return LLM_ERR_RATE_LIMIT;
    case 401:
    case 403:
        return LLM_ERR_AUTH;
    case 408:
    case 504:
        return LLM_ERR_TIMEOUT;
    case 413:
        return LLM_ERR_CONTEXT_LENGTH;
    default:
        return LLM_ERR_PROVIDER_API; /* 5xx, 529, other 4xx (a refused request) */
    }
}

/* An unknown model: name it, where it was asked for, and the fix. */
static void unknown_model_error(llm_client *c, int status, const struct error_body *eb,
                                struct llm_error *err)
{
    const struct llm_model *m = &c->models[err->model_index];

    llm_error_setf(c, err, LLM_ERR_CONFIG, status,
                   "the model \"%s\" is unknown to %s (HTTP %d%s%s%s%s: %.300s): set "
                   "llm.model (or GOALD_LLM_MODEL, or its entry in llm.models) to a model "
                   "it serves; `goald doctor --llm` checks it",
                   m->model, m->base_url && *m->base_url ? m->base_url : m->provider, status,
                   eb->type ? " " : "", eb->type ? eb->type : "", eb->code ? "/" : "",
                   eb->code ? eb->code : "", eb->message ? eb->message : "model not found");
}

void llm_classify_http(llm_client *c, enum llm_kind kind, int status, const char *body,
                       int64_t retry_after_ms, struct llm_error *err)
{
    cJSON *root = cJSON_Parse(body ? body : "");
    struct error_body eb = {.retry_after_ms = retry_after_ms};
    const char *param_hint = "";
    char snippet[201];
    int cls;

    (void)kind;
    error_body_read(&eb, root);
    /* 1. the body's machine-readable type and code; 2. the status */
    if ((cls = class_from_body(status, &eb)) < 0)
        cls = class_from_status(status);

    if (cls == LLM_ERR_CONFIG && c && err->model_index >= 0 &&
        (size_t)err->model_index < c->nmodels) {
        unknown_model_error(c, status, &eb, err);
        err->retry_after_ms = eb.retry_after_ms;
        cJSON_Delete(root);
        return;
    }
    if (!eb.message) { /* quote the start of the body */
        size_t n = 0;
        for (const char *p = body ? body : ""; *p && n < sizeof(snippet) - 1; p++)
            snippet[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
        snippet[n] = '\0';
        eb.message = snippet;
    }
    if (has(eb.param, "response_format"))
        param_hint = " (response_format)";
    else if (has(eb.param, "max_tokens"))
        param_hint = " (max_tokens)";
    llm_error_setf(c, err, (enum llm_error_class)cls, status, "HTTP %d%s%s%s%s%s: %.300s", status,
                   eb.type ? " " : "", eb.type ? eb.type : "", eb.code ? "/" : "",
                   eb.code ? eb.code : "", param_hint, eb.message);
    err->retry_after_ms = eb.retry_after_ms;
    cJSON_Delete(root);
}

/* A 400 that names a parameter we can do without: which one. */
static const char *refused_param(int status, const char *body)
{
    cJSON *root;
    const cJSON *e;
    const char *param = NULL, *msg = NULL, *which = NULL;

    if (status != 400 && status != 422)
        return NULL;
    root = cJSON_Parse(body);
    e = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (cJSON_IsObject(e)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "param");
        if (cJSON_IsString(v))
            param = v->valuestring;
        v = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (cJSON_IsString(v))
            msg = v->valuestring;
    } else if (cJSON_IsString(e)) {
        msg = e->valuestring;
    } else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "detail"))) {
        msg = cJSON_GetObjectItemCaseSensitive(root, "detail")->valuestring;
    }
    if (has(param, "response_format") || has(msg, "response_format") || has(msg, "json_schema"))
        which = "response_format";
    else if (has(param, "max_tokens") || has(msg, "max_completion_tokens"))
        which = "max_tokens";
    cJSON_Delete(root);
    return which;
}

/* vLLM's "max_tokens too large" 400: "'max_tokens' is too large: 8192.
 * This model's maximum context length is 4096 tokens and your request has
 * 1200 input tokens" (or "... you requested 8192 output tokens and your
 * prompt contains at least 1201 input tokens").  The max_tokens that fits
 * this request (with a little room), or 0 when the body says nothing of
 * the kind; *window_out (may be NULL) receives the context window the body
 * states, or 0. */
int llm_openai_fit_max_tokens(int status, const char *body, int64_t *window_out)
{
    cJSON *root;
    const char *msg = NULL, *p;
    long window = 0, input = 0;
    int fit = 0;

    if (window_out)
        *window_out = 0;
    if (status != 400 && status != 422)
        return 0;
    root = cJSON_Parse(body ? body : "");
    msg = llm_error_message(root);
    if (!msg || !(has(msg, "max_tokens") || has(msg, "output tokens")))
        goto out;
    if ((p = strcasestr(msg, "maximum context length is ")))
        window = strtol(p + strlen("maximum context length is "), NULL, 10);
    if ((p = strcasestr(msg, "request has ")))
        input = strtol(p + strlen("request has "), NULL, 10);
    else if ((p = strcasestr(msg, "contains at least ")))
        input = strtol(p + strlen("contains at least "), NULL, 10);
    if (window_out && window > 0)
        *window_out = window;
    if (window > 0 && input > 0 && window - input > 16) {
        long room = window - input - 16; /* token counts differ by a few */
        fit = room > 1 << 20 ? 1 << 20 : (int)room;
    }
out:
    cJSON_Delete(root);
    return fit;
}

int llm_openai_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                    struct llm_response *resp, struct llm_error *err)
{
    struct llm_http_result res = {0};
    strbuf auth = STRBUF_INIT;
    const char *extra[2] = {NULL, NULL};
    strbuf body = STRBUF_INIT;
    char url[2048];
    const char *key = llm_model_key(m);
    int max_tokens = llm_output_cap(c, m, req);
    int rc, fitted = 0;

    if ((rc = path_fmt(url, sizeof(url), "%s/chat/completions", m->base_url)) != 0)
        goto out;
    if (key) {
        if ((rc = strbuf_addf(&auth, "Authorization: Bearer %s", key)) != 0)
            goto out;
        extra[0] = strbuf_cstr(&auth);
    }
    /* a parameter the endpoint refuses (response_format, max_tokens) is
     * dropped or renamed once each: at most three tries */
    for (int attempt = 0; attempt < 4; attempt++) {
        const char *refused;
        int64_t window;
        int fit, limit;
        strbuf_reset(&body);
        rc = llm_openai_build(&body, m, req, max_tokens,
                              req->response_schema && !m->no_response_format);
        if (rc)
            goto out;
        rc = llm_http_post(c, url, req, extra, strbuf_cstr(&body), &res, err);
        if (rc)
            goto out;
        if (res.status >= 200 && res.status < 300)
            break;
        refused = attempt < 3 ? refused_param(res.status, strbuf_cstr(&res.body)) : NULL;
        fit = fitted ? 0 : llm_openai_fit_max_tokens(res.status, strbuf_cstr(&res.body), &window);
        limit = llm_output_limit_stated(res.status, strbuf_cstr(&res.body));
        if (limit > 0 && limit < max_tokens && attempt < 3) {
            /* the model's own output limit (OpenAI's "supports at most N
             * completion tokens"): asked with it, and remembered; the
             * parameter is not renamed for it */
            llm_output_limit_learn(c, m, limit);
            max_tokens = limit;
        } else if (fit > 0 && fit < max_tokens) {
            /* once: the same request with a max_tokens that fits it.  The
             * fit belongs to this request (its input); what the endpoint
             * taught for good is its window, which later requests' output
             * budget (llm_output_tokens) and compaction follow */
            log_info("llm: %s: max_tokens %d does not fit: %d", m->model, max_tokens, fit);
            max_tokens = fit;
            fitted = 1;
            if (window > 0 && (m->context_window <= 0 || window < m->context_window)) {
                m->context_window = window;
                llm_quirks_save(c, m);
            }
        } else if (refused && !strcmp(refused, "response_format") && req->response_schema &&
                   !m->no_response_format) {
            log_info("llm: %s refuses response_format: asking for JSON in the prompt", m->model);
            m->no_response_format = 1;
            llm_quirks_save(c, m);
        } else if (refused && !strcmp(refused, "max_tokens") && !m->use_max_completion) {
            m->use_max_completion = 1;
            llm_quirks_save(c, m);
        } else {
            llm_classify_http(c, LLM_KIND_OPENAI, res.status, strbuf_cstr(&res.body),
                              res.retry_after_ms, err);
            rc = ERR_FAIL;
            goto out;
        }
        llm_http_result_release(&res);
    }
    if ((rc = llm_http_check(c, LLM_KIND_OPENAI, url, &res, err)) != 0)
        goto out;
    {
        size_t len = 0;
        char *text = strbuf_detach(&res.body, &len); /* the parser decodes inside it */
        rc = llm_openai_parse_take(c, text, len, resp, err);
    }
out:
    llm_http_result_release(&res);
    strbuf_release(&body);
    if (auth.buf) /* the key does not outlive the call in our memory */
        memset(auth.buf, 0, auth.len);
    strbuf_release(&auth);
    return rc;
}

int llm_reply_parse(llm_client *c, struct jsonbig *jb, char **body, size_t len,
                    struct llm_error *err)
{
    jsonbig_parse(jb, body, len, 0);
    if (jb->root && cJSON_IsObject(jb->root))
        return 0;
    llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "response is not a JSON object");
    return ERR_FAIL;
}

void llm_reply_error(llm_client *c, enum llm_kind kind, const cJSON *root, struct llm_error *err)
{
    char *text = cJSON_PrintUnformatted(root); /* the body, as the classifier reads it */

    llm_classify_http(c, kind, 200, text ? text : "", -1, err);
    cJSON_free(text);
}
