/*
 * message.c - messages and responses: building, freeing, JSON in the Chat
 * Completions shape, and finding the JSON object in an answer.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "util/xalloc.h"
#include "util/id.h"

/* ---- memory helpers ----------------------------------------------------- */

int llm_message_init(struct llm_message *m, enum llm_role role, const char *content)
{
    memset(m, 0, sizeof(*m));
    m->role = role;
    m->content = xstrdup(content);
    return 0;
}

int llm_message_add_call(struct llm_message *m, const char *id, const char *name,
                         const char *arguments)
{
    struct llm_tool_call *n = xrealloc(m->calls, (m->ncalls + 1) * sizeof(*n));

    m->calls = n;
    n[m->ncalls].id = xstrdup(id ? id : "");
    n[m->ncalls].name = xstrdup(name ? name : "");
    n[m->ncalls].arguments = xstrdup(arguments ? arguments : "{}");
    m->ncalls++;
    return 0;
}

int llm_message_tool_result(struct llm_message *m, const char *call_id, const char *content,
                            int is_error)
{
    llm_message_init(m, LLM_TOOL, content);
    m->tool_call_id = xstrdup(call_id ? call_id : "");
    m->is_error = is_error != 0;
    return 0;
}

int llm_message_add_thinking(struct llm_message *m, const char *block, size_t at)
{
    struct llm_thinking *n = xrealloc(m->thinking, (m->nthinking + 1) * sizeof(*n));

    m->thinking = n;
    n[m->nthinking].block = xstrdup(block ? block : "{}");
    n[m->nthinking].at = at;
    m->nthinking++;
    return 0;
}

void llm_message_release(struct llm_message *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nthinking; i++)
        free(m->thinking[i].block);
    free(m->thinking);
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

void llm_call_tag(unsigned *tag)
{
    static unsigned counter;

    *tag = 0;
    (void)id_random(tag, sizeof(*tag));
    *tag ^= ++counter * 2654435761u; /* distinct in a process even without randomness */
    if (!*tag)
        *tag = 1;
}

void llm_response_release(struct llm_response *r)
{
    if (!r)
        return;
    llm_message_release(&r->message);
    free(r->json);
    free(r->finish_reason);
    free(r->refusal);
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
            *out = xstrndup(p, len);
            return 0;
        }
        cJSON_Delete(j);
    }
    return err_set(ERR_NOTFOUND, "no JSON object in the answer");
}

static const char *const role_names[] = {"system", "user", "assistant", "tool"};

/* An assistant's "thinking": [{"at": N, "block": {...}}] (absent: none). */
static int thinking_from_json(struct llm_message *m, const cJSON *arr, size_t i)
{
    const cJSON *t;

    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return err_set(ERR_INVALID, "messages[%zu].thinking: expected an array", i);
    cJSON_ArrayForEach(t, arr)
    {
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(t, "at");
        const cJSON *block = cJSON_GetObjectItemCaseSensitive(t, "block");
        char *text;
        if (!cJSON_IsObject(block) || !cJSON_IsNumber(at) || at->valuedouble < 0 ||
            at->valuedouble > 1e6)
            return err_set(ERR_INVALID,
                           "messages[%zu].thinking: expected {\"at\": N, \"block\": {...}}", i);
        text = cJSON_PrintUnformatted(block);
        llm_message_add_thinking(m, xcheck(text), (size_t)at->valuedouble);
        cJSON_free(text);
    }
    return 0;
}

int llm_messages_from_json(struct llm_message **out, size_t *n, const cJSON *arr)
{
    struct llm_message *msgs = NULL;
    size_t count = 0, i = 0;
    const cJSON *it;
    int rc = 0;

    if (!cJSON_IsArray(arr))
        return err_set(ERR_INVALID, "messages: expected an array");
    count = (size_t)cJSON_GetArraySize(arr);
    msgs = xcalloc(count ? count : 1, sizeof(*msgs));
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
            msgs[i].content = xstrdup(content->valuestring);
        } else if (cJSON_IsArray(content)) { /* content parts: keep the text ones */
            strbuf sb = STRBUF_INIT;
            const cJSON *part;
            cJSON_ArrayForEach(part, content)
            {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
                if (cJSON_IsString(t) && (rc = strbuf_adds(&sb, t->valuestring)) != 0)
                    break;
            }
            if (rc) {
                strbuf_release(&sb);
                goto out;
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
        if ((rc = thinking_from_json(&msgs[i], cJSON_GetObjectItemCaseSensitive(it, "thinking"),
                                     i)) != 0)
            goto out;
        if (cJSON_IsString(tcid))
            msgs[i].tool_call_id = xstrdup(tcid->valuestring);
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

cJSON *llm_schema_parse(const char *text, const char *what)
{
    cJSON *j;

    if (!text)
        return cJSON_Parse("{\"type\":\"object\",\"properties\":{}}");
    j = cJSON_Parse(text);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        err_set(ERR_INVALID, "%s: not a JSON object", what);
        return NULL;
    }
    return j;
}

/* One tool: {"name", "description" (when it has one), SCHEMA_KEY: its
 * parameters}; NULL (ERR_INVALID) when they are not a JSON object. */
static cJSON *tool_json(const struct llm_tool_def *t, const char *schema_key)
{
    cJSON *schema = llm_schema_parse(t->parameters_json, t->name), *o;

    if (!schema)
        return NULL;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    if (t->description)
        cJSON_AddStringToObject(o, "description", t->description);
    cJSON_AddItemToObject(o, schema_key, schema);
    return o;
}

int llm_tools_json(cJSON *root, const struct llm_request *req, enum llm_kind kind)
{
    cJSON *tools;

    if (!req->ntools)
        return 0;
    tools = cJSON_AddArrayToObject(root, "tools");
    for (size_t i = 0; i < req->ntools; i++) {
        cJSON *fn, *t;
        if (kind == LLM_KIND_ANTHROPIC) {
            if (!(t = tool_json(&req->tools[i], "input_schema")))
                return ERR_INVALID;
        } else {
            if (!(fn = tool_json(&req->tools[i], "parameters")))
                return ERR_INVALID;
            t = cJSON_CreateObject();
            cJSON_AddItemToObject(t, "function", fn);
            cJSON_AddStringToObject(t, "type", "function");
        }
        cJSON_AddItemToArray(tools, t);
    }
    return 0;
}

void llm_message_calls_json(cJSON *o, const struct llm_message *m)
{
    cJSON *calls = cJSON_AddArrayToObject(o, "tool_calls");

    for (size_t k = 0; k < m->ncalls; k++) {
        cJSON *call = cJSON_CreateObject();
        cJSON *fn;
        cJSON_AddStringToObject(call, "id", m->calls[k].id);
        cJSON_AddStringToObject(call, "type", "function");
        fn = cJSON_AddObjectToObject(call, "function");
        cJSON_AddStringToObject(fn, "name", m->calls[k].name);
        cJSON_AddStringToObject(fn, "arguments", m->calls[k].arguments);
        cJSON_AddItemToArray(calls, call);
    }
}

cJSON *llm_message_to_json(const struct llm_message *m)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "role", role_names[m->role]);
    if (m->content)
        cJSON_AddStringToObject(o, "content", m->content);
    else
        cJSON_AddNullToObject(o, "content");
    if (m->ncalls)
        llm_message_calls_json(o, m);
    if (m->tool_call_id)
        cJSON_AddStringToObject(o, "tool_call_id", m->tool_call_id);
    if (m->is_error)
        cJSON_AddBoolToObject(o, "is_error", 1);
    if (m->nthinking) {
        cJSON *arr = cJSON_AddArrayToObject(o, "thinking");
        for (size_t i = 0; i < m->nthinking; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON *b = cJSON_Parse(m->thinking[i].block);
            cJSON_AddNumberToObject(t, "at", (double)m->thinking[i].at);
            cJSON_AddItemToObject(t, "block", b ? b : cJSON_CreateObject());
            cJSON_AddItemToArray(arr, t);
        }
    }
    return o;
}
