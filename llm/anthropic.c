/*
 * anthropic.c - the Anthropic Messages API provider: the system prompt
 * apart, tool_use / tool_result content blocks, thinking blocks sent back
 * as they came, usage with cache tokens.  Structured answers: the schema
 * goes into the system prompt and the JSON object is extracted from the
 * text (llm_chat does the extraction).  A history made with another
 * provider is made acceptable: no whitespace-only text block, tool ids
 * that match the API's pattern.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llm/llm_internal.h"
#include "util/jsonbig.h"
#include "util/path.h"
#include "util/xalloc.h"

/* The last message of arr when it has role, so that consecutive user
 * turns (tool results, then text) become one user message of blocks. */
static cJSON *user_blocks(cJSON *arr)
{
    cJSON *last = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
    cJSON *o, *content;

    if (last && cJSON_IsString(role) && !strcmp(role->valuestring, "user"))
        return cJSON_GetObjectItemCaseSensitive(last, "content");
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "role", "user");
    content = cJSON_AddArrayToObject(o, "content");
    cJSON_AddItemToArray(arr, o);
    return content;
}

/* 1 when s holds no visible character: the API refuses such a text
 * block ("text content blocks must contain non-whitespace text"). */
static int blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s))
            return 0;
    return 1;
}

static int id_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
}

void llm_anthropic_tool_id(const char *id, char *out, size_t n)
{
    const char *p;
    uint32_t h = 2166136261u; /* FNV-1a of the whole id */
    size_t k = 0;
    int ok = id && *id && strlen(id) < n;

    for (p = id ? id : ""; *p; p++) {
        ok &= id_char(*p);
        h = (h ^ (unsigned char)*p) * 16777619u;
    }
    if (ok) {
        memcpy(out, id, strlen(id) + 1);
        return;
    }
    /* functions.x:0 -> functions_x_0_1a2b3c4d: the same for the call and
     * its result, and apart from an id that was functions_x_0 already */
    for (p = id ? id : ""; *p && k < n - 10 && k < 64; p++)
        out[k++] = id_char(*p) ? *p : '_';
    /* truncation: ok, k < n - 10 leaves room for it */
    snprintf(out + k, n - k, "%s%08x", k ? "_" : "id_", (unsigned)h);
}

static cJSON *text_block(const char *text)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    cJSON_AddStringToObject(b, "text", text);
    return b;
}

/* An ephemeral cache breakpoint on block b (NULL: none; never on a
 * thinking block, which the API refuses to mark). */
static void cache_mark(cJSON *b)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");

    if (cJSON_IsString(type) && strstr(type->valuestring, "thinking"))
        return;
    if (cJSON_IsObject(b))
        cJSON_AddItemToObject(b, "cache_control", cJSON_CreateRaw("{\"type\":\"ephemeral\"}"));
}

/* The turn's reasoning blocks that came after `at` of its tool calls, as
 * they came (their text and signature are checked by the API). */
static void thinking_json(cJSON *content, const struct llm_message *mm, size_t at)
{
    for (size_t i = 0; i < mm->nthinking; i++) {
        cJSON *b;
        if (mm->thinking[i].at != at && !(at == mm->ncalls && mm->thinking[i].at > at))
            continue;
        if ((b = cJSON_Parse(mm->thinking[i].block)) && cJSON_IsObject(b))
            cJSON_AddItemToArray(content, b);
        else
            cJSON_Delete(b);
    }
}

/* An assistant turn: its thinking blocks, its text and its tool_use
 * blocks, in the order they came (never empty). */
static cJSON *assistant_json(const struct llm_message *mm)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *content;
    char id[128];

    cJSON_AddStringToObject(o, "role", "assistant");
    content = cJSON_AddArrayToObject(o, "content");
    thinking_json(content, mm, 0);
    if (!blank(mm->content))
        cJSON_AddItemToArray(content, text_block(mm->content));
    for (size_t k = 0; k < mm->ncalls; k++) {
        cJSON *b = cJSON_CreateObject();
        cJSON *input = cJSON_Parse(mm->calls[k].arguments ? mm->calls[k].arguments : "");
        if (k > 0)
            thinking_json(content, mm, k);
        llm_anthropic_tool_id(mm->calls[k].id, id, sizeof(id));
        cJSON_AddStringToObject(b, "type", "tool_use");
        cJSON_AddStringToObject(b, "id", id);
        cJSON_AddStringToObject(b, "name", mm->calls[k].name);
        if (!cJSON_IsObject(input)) {
            cJSON_Delete(input);
            input = cJSON_CreateObject();
        }
        cJSON_AddItemToObject(b, "input", input);
        cJSON_AddItemToArray(content, b);
    }
    if (mm->ncalls)
        thinking_json(content, mm, mm->ncalls);
    if (cJSON_GetArraySize(content) == 0)
        cJSON_AddItemToArray(content, text_block("(no text)"));
    return o;
}

/* A tool result block. */
static cJSON *tool_result_json(const struct llm_message *mm)
{
    cJSON *b = cJSON_CreateObject();
    char id[128];

    llm_anthropic_tool_id(mm->tool_call_id, id, sizeof(id));
    cJSON_AddStringToObject(b, "type", "tool_result");
    cJSON_AddStringToObject(b, "tool_use_id", id);
    /* an empty (or blank) result is refused by the API: say so in words */
    cJSON_AddStringToObject(b, "content", !blank(mm->content) ? mm->content : "(no output)");
    if (mm->is_error)
        cJSON_AddBoolToObject(b, "is_error", 1);
    return b;
}

/* The history as messages; system messages go to *system instead. */
static cJSON *messages_json(const struct llm_request *req, strbuf *system)
{
    cJSON *msgs = cJSON_CreateArray();

    for (size_t i = 0; i < req->nmessages; i++) {
        const struct llm_message *mm = &req->messages[i];
        switch (mm->role) {
        case LLM_SYSTEM:
            if (blank(mm->content))
                break;
            if ((system->len && strbuf_adds(system, "\n\n") != 0) ||
                strbuf_adds(system, mm->content ? mm->content : "") != 0) {
                cJSON_Delete(msgs);
                return NULL;
            }
            break;
        case LLM_USER:
            if (!blank(mm->content))
                cJSON_AddItemToArray(user_blocks(msgs), text_block(mm->content));
            break;
        case LLM_TOOL:
            cJSON_AddItemToArray(user_blocks(msgs), tool_result_json(mm));
            break;
        case LLM_ASSISTANT:
            cJSON_AddItemToArray(msgs, assistant_json(mm));
            break;
        }
    }
    return msgs;
}

int llm_anthropic_build(strbuf *out, const struct llm_model *m, const struct llm_request *req,
                        int max_tokens)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *msgs;
    strbuf system = STRBUF_INIT;
    char *text = NULL;
    int rc = 0;

    xcheck(root);
    cJSON_AddStringToObject(root, "model", m->model);
    cJSON_AddNumberToObject(root, "max_tokens", max_tokens > 0 ? max_tokens : 4096);
    if (!(msgs = messages_json(req, &system))) {
        rc = ERR_TOOBIG;
        goto out;
    }
    if (req->response_schema &&
        ((system.len && (rc = strbuf_adds(&system, "\n\n")) != 0) ||
         (rc = strbuf_adds(&system, "Answer with exactly one JSON object and nothing else. It "
                                    "must match this JSON schema:\n")) != 0 ||
         (rc = strbuf_adds(&system, req->response_schema)) != 0)) {
        cJSON_Delete(msgs);
        goto out;
    }
    /* prompt caching: breakpoints on the system block (tools and system,
     * the same every turn) and on the last block of the last message (the
     * whole conversation, the prefix of the next turn's request) */
    if (system.len) {
        cJSON *blocks = cJSON_AddArrayToObject(root, "system"), *b = text_block(strbuf_cstr(&system));
        cache_mark(b);
        cJSON_AddItemToArray(blocks, b);
    }
    {
        cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
        cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
        cache_mark(cJSON_GetArrayItem(content, cJSON_GetArraySize(content) - 1));
    }
    cJSON_AddItemToObject(root, "messages", msgs);
    if ((rc = llm_tools_json(root, req, LLM_KIND_ANTHROPIC)) != 0)
        goto out;
    text = cJSON_PrintUnformatted(root);
    rc = strbuf_adds(out, xcheck(text));
out:
    cJSON_free(text);
    cJSON_Delete(root);
    strbuf_release(&system);
    return rc;
}

/* A tool_use block (content[i]) into resp->message, its input moved (not
 * copied).  cut: the answer was cut at the output cap, so a block without
 * an object input is the cut (left out; the answer is never run).  0 or
 * ERR_FAIL with err set. */
static int tool_use_take(llm_client *c, struct jsonbig *jb, const cJSON *block, size_t i, int cut,
                         struct llm_response *resp, struct llm_error *err)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(block, "id");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(block, "name");
    cJSON *input = cJSON_GetObjectItemCaseSensitive(block, "input");
    char *args;

    if (cut && (!cJSON_IsString(id) || !cJSON_IsString(name) || !*name->valuestring ||
                !cJSON_IsObject(input)))
        return 0;
    if (!cJSON_IsString(id) || !cJSON_IsString(name) || !*name->valuestring) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "content[%zu]: tool_use without id or name", i);
        return ERR_FAIL;
    }
    if (!cJSON_IsObject(input)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "content[%zu] (%s): input is not a JSON object", i, name->valuestring);
        return ERR_FAIL;
    }
    args = jsonbig_print_take(jb, input);
    xcheck(args);
    llm_message_add_call(&resp->message, id->valuestring, name->valuestring, "{}");
    /* moved, not copied (cJSON allocates with malloc) */
    free(resp->message.calls[resp->message.ncalls - 1].arguments);
    resp->message.calls[resp->message.ncalls - 1].arguments = args;
    return 0;
}

/* A thinking or redacted_thinking block (content[i]), kept whole, after
 * the calls read so far.  0 or ERR_FAIL with err set. */
static int thinking_take(llm_client *c, struct jsonbig *jb, cJSON *block, size_t i, int redacted,
                         struct llm_response *resp, struct llm_error *err)
{
    const char *need[2] = {redacted ? "data" : "thinking", redacted ? NULL : "signature"};
    char *text;

    for (int k = 0; k < 2; k++)
        if (need[k] && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(block, need[k]))) {
            llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                           "content[%zu] (%s): %s: expected a string", i,
                           redacted ? "redacted_thinking" : "thinking", need[k]);
            return ERR_FAIL;
        }
    text = xcheck(jsonbig_print_take(jb, block));
    llm_message_add_thinking(&resp->message, text, resp->message.ncalls);
    free(text);
    return 0;
}

/* The content blocks: text joined into *text, tool_use blocks as calls,
 * thinking blocks kept for the next request; other blocks are not part
 * of the answer.  0 or ERR_FAIL. */
static int blocks_take(llm_client *c, struct jsonbig *jb, const cJSON *content, int cut,
                       strbuf *text, struct llm_response *resp, struct llm_error *err)
{
    cJSON *block;
    size_t i = 0;

    cJSON_ArrayForEach(block, content)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
        if (!cJSON_IsString(type)) {
            llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "content[%zu]: no type", i);
            return ERR_FAIL;
        }
        if (!strcmp(type->valuestring, "text")) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(block, "text");
            if (!cJSON_IsString(t)) {
                llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                               "content[%zu].text: expected a string", i);
                return ERR_FAIL;
            }
            if (strbuf_adds(text, t->valuestring) != 0) {
                llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "content[%zu].text: %s", i,
                               err_last());
                return ERR_FAIL;
            }
        } else if (!strcmp(type->valuestring, "tool_use")) {
            if (tool_use_take(c, jb, block, i, cut, resp, err) != 0)
                return ERR_FAIL;
        } else if (!strcmp(type->valuestring, "thinking") ||
                   !strcmp(type->valuestring, "redacted_thinking")) {
            if (thinking_take(c, jb, block, i, type->valuestring[0] == 'r', resp, err) != 0)
                return ERR_FAIL;
        }
        i++;
    }
    return 0;
}

/* stop_reason in OpenAI's words ("max_tokens" and a full context window
 * are "length"; "refusal" stays), the model that answered, and the
 * usage. */
static void answer_meta(const cJSON *root, struct llm_response *resp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "stop_reason");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");

    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        resp->finish_reason = xstrdup(
            !strcmp(s, "end_turn") || !strcmp(s, "stop_sequence")                     ? "stop"
            : !strcmp(s, "tool_use")                                                  ? "tool_calls"
            : !strcmp(s, "max_tokens") || !strcmp(s, "model_context_window_exceeded") ? "length"
                                                                                      : s);
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (cJSON_IsString(v))
        resp->model = xstrdup(v->valuestring);
    /* input_tokens excludes the cache reads and writes: add them, so that
     * input means every prompt token as with OpenAI */
    resp->usage.cached_input = llm_token_count(usage, "cache_read_input_tokens");
    resp->usage.cache_write = llm_token_count(usage, "cache_creation_input_tokens");
    resp->usage.input =
        llm_token_count(usage, "input_tokens") + resp->usage.cached_input + resp->usage.cache_write;
    resp->usage.output = llm_token_count(usage, "output_tokens");
}

int llm_anthropic_parse_take(llm_client *c, char *body, size_t len, struct llm_response *resp,
                             struct llm_error *err)
{
    struct jsonbig jb;
    cJSON *root, *content;
    const cJSON *v;
    strbuf text = STRBUF_INIT;
    int rc = ERR_FAIL, cut;

    /* the body's long strings (a write's content) are decoded inside it,
     * and the arguments printed back in the same buffer: one copy */
    if (llm_reply_parse(c, &jb, &body, len, err) != 0)
        goto out;
    root = jb.root;
    v = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "error")) {
        llm_reply_error(c, LLM_KIND_ANTHROPIC, root, err);
        goto out;
    }
    content = cJSON_GetObjectItemCaseSensitive(root, "content");
    if (!cJSON_IsArray(content)) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200, "response has no content array");
        goto out;
    }
    llm_message_init(&resp->message, LLM_ASSISTANT, NULL);
    v = cJSON_GetObjectItemCaseSensitive(root, "stop_reason");
    cut = cJSON_IsString(v) && (!strcmp(v->valuestring, "max_tokens") ||
                                !strcmp(v->valuestring, "model_context_window_exceeded") ||
                                !strcmp(v->valuestring, "refusal"));
    if (blocks_take(c, &jb, content, cut, &text, resp, err) != 0)
        goto out;
    if (text.len)
        resp->message.content = strbuf_detach(&text, NULL);
    answer_meta(root, resp);
    rc = 0;
out:
    if (rc)
        llm_response_release(resp);
    strbuf_release(&text);
    jsonbig_release(&jb);
    return rc;
}

int llm_anthropic_parse(llm_client *c, const char *body, struct llm_response *resp,
                        struct llm_error *err)
{
    size_t len = strlen(body);
    char *copy = xmalloc(len + 1);

    memcpy(copy, body, len + 1);
    return llm_anthropic_parse_take(c, copy, len, resp, err);
}

int llm_anthropic_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                       struct llm_response *resp, struct llm_error *err)
{
    struct llm_http_result res = {0};
    const char *extra[3] = {NULL, NULL, NULL};
    strbuf body = STRBUF_INIT;
    strbuf version = STRBUF_INIT, h = STRBUF_INIT;
    char url[2048];
    const char *key = llm_model_key(m);
    int max_tokens = llm_output_cap(c, m, req);
    int rc;

    if ((rc = path_fmt(url, sizeof(url), "%s/messages", m->base_url)) != 0)
        goto out;
    if ((rc = strbuf_addf(&version, "anthropic-version: %s",
                          c->anthropic_version ? c->anthropic_version : "2023-06-01")) != 0)
        goto out;
    extra[0] = strbuf_cstr(&version);
    if (key) {
        if ((rc = strbuf_addf(&h, "x-api-key: %s", key)) != 0)
            goto out;
        extra[1] = strbuf_cstr(&h);
    }
    /* a max_tokens over the model's output limit ("max_tokens: 8192 >
     * 4096, which is the maximum allowed ..."): once more with the limit,
     * which is remembered */
    for (int attempt = 0; attempt < 2; attempt++) {
        int limit;
        strbuf_reset(&body);
        if ((rc = llm_anthropic_build(&body, m, req, max_tokens)) != 0)
            goto out;
        if ((rc = llm_http_post(c, url, req, extra, strbuf_cstr(&body), &res, err)) != 0)
            goto out;
        limit = llm_output_limit_stated(res.status, strbuf_cstr(&res.body));
        if (attempt > 0 || limit <= 0 || limit >= max_tokens)
            break;
        llm_output_limit_learn(c, m, limit);
        max_tokens = limit;
        llm_http_result_release(&res);
    }
    if ((rc = llm_http_check(c, LLM_KIND_ANTHROPIC, url, &res, err)) != 0)
        goto out;
    {
        size_t len = 0;
        char *t = strbuf_detach(&res.body, &len); /* the parser decodes inside it */
        rc = llm_anthropic_parse_take(c, t, len, resp, err);
    }
out:
    llm_http_result_release(&res);
    strbuf_release(&body);
    strbuf_release(&version);
    if (h.buf) /* the key does not outlive the call in our memory */
        memset(h.buf, 0, h.len);
    strbuf_release(&h);
    return rc;
}
