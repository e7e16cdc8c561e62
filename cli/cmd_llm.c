/*
 * goald llm chat --stage S [--run ID] [--goal ID] [--item ID]
 *                [--model-index N] [--no-failover] [--json]
 *
 * One chat call through the configured chain, for tests, demos and
 * debugging a provider setup.  Not part of the user contract of
 * docs/design.md §6; documented in docs/llm.md.  Reads the request on stdin:
 * a JSON array of messages (Chat Completions shape), or an object
 * {"messages": [...], "tools": [{"name","description","parameters"}],
 *  "response_schema": {...}, "max_output_tokens": N}.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "llm/llm.h"
#include "util/fsutil.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

static cJSON *response_json(const struct llm_response *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *u;

    cJSON_AddBoolToObject(o, "ok", 1);
    cJSON_AddNumberToObject(o, "model_index", r->model_index);
    cJSON_AddStringToObject(o, "provider", r->provider ? r->provider : "");
    cJSON_AddStringToObject(o, "model", r->model ? r->model : "");
    cJSON_AddItemToObject(o, "message", llm_message_to_json(&r->message));
    if (r->json)
        cJSON_AddItemToObject(o, "json", cJSON_Parse(r->json));
    u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "input", (double)r->usage.input);
    cJSON_AddNumberToObject(u, "cached_input", (double)r->usage.cached_input);
    cJSON_AddNumberToObject(u, "cache_write", (double)r->usage.cache_write);
    cJSON_AddNumberToObject(u, "output", (double)r->usage.output);
    cJSON_AddNumberToObject(o, "cost_usd", r->cost_usd);
    cJSON_AddNumberToObject(o, "latency_ms", (double)r->latency_ms);
    cJSON_AddStringToObject(o, "finish_reason", r->finish_reason ? r->finish_reason : "");
    return o;
}

static cJSON *error_json(const struct llm_error *e, int index)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *er;

    cJSON_AddBoolToObject(o, "ok", 0);
    cJSON_AddNumberToObject(o, "model_index", index);
    er = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(er, "class", llm_error_class_name(e->cls));
    cJSON_AddNumberToObject(er, "status", e->http_status);
    if (e->retry_after_ms >= 0)
        cJSON_AddNumberToObject(er, "retry_after_ms", (double)e->retry_after_ms);
    cJSON_AddStringToObject(er, "message", e->message ? e->message : "");
    return o;
}

/* What `llm chat` sends, parsed from stdin; llm_request points into it.
 * chat_input_release() frees it. */
struct chat_input {
    cJSON *root;
    struct llm_message *msgs;
    size_t nmsgs;
    struct llm_tool_def *tools;
    char **params_text; /* printed tool schemas, one per tool */
    size_t ntools;
    char *schema;
};

static void chat_input_release(struct chat_input *in)
{
    llm_messages_free(in->msgs, in->nmsgs);
    for (size_t i = 0; in->params_text && i < in->ntools; i++)
        cJSON_free(in->params_text[i]);
    free(in->params_text);
    free(in->tools);
    cJSON_free(in->schema);
    cJSON_Delete(in->root);
    memset(in, 0, sizeof(*in));
}

/* The request's tools ({"name", "description", "parameters"}) into in:
 * EXIT_OK or the usage failure. */
static int chat_tools(struct chat_input *in, const cJSON *tools_j)
{
    const cJSON *t;

    in->tools = xcalloc((size_t)cJSON_GetArraySize(tools_j) + 1, sizeof(*in->tools));
    in->params_text = xcalloc((size_t)cJSON_GetArraySize(tools_j) + 1, sizeof(*in->params_text));
    cJSON_ArrayForEach(t, tools_j)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
        cJSON *params = cJSON_GetObjectItemCaseSensitive(t, "parameters");
        if (!cJSON_IsString(name))
            return cli_fail(EXIT_USAGE, "llm chat: stdin: tools[%zu].name: expected a string",
                            in->ntools);
        in->tools[in->ntools].name = name->valuestring;
        in->tools[in->ntools].description = cJSON_IsString(desc) ? desc->valuestring : NULL;
        if (params) /* the printed schema lives in params_text */
            in->tools[in->ntools].parameters_json = in->params_text[in->ntools] =
                cJSON_PrintUnformatted(params);
        in->ntools++;
    }
    return EXIT_OK;
}

/* Read and parse the request on stdin into in: EXIT_OK or the usage
 * failure. */
static int chat_read(struct chat_input *in)
{
    strbuf buf = STRBUF_INIT;
    const cJSON *schema_j, *tools_j;
    int code = EXIT_OK;

    strbuf_init(&buf, 64 << 20);
    if (fs_read_file(&buf, "/dev/stdin", 64 << 20) != 0) {
        code = cli_fail(EXIT_USAGE, "llm chat: stdin: %s", err_last());
        goto out;
    }
    in->root = cJSON_Parse(strbuf_cstr(&buf));
    if (!in->root) {
        code = cli_fail(EXIT_USAGE, "llm chat: stdin: not valid JSON");
        goto out;
    }
    if (llm_messages_from_json(&in->msgs, &in->nmsgs,
                               cJSON_IsArray(in->root)
                                   ? in->root
                                   : cJSON_GetObjectItemCaseSensitive(in->root, "messages")) !=
        0) {
        code = cli_fail(EXIT_USAGE, "llm chat: stdin: %s", err_last());
        goto out;
    }
    schema_j = cJSON_GetObjectItemCaseSensitive(in->root, "response_schema");
    if (cJSON_IsObject(schema_j))
        in->schema = cJSON_PrintUnformatted(schema_j);
    tools_j = cJSON_GetObjectItemCaseSensitive(in->root, "tools");
    if (cJSON_IsArray(tools_j))
        code = chat_tools(in, tools_j);
out:
    strbuf_release(&buf);
    return code;
}

/* The answer (or, with --json, the failure) on stdout; the exit code. */
static int chat_print(struct cli_ctx *c, int rc, const struct llm_response *resp,
                      const struct llm_error *err, int end)
{
    cJSON *o;

    if (rc != 0) {
        if (cli_flag(c, "json")) {
            o = error_json(err, end);
            cli_print_json(o);
            cJSON_Delete(o);
        }
        return cli_fail(EXIT_FAIL, "llm: %s: %s", err->cls ? llm_error_class_name(err->cls) : "error",
                        err->message ? err->message : err_last());
    }
    if (cli_flag(c, "json")) {
        o = response_json(resp);
        cli_print_json(o);
        cJSON_Delete(o);
        return EXIT_OK;
    }
    if (resp->message.content)
        printf("%s\n", resp->message.content);
    for (size_t i = 0; i < resp->message.ncalls; i++)
        printf("tool_call %s %s %s\n", resp->message.calls[i].id, resp->message.calls[i].name,
               resp->message.calls[i].arguments);
    return EXIT_OK;
}

static int run(struct cli_ctx *c)
{
    const char *stage = cli_opt(c, "stage");
    const char *mi = cli_opt(c, "model-index");
    struct chat_input in;
    struct llm_request req;
    struct llm_response resp;
    struct llm_error err;
    const cJSON *max_out;
    llm_client *cl = NULL;
    store *st = NULL;
    int index = 0, end = 0, rc, code;

    memset(&in, 0, sizeof(in));
    memset(&req, 0, sizeof(req));
    memset(&resp, 0, sizeof(resp));
    memset(&err, 0, sizeof(err));
    if (!stage)
        return cli_fail(EXIT_USAGE, "llm chat: --stage is required");
    if (mi) {
        char *e;
        long v = strtol(mi, &e, 10);
        if (*e || e == mi || v < 0 || v > 1000)
            return cli_fail(EXIT_USAGE, "llm chat: --model-index: expected a number >= 0");
        index = (int)v;
    }
    if ((code = chat_read(&in)) != EXIT_OK || (code = cli_store(c, &st)) != 0)
        goto out;
    if (llm_client_open(&cl, st) != 0) {
        code = cli_fail(EXIT_USAGE, "llm: %s", err_last());
        goto out;
    }
    req.stage = stage;
    req.run_id = cli_opt(c, "run");
    req.goal_id = cli_opt(c, "goal");
    req.item_id = cli_opt(c, "item");
    req.messages = in.msgs;
    req.nmessages = in.nmsgs;
    req.tools = in.tools;
    req.ntools = in.ntools;
    req.response_schema = in.schema;
    max_out = cJSON_GetObjectItemCaseSensitive(in.root, "max_output_tokens");
    if (cJSON_IsNumber(max_out))
        req.max_output_tokens = max_out->valueint;
    if (cli_flag(c, "no-failover")) {
        rc = llm_chat(cl, index, &req, &resp, &err);
        end = index;
    } else {
        rc = llm_chat_chain(cl, index, &req, &resp, &err, &end);
    }
    if (rc == ERR_INVALID)
        code = cli_fail(EXIT_USAGE, "llm chat: %s", err_last());
    else
        code = chat_print(c, rc, &resp, &err, end);
out:
    llm_response_release(&resp);
    llm_error_release(&err);
    llm_client_free(cl);
    chat_input_release(&in);
    return code;
}

const struct cli_command cmd_llm_chat = {
    .name = "llm chat",
    .args = "< REQUEST.json",
    .summary = "one chat call through the model chain (testing and debugging)",
    .details = "Reads a JSON array of messages, or {\"messages\", \"tools\", \"response_schema\",\n"
               "\"max_output_tokens\"}, on stdin; prints the answer (--json: the whole response,\n"
               "or {\"ok\": false, \"error\": {\"class\", ...}} on failure, exit 1).  With a run\n"
               "id, tokens and cost are added to the run and its goal.  See docs/llm.md.",
    .opts = (const struct cli_opt[]){{"stage", "S",
                                      "elaborate, plan, execute, review, plan_b or escalate"},
                                     {"run", "ID", "the run (X-Goald-Run; usage is added to it)"},
                                     {"goal", "ID", "the goal (budget check and usage)"},
                                     {"item", "ID", "the work item (events)"},
                                     {"model-index", "N", "start at this chain position (0)"},
                                     {"no-failover", NULL, "stay on one model"},
                                     {"json", NULL, "print JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "{\"ok\": true, \"model_index\", \"provider\", \"model\", \"message\", \"json\", "
                  "\"usage\": {\"input\", \"cached_input\", \"cache_write\", \"output\"}, "
                  "\"cost_usd\", \"latency_ms\", \"finish_reason\"}, or {\"ok\": false, "
                  "\"model_index\", \"error\": {\"class\", \"status\", \"retry_after_ms\", "
                  "\"message\"}}",
    .hidden = 1,
};
