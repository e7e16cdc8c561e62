/* Unit tests: llm/ parsers on fixtures of both APIs, the error classifier,
 * request builders, JSON extraction, redaction, cost, the script provider
 * without a store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm.h"
#include "llm/llm_internal.h"
#include "tests/unit/testutil.h"
#include "util/config.h"
#include "util/fsutil.h"

static char *fixture(const char *name)
{
    const char *src = getenv("GOALD_SOURCE_DIR");
    char path[1024];
    strbuf sb = STRBUF_INIT;

    snprintf(path, sizeof(path), "%s/tests/fixtures/llm/%s", src ? src : GOALD_SOURCE_DIR, name);
    if (fs_read_file(&sb, path, 1 << 20) != 0)
        fail_msg("cannot read %s", path);
    return strbuf_detach(&sb, NULL);
}

static void test_openai_tool_calls(void **state)
{
    struct llm_response r = {0};
    struct llm_error e = {0};
    char *body = fixture("openai_tool_calls.json");

    (void)state;
    assert_int_equal(llm_openai_parse(NULL, body, &r, &e), 0);
    assert_null(r.message.content);
    assert_int_equal(r.message.ncalls, 2);
    assert_string_equal(r.message.calls[0].id, "call_abc123");
    assert_string_equal(r.message.calls[0].name, "read");
    assert_string_equal(r.message.calls[0].arguments, "{\"path\":\"src/main.c\",\"offset\":1}");
    assert_string_equal(r.message.calls[1].id, "call_def456");
    assert_string_equal(r.message.calls[1].name, "grep");
    assert_string_equal(r.finish_reason, "tool_calls");
    assert_string_equal(r.model, "gpt-4o-2024-08-06");
    assert_int_equal(r.usage.input, 1117);
    assert_int_equal(r.usage.cached_input, 1024);
    /* reasoning tokens (192) are inside completion_tokens: not added */
    assert_int_equal(r.usage.output, 346);
    llm_response_release(&r);
    llm_error_release(&e);
    free(body);
}

static void test_openai_text(void **state)
{
    struct llm_response r = {0};
    struct llm_error e = {0};
    char *body = fixture("openai_text.json");

    (void)state;
    assert_int_equal(llm_openai_parse(NULL, body, &r, &e), 0);
    assert_string_equal(r.message.content, "Hello there, how may I assist you today?");
    assert_int_equal(r.message.ncalls, 0);
    assert_string_equal(r.finish_reason, "length");
    assert_int_equal(r.usage.input, 9);
    assert_int_equal(r.usage.cached_input, 0);
    assert_int_equal(r.usage.output, 12);
    llm_response_release(&r);
    free(body);
}

static void test_openai_bad_arguments(void **state)
{
    struct llm_response r = {0};
    struct llm_error e = {0};
    char *body = fixture("openai_bad_arguments.json");

    (void)state;
    assert_int_equal(llm_openai_parse(NULL, body, &r, &e), ERR_FAIL);
    assert_int_equal(e.cls, LLM_ERR_INVALID_RESPONSE);
    assert_non_null(strstr(e.message, "write"));
    assert_null(r.message.calls); /* released on failure */
    llm_error_release(&e);
    free(body);
    /* and bodies that are not what they claim */
    assert_int_equal(llm_openai_parse(NULL, "[1,2]", &r, &e), ERR_FAIL);
    assert_int_equal(e.cls, LLM_ERR_INVALID_RESPONSE);
    llm_error_release(&e);
    assert_int_equal(llm_openai_parse(NULL, "{\"choices\":[]}", &r, &e), ERR_FAIL);
    assert_int_equal(e.cls, LLM_ERR_INVALID_RESPONSE);
    llm_error_release(&e);
    assert_int_equal(
        llm_openai_parse(NULL, "{\"choices\":[{\"message\":{\"content\":42}}]}", &r, &e), ERR_FAIL);
    llm_error_release(&e);
    /* arguments the check passed and cJSON refuses (found by fuzz_llm_openai):
     * a lone low surrogate, a high one without its low one */
    for (int i = 0; i < 2; i++) {
        const char *esc = i ? "\\\\ud800x" : "\\\\udddd";
        char b[512];
        snprintf(b, sizeof(b),
                 "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"c\",\"function\":"
                 "{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"%s\\\"}\"}}]}}]}",
                 esc);
        assert_int_equal(llm_openai_parse(NULL, b, &r, &e), ERR_FAIL);
        assert_int_equal(e.cls, LLM_ERR_INVALID_RESPONSE);
        llm_error_release(&e);
    }
}

/* Token counts from a broken or hostile server: negative ones would give
 * budget back, huge ones overflowed the conversion (found by fuzz_llm_*). */
static void test_usage_hostile(void **state)
{
    struct llm_response r = {0};
    struct llm_error e = {0};

    (void)state;
    assert_int_equal(llm_openai_parse(NULL,
                                      "{\"choices\":[{\"message\":{\"content\":\"x\"}}],"
                                      "\"usage\":{\"prompt_tokens\":-2,\"completion_tokens\":1e300,"
                                      "\"prompt_tokens_details\":{\"cached_tokens\":-1e300}}}",
                                      &r, &e),
                     0);
    assert_int_equal(r.usage.input, 0);
    assert_int_equal(r.usage.output, (int64_t)1e15);
    assert_int_equal(r.usage.cached_input, 0);
    llm_response_release(&r);
    assert_int_equal(llm_anthropic_parse(NULL,
                                         "{\"content\":[],\"usage\":{\"input_tokens\":1e19,"
                                         "\"cache_read_input_tokens\":9e18,"
                                         "\"cache_creation_input_tokens\":-5,\"output_tokens\":7}}",
                                         &r, &e),
                     0);
    assert_int_equal(r.usage.input, (int64_t)2e15);
    assert_int_equal(r.usage.cached_input, (int64_t)1e15);
    assert_int_equal(r.usage.cache_write, 0);
    assert_int_equal(r.usage.output, 7);
    llm_response_release(&r);
}

static void test_anthropic_tool_use(void **state)
{
    struct llm_response r = {0};
    struct llm_error e = {0};
    char *body = fixture("anthropic_tool_use.json");

    (void)state;
    assert_int_equal(llm_anthropic_parse(NULL, body, &r, &e), 0);
    assert_string_equal(r.message.content, "I'll look at both files.");
    assert_int_equal(r.message.ncalls, 2);
    assert_string_equal(r.message.calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_string_equal(r.message.calls[0].name, "read");
    assert_string_equal(r.message.calls[0].arguments, "{\"path\":\"Makefile\"}");
    assert_string_equal(r.message.calls[1].arguments, "{\"pattern\":\"TODO\",\"context\":2}");
    assert_string_equal(r.finish_reason, "tool_calls");
    assert_string_equal(r.model, "claude-sonnet-4-20250514");
    assert_int_equal(r.usage.input, 45 + 200 + 3000);
    assert_int_equal(r.usage.cached_input, 3000);
    assert_int_equal(r.usage.cache_write, 200);
    assert_int_equal(r.usage.output, 110);
    llm_response_release(&r);
    free(body);
}

struct class_case {
    const char *file;
    enum llm_kind kind;
    int status;
    enum llm_error_class want;
};

static void test_classify_fixtures(void **state)
{
    static const struct class_case cases[] = {
        {"openai_error_context.json", LLM_KIND_OPENAI, 400, LLM_ERR_CONTEXT_LENGTH},
        {"openai_error_rate.json", LLM_KIND_OPENAI, 429, LLM_ERR_RATE_LIMIT},
        {"openai_error_quota.json", LLM_KIND_OPENAI, 429, LLM_ERR_BUDGET},
        {"openai_error_auth.json", LLM_KIND_OPENAI, 401, LLM_ERR_AUTH},
        {"anthropic_error_overloaded.json", LLM_KIND_ANTHROPIC, 529, LLM_ERR_PROVIDER_API},
        {"anthropic_error_rate.json", LLM_KIND_ANTHROPIC, 429, LLM_ERR_RATE_LIMIT},
        {"anthropic_error_prompt_too_long.json", LLM_KIND_ANTHROPIC, 400, LLM_ERR_CONTEXT_LENGTH},
        {"anthropic_error_auth.json", LLM_KIND_ANTHROPIC, 401, LLM_ERR_AUTH},
        /* the body decides over the status: a 200 would not matter */
        {"openai_error_context.json", LLM_KIND_OPENAI, 200, LLM_ERR_CONTEXT_LENGTH},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct llm_error e = {0};
        char *body = fixture(cases[i].file);
        llm_classify_http(NULL, cases[i].kind, cases[i].status, body, -1, &e);
        if (e.cls != cases[i].want)
            fail_msg("%s: class %s, want %s", cases[i].file, llm_error_class_name(e.cls),
                     llm_error_class_name(cases[i].want));
        assert_int_equal(e.http_status, cases[i].status);
        assert_non_null(e.message);
        llm_error_release(&e);
        free(body);
    }
}

static void test_classify_status(void **state)
{
    static const struct {
        int status;
        const char *body;
        enum llm_error_class want;
    } cases[] = {
        {429, "", LLM_ERR_RATE_LIMIT},
        {500, "<html>oops</html>", LLM_ERR_PROVIDER_API},
        {502, "", LLM_ERR_PROVIDER_API},
        {503, "{\"error\":\"model is loading\"}", LLM_ERR_PROVIDER_API},
        {504, "", LLM_ERR_TIMEOUT},
        {408, "", LLM_ERR_TIMEOUT},
        {401, "", LLM_ERR_AUTH},
        {403, "", LLM_ERR_AUTH},
        /* an unknown model is the configuration's error */
        {404, "{\"error\":{\"message\":\"model not found\",\"type\":\"invalid_request_error\"}}",
         LLM_ERR_CONFIG},
        {404, "{\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-x\"}}",
         LLM_ERR_CONFIG},
        {400, "{\"error\":{\"message\":\"x\",\"code\":\"model_not_found\"}}", LLM_ERR_CONFIG},
        /* a 404 that names no model: a wrong path, not the model */
        {404, "404 page not found", LLM_ERR_PROVIDER_API},
        {413, "", LLM_ERR_CONTEXT_LENGTH},
        {402, "", LLM_ERR_BUDGET},
        /* Ollama-style string error saying the context is too long */
        {400, "{\"error\":\"input length exceeds the context length\"}", LLM_ERR_CONTEXT_LENGTH},
        /* free text alone does not make a class: a 500 mentioning rate limits */
        {500,
         "{\"error\":{\"message\":\"upstream rate limiter crashed\",\"type\":\"server_error\"}}",
         LLM_ERR_PROVIDER_API},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct llm_error e = {0};
        llm_classify_http(NULL, LLM_KIND_OPENAI, cases[i].status, cases[i].body, -1, &e);
        if (e.cls != cases[i].want)
            fail_msg("case %zu (HTTP %d): class %s, want %s", i, cases[i].status,
                     llm_error_class_name(e.cls), llm_error_class_name(cases[i].want));
        llm_error_release(&e);
    }
}

static void test_classify_redacts(void **state)
{
    struct llm_error e = {0};
    char *body = fixture("openai_error_auth.json");

    (void)state;
    llm_classify_http(NULL, LLM_KIND_OPENAI, 401, body, -1, &e);
    assert_null(strstr(e.message, "sk-test-0123456789abcdefghij"));
    assert_non_null(strstr(e.message, "***REDACTED***"));
    llm_error_release(&e);
    free(body);
}

static void test_class_names(void **state)
{
    (void)state;
    static const char *const names[] = {"rate_limit",     "provider_api",     "timeout", "auth",
                                        "context_length", "invalid_response", "budget",
                                        "config"};
    for (size_t i = 0; i < 8; i++) {
        int c = llm_error_class_parse(names[i]);
        assert_true(c > 0);
        assert_string_equal(llm_error_class_name((enum llm_error_class)c), names[i]);
    }
    assert_int_equal(llm_error_class_parse("nope"), -1);
    assert_false(llm_error_fails_over(LLM_ERR_BUDGET));
    assert_true(llm_error_fails_over(LLM_ERR_CONTEXT_LENGTH));
}

static void test_json_extract(void **state)
{
    char *out = NULL;

    (void)state;
    assert_int_equal(llm_json_extract(&out, "{\"a\":1}"), 0);
    assert_string_equal(out, "{\"a\":1}");
    free(out);
    assert_int_equal(llm_json_extract(&out, "Sure:\n```json\n{\"a\": {\"b\": \"}\"}}\n```\nbye"),
                     0);
    assert_string_equal(out, "{\"a\": {\"b\": \"}\"}}");
    free(out);
    /* a broken first object is skipped for a good later one */
    assert_int_equal(llm_json_extract(&out, "{oops} then {\"ok\":true}"), 0);
    assert_string_equal(out, "{\"ok\":true}");
    free(out);
    assert_int_equal(llm_json_extract(&out, "no json here [1,2]"), ERR_NOTFOUND);
    assert_int_equal(llm_json_extract(&out, "{\"unbalanced\": 1"), ERR_NOTFOUND);
    assert_int_equal(llm_json_extract(&out, NULL), ERR_NOTFOUND);
}

static void test_redact(void **state)
{
    char *s;

    (void)state;
    setenv("OPENAI_API_KEY", "plain-key-without-prefix-1234", 1);
    s = llm_redact(NULL, "key=plain-key-without-prefix-1234; other sk-abcdefghijklmnop, "
                         "Authorization: Bearer eyJhbGciOi.xyz ok sk-short");
    assert_null(strstr(s, "plain-key-without"));
    assert_null(strstr(s, "sk-abcdefghijklmnop"));
    assert_null(strstr(s, "eyJhbGciOi"));
    assert_non_null(strstr(s, "Bearer ***REDACTED***"));
    assert_non_null(strstr(s, "sk-short")); /* too short to be a key */
    free(s);
    unsetenv("OPENAI_API_KEY");
}

static void test_cost(void **state)
{
    struct llm_usage u = {.input = 1000000, .cached_input = 400000, .output = 500000};

    (void)state;
    /* 0.6M at 2.5 + 0.4M at 1.25 + 0.5M at 10 */
    assert_true(llm_cost(&u, 2.5, 1.25, 10.0) > 6.999999 &&
                llm_cost(&u, 2.5, 1.25, 10.0) < 7.000001);
    u.cached_input = 2000000; /* more cached than input: capped */
    assert_true(llm_cost(&u, 1, 0, 0) == 0);
}

static void test_openai_build(void **state)
{
    struct llm_model m = {.kind = LLM_KIND_OPENAI, .model = "gpt-x"};
    struct llm_message msgs[3];
    struct llm_tool_def tool = {"read", "read a file", "{\"type\":\"object\"}"};
    struct llm_request req = {0};
    strbuf sb = STRBUF_INIT;
    cJSON *j;

    (void)state;
    llm_message_init(&msgs[0], LLM_USER, "hi");
    llm_message_init(&msgs[1], LLM_ASSISTANT, NULL);
    llm_message_add_call(&msgs[1], "c1", "read", "{\"path\":\"a\"}");
    llm_message_init(&msgs[2], LLM_TOOL, "no such file");
    msgs[2].tool_call_id = strdup("c1");
    msgs[2].is_error = 1;
    req.stage = "plan";
    req.messages = msgs;
    req.nmessages = 3;
    req.tools = &tool;
    req.ntools = 1;
    req.response_schema = "{\"type\":\"object\"}";
    assert_int_equal(llm_openai_build(&sb, &m, &req, 100, 1), 0);
    j = cJSON_Parse(strbuf_cstr(&sb));
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "gpt-x");
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 100);
    cJSON *ms = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetArraySize(ms), 3);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 1), "content")));
    cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 1), "tool_calls"), 0);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")->valuestring,
        "{\"path\":\"a\"}");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 2), "tool_call_id")->valuestring,
                        "c1");
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 2), "content")->valuestring,
                           "[tool error]"));
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(j, "response_format"), "json_schema"), "name")
            ->valuestring,
        "plan");
    cJSON_Delete(j);
    /* without response_format: the schema goes into a system message */
    strbuf_reset(&sb);
    m.use_max_completion = 1;
    assert_int_equal(llm_openai_build(&sb, &m, &req, 100, 0), 0);
    j = cJSON_Parse(strbuf_cstr(&sb));
    assert_null(cJSON_GetObjectItem(j, "response_format"));
    assert_int_equal(cJSON_GetObjectItem(j, "max_completion_tokens")->valueint, 100);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "messages")), 4);
    cJSON_Delete(j);
    /* a tool schema that is not JSON is the caller's error */
    tool.parameters_json = "{nope";
    strbuf_reset(&sb);
    assert_int_equal(llm_openai_build(&sb, &m, &req, 100, 1), ERR_INVALID);
    strbuf_release(&sb);
    for (int i = 0; i < 3; i++)
        llm_message_release(&msgs[i]);
}

static void test_anthropic_build(void **state)
{
    struct llm_model m = {.kind = LLM_KIND_ANTHROPIC, .model = "claude-x"};
    struct llm_message msgs[5];
    struct llm_request req = {0};
    strbuf sb = STRBUF_INIT;
    cJSON *j, *ms;

    (void)state;
    llm_message_init(&msgs[0], LLM_SYSTEM, "sys");
    llm_message_init(&msgs[1], LLM_USER, "do it");
    llm_message_init(&msgs[2], LLM_ASSISTANT, NULL);
    llm_message_add_call(&msgs[2], "t1", "ls", "{}");
    llm_message_add_call(&msgs[2], "t2", "read", "{\"path\":\"x\"}");
    llm_message_tool_result(&msgs[3], "t1", "a b", 0);
    llm_message_init(&msgs[4], LLM_TOOL, "text of x");
    msgs[4].tool_call_id = strdup("t2");
    req.messages = msgs;
    req.nmessages = 5;
    assert_int_equal(llm_anthropic_build(&sb, &m, &req, 0), 0);
    j = cJSON_Parse(strbuf_cstr(&sb));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "system"), 0), "text")
            ->valuestring,
        "sys");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "system"), 0),
                                        "cache_control"));
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 4096);
    ms = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetArraySize(ms), 3); /* both tool results in one user turn */
    cJSON *asst = cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 1), "content");
    assert_int_equal(cJSON_GetArraySize(asst), 2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(asst, 1), "input"), "path")
            ->valuestring,
        "x");
    cJSON *res = cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 2), "content");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "tool_use_id")->valuestring,
                        "t2");
    cJSON_Delete(j);
    strbuf_release(&sb);
    for (int i = 0; i < 5; i++)
        llm_message_release(&msgs[i]);
}

static void test_messages_json(void **state)
{
    cJSON *arr =
        cJSON_Parse("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                    "{\"type\":\"text\",\"text\":\"b\"}]},"
                    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"x\","
                    "\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":"
                    "\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"ok\","
                    "\"is_error\":true}]");
    struct llm_message *m = NULL;
    size_t n = 0;
    cJSON *back;

    (void)state;
    assert_int_equal(llm_messages_from_json(&m, &n, arr), 0);
    assert_int_equal(n, 3);
    assert_string_equal(m[0].content, "ab");
    assert_int_equal(m[1].ncalls, 1);
    assert_string_equal(m[1].calls[0].name, "ls");
    assert_int_equal(m[2].is_error, 1);
    back = llm_message_to_json(&m[1]);
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(back, "tool_calls"), 0),
                                "function"),
            "name")
            ->valuestring,
        "ls");
    cJSON_Delete(back);
    llm_messages_free(m, n);
    cJSON_Delete(arr);
    arr = cJSON_Parse("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"wizard\"}]");
    assert_int_equal(llm_messages_from_json(&m, &n, arr), ERR_INVALID);
    assert_non_null(strstr(err_last(), "messages[1].role"));
    cJSON_Delete(arr);
    arr = cJSON_Parse("[{\"role\":\"tool\",\"content\":\"a\"}]");
    assert_int_equal(llm_messages_from_json(&m, &n, arr), ERR_INVALID);
    cJSON_Delete(arr);
}

/* The script provider with no store: cursors in memory, per stage. */
static void test_script_memory(void **state)
{
    char path[512];
    llm_client *c = NULL;
    struct llm_message msg;
    struct llm_request req = {0};
    struct llm_response r;
    struct llm_error e;
    const char *script = "{\"stage\":\"review\",\"content\":\"R\"}\n"
                         "{\"content\":\"A\",\"usage\":{\"input\":3,\"output\":1}}\n"
                         "{\"error\":\"auth\",\"status\":401}\n"
                         "{\"content\":\"B\"}\n";
    int idx = -1;

    (void)state;
    testutil_tmp_path(path, sizeof(path), "s.jsonl");
    assert_int_equal(fs_write_atomic(path, script, strlen(script), 0600), 0);
    setenv("GOALD_LLM_SCRIPT", path, 1);
    setenv("GOALD_LLM_RETRY_BACKOFF_MS", "1", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_nmodels(c), 1);
    llm_message_init(&msg, LLM_USER, "x");
    req.messages = &msg;
    req.nmessages = 1;
    req.stage = "execute";
    assert_int_equal(llm_chat(c, 0, &req, &r, &e), 0);
    assert_string_equal(r.message.content, "A");
    assert_int_equal(r.usage.input, 3);
    llm_response_release(&r);
    llm_error_release(&e);
    /* auth: not retried, no failover with one model */
    assert_int_equal(llm_chat_chain(c, 0, &req, &r, &e, &idx), ERR_FAIL);
    assert_int_equal(e.cls, LLM_ERR_AUTH);
    assert_int_equal(e.http_status, 401);
    assert_int_equal(idx, 0);
    llm_error_release(&e);
    req.stage = "review";
    assert_int_equal(llm_chat(c, 0, &req, &r, &e), 0);
    assert_string_equal(r.message.content, "R");
    llm_response_release(&r);
    req.stage = "execute";
    assert_int_equal(llm_chat(c, 0, &req, &r, &e), 0);
    assert_string_equal(r.message.content, "B");
    llm_response_release(&r);
    assert_int_equal(llm_chat(c, 0, &req, &r, &e), ERR_FAIL);
    assert_int_equal(e.cls, LLM_ERR_INVALID_RESPONSE);
    assert_non_null(strstr(e.message, "script exhausted"));
    llm_error_release(&e);
    /* a bad index is the caller's error */
    assert_int_equal(llm_chat(c, 5, &req, &r, &e), ERR_INVALID);
    llm_message_release(&msg);
    llm_client_free(c);
    unsetenv("GOALD_LLM_SCRIPT");
    unsetenv("GOALD_LLM_RETRY_BACKOFF_MS");
    config_reset();
}

static void test_config_chain(void **state)
{
    char path[512];
    llm_client *c = NULL;
    struct llm_model_info mi;
    const char *cfg =
        "{\"llm\":{\"models\":[{\"provider\":\"openai\",\"model\":\"gpt-4o-mini\"},"
        "{\"provider\":\"anthropic\",\"model\":\"claude-x\",\"base_url\":\"http://h/v1/\","
        "\"api_key_env\":\"MY_KEY\",\"price_in\":1,\"price_out\":2}]}}";

    (void)state;
    testutil_tmp_path(path, sizeof(path), "cfg.json");
    assert_int_equal(fs_write_atomic(path, cfg, strlen(cfg), 0600), 0);
    unsetenv("GOALD_LLM_API_KEY");
    setenv("MY_KEY", "secret-value-123456", 1);
    assert_int_equal(config_load(path), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_nmodels(c), 2);
    assert_int_equal(llm_client_model(c, 0, &mi), 0);
    assert_string_equal(mi.base_url, "https://api.openai.com/v1");
    assert_string_equal(mi.api_key_env, "OPENAI_API_KEY");
    assert_true(mi.price_in == 0.15); /* the default table */
    assert_int_equal(llm_client_model(c, 1, &mi), 0);
    assert_string_equal(mi.base_url, "http://h/v1");
    assert_string_equal(mi.api_key_env, "MY_KEY");
    assert_int_equal(mi.key_set, 1);
    /* a model the table does not know: cached input at the input price */
    assert_true(mi.price_in == 1 && mi.price_out == 2 && mi.price_cached_in == 1);
    /* a configured key variable's value is redacted anywhere */
    char *s = llm_redact(c, "echo secret-value-123456");
    assert_string_equal(s, "echo ***REDACTED***");
    free(s);
    llm_client_free(c);
    /* GOALD_LLM_API_KEY is the shortcut's: a chain entry keeps its provider's */
    setenv("GOALD_LLM_API_KEY", "k-123456789", 1);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    llm_client_model(c, 0, &mi);
    assert_string_equal(mi.api_key_env, "OPENAI_API_KEY");
    llm_client_free(c);
    /* the environment shortcut wins over the file's chain */
    setenv("GOALD_LLM_MODEL", "env-model", 1);
    assert_int_equal(config_load(path), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_nmodels(c), 1);
    llm_client_model(c, 0, &mi);
    assert_string_equal(mi.model, "env-model");
    assert_string_equal(mi.api_key_env, "GOALD_LLM_API_KEY");
    llm_client_free(c);
    unsetenv("GOALD_LLM_MODEL");
    unsetenv("GOALD_LLM_API_KEY");
    unsetenv("MY_KEY");
    config_reset();
}

/* Every prefix of every fixture, and the fixtures with one byte flipped:
 * the parsers answer (a response, or invalid_response) and never crash
 * or leak (ASan). */
static void test_parse_damaged(void **state)
{
    static const char *const files[] = {"openai_tool_calls.json", "openai_text.json",
                                        "anthropic_tool_use.json", "openai_error_rate.json",
                                        "anthropic_error_overloaded.json"};
    (void)state;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char *body = fixture(files[f]);
        size_t n = strlen(body);
        for (size_t cut = 0; cut <= n; cut++) {
            char *p = strndup(body, cut);
            for (int kind = 0; kind < 2; kind++) {
                struct llm_response r = {0};
                struct llm_error e = {0};
                int rc =
                    kind ? llm_anthropic_parse(NULL, p, &r, &e) : llm_openai_parse(NULL, p, &r, &e);
                if (rc != 0)
                    assert_int_not_equal(e.cls, LLM_ERR_NONE);
                llm_response_release(&r);
                llm_error_release(&e);
            }
            free(p);
        }
        for (size_t i = 0; i < n; i += 3) {
            char saved = body[i];
            body[i] = (char)(saved ^ 0x5a);
            for (int kind = 0; kind < 2; kind++) {
                struct llm_response r = {0};
                struct llm_error e = {0};
                int rc = kind ? llm_anthropic_parse(NULL, body, &r, &e)
                              : llm_openai_parse(NULL, body, &r, &e);
                if (rc != 0)
                    assert_int_not_equal(e.cls, LLM_ERR_NONE);
                llm_response_release(&r);
                llm_error_release(&e);
            }
            body[i] = saved;
        }
        free(body);
    }
}

/* Thinking blocks: kept whole and in their place, sent back first in the
 * turn (interleaved ones after their call); tool ids outside Anthropic's
 * pattern normalised alike; a cut answer's broken calls left out. */
static void test_anthropic_thinking(void **state)
{
    const char *body =
        "{\"type\":\"message\",\"content\":["
        "{\"type\":\"thinking\",\"thinking\":\"a \\\"b\\\" \\u00e9\\n\",\"signature\":\"S1\"},"
        "{\"type\":\"redacted_thinking\",\"data\":\"D1\"},"
        "{\"type\":\"text\",\"text\":\"hi\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"ls\",\"input\":{}},"
        "{\"type\":\"thinking\",\"thinking\":\"then\",\"signature\":\"S2\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"ls\",\"input\":{}}],"
        "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}";
    struct llm_model m = {.kind = LLM_KIND_ANTHROPIC, .model = "claude-x"};
    struct llm_response r = {0};
    struct llm_error e = {0};
    struct llm_message msgs[2];
    struct llm_request req = {0};
    strbuf sb = STRBUF_INIT;
    cJSON *j, *content;
    char id[128];

    (void)state;
    assert_int_equal(llm_anthropic_parse(NULL, body, &r, &e), 0);
    assert_int_equal(r.message.nthinking, 3);
    assert_int_equal(r.message.thinking[0].at, 0);
    assert_int_equal(r.message.thinking[1].at, 0);
    assert_int_equal(r.message.thinking[2].at, 1);
    llm_message_init(&msgs[0], LLM_USER, "go");
    msgs[1] = r.message;
    memset(&r.message, 0, sizeof(r.message));
    req.messages = msgs;
    req.nmessages = 2;
    assert_int_equal(llm_anthropic_build(&sb, &m, &req, 100), 0);
    j = cJSON_Parse(strbuf_cstr(&sb));
    content =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "messages"), 1), "content");
    assert_int_equal(cJSON_GetArraySize(content), 6);
    const char *types[] = {"thinking", "redacted_thinking", "text",
                           "tool_use", "thinking",          "tool_use"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetArrayItem(content, i), "type")->valuestring, types[i]);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0), "thinking")->valuestring,
        "a \"b\" \xc3\xa9\n");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0), "signature")->valuestring, "S1");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 1), "data")->valuestring,
                        "D1");
    cJSON_Delete(j);
    strbuf_release(&sb);
    llm_message_release(&msgs[0]);
    llm_message_release(&msgs[1]);
    llm_response_release(&r);

    llm_anthropic_tool_id("toolu_01AbC-x", id, sizeof(id));
    assert_string_equal(id, "toolu_01AbC-x");
    llm_anthropic_tool_id("functions.read:0", id, sizeof(id));
    assert_int_equal(strncmp(id, "functions_read_0_", 17), 0);
    assert_int_equal(strlen(id), 25);
    llm_anthropic_tool_id("", id, sizeof(id));
    assert_int_equal(strncmp(id, "id_", 3), 0);

    /* cut at max_tokens: a tool_use whose input is not an object is left out */
    assert_int_equal(llm_anthropic_parse(NULL,
                                         "{\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
                                         "\"name\":\"write\",\"input\":\"{\\\"pa\"}],"
                                         "\"stop_reason\":\"max_tokens\"}",
                                         &r, &e),
                     0);
    assert_int_equal(r.message.ncalls, 0);
    assert_string_equal(r.finish_reason, "length");
    llm_response_release(&r);
    assert_int_equal(llm_openai_parse(NULL,
                                      "{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"c\","
                                      "\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"a\"}}]},"
                                      "\"finish_reason\":\"length\"}]}",
                                      &r, &e),
                     0);
    assert_int_equal(r.message.ncalls, 0);
    llm_response_release(&r);
    llm_error_release(&e);
}

/* The output limit a 400 states, and Anthropic's context limit class. */
static void test_output_limit(void **state)
{
    struct llm_error e = {0};

    (void)state;
    assert_int_equal(llm_output_limit_stated(
                         400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
                              "\"message\":\"max_tokens: 8192 > 4096, which is the maximum allowed "
                              "number of output tokens for claude-3-opus-20240229\"}}"),
                     4096);
    assert_int_equal(llm_output_limit_stated(
                         400, "{\"error\":{\"message\":\"max_tokens is too large: 8192. This model "
                              "supports at most 4096 completion tokens, whereas you provided "
                              "8192.\",\"param\":\"max_tokens\",\"code\":\"invalid_value\"}}"),
                     4096);
    assert_int_equal(llm_output_limit_stated(400, "{\"error\":{\"message\":\"bad\"}}"), 0);
    assert_int_equal(llm_output_limit_stated(500, "{\"error\":{\"message\":\"max_tokens: 9 > 4, "
                                                  "which is the maximum allowed\"}}"),
                     0);
    llm_classify_http(
        NULL, LLM_KIND_ANTHROPIC, 400,
        "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
        "\"input length and `max_tokens` exceed context limit: 197611 + 8192 > 200000, "
        "decrease input length or `max_tokens` and try again\"}}",
        -1, &e);
    assert_int_equal(e.cls, LLM_ERR_CONTEXT_LENGTH);
    llm_error_release(&e);
    assert_string_equal(llm_error_class_name(LLM_ERR_TRUNCATED), "truncated");
    assert_int_equal(llm_error_class_parse("refused"), LLM_ERR_REFUSED);
}

/* The price table: current families at their list prices, dated
 * snapshots as their family, and no family priced by a shorter or longer
 * one's row. */
static void test_prices_families(void **state)
{
    static const struct {
        const char *model;
        int known;
        double in, cached, out;
    } cases[] = {
        {"gpt-5", 1, 1.25, 0.125, 10.00},
        {"gpt-5-2025-08-07", 1, 1.25, 0.125, 10.00},
        {"gpt-5-mini", 1, 0.25, 0.025, 2.00},
        {"gpt-5-mini-2025-08-07", 1, 0.25, 0.025, 2.00},
        {"gpt-5-nano", 1, 0.05, 0.005, 0.40},
        {"gpt-5.5", 1, 5.00, 0.50, 30.00},
        {"gpt-5.4-mini", 1, 0.75, 0.075, 4.50},
        {"gpt-5-pro", 0, 0, 0, 0},  /* not gpt-5's */
        {"gpt-5.3", 0, 0, 0, 0},    /* not gpt-5's */
        {"gpt-50", 0, 0, 0, 0},
        {"gpt-4o", 1, 2.50, 1.25, 10.00},
        {"gpt-4o-mini-2024-07-18", 1, 0.15, 0.075, 0.60},
        {"gpt-4o-2024-05-13", 1, 5.00, 5.00, 15.00},
        {"gpt-4o-audio-preview", 0, 0, 0, 0},
        {"o3", 1, 2.00, 0.50, 8.00},
        {"o3-pro", 0, 0, 0, 0},
        {"claude-haiku-4-5", 1, 1.00, 0.10, 5.00},
        {"claude-haiku-4-5-20251001", 1, 1.00, 0.10, 5.00},
        {"claude-sonnet-4-5-20250929", 1, 3.00, 0.30, 15.00},
        {"claude-opus-4-5-20251101", 1, 5.00, 0.50, 25.00}, /* not Opus 4's */
        {"claude-opus-4-20250514", 1, 15.00, 1.50, 75.00},
        {"claude-opus-4-1-20250805", 1, 15.00, 1.50, 75.00},
        {"claude-sonnet-5", 1, 2.00, 0.20, 10.00},
        {"claude-opus-5-5", 1, 4.00, 0.20, 20.00},
        {"claude-3-5-haiku-latest", 1, 0.80, 0.08, 4.00},
        {"claude-haiku-5-5", 0, 0, 0, 0}, /* priced by prompt length: not in the table */
        {"claude-opus-4-9", 0, 0, 0, 0},
        {"qwen2.5-coder:7b", 0, 0, 0, 0},
        {"", 0, 0, 0, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double in = -1, cached = -1, out = -1;
        int known = llm_price_default(cases[i].model, &in, &cached, &out);
        if (known != cases[i].known || in != cases[i].in || cached != cases[i].cached ||
            out != cases[i].out)
            fail_msg("%s: known %d %g/%g/%g, expected %d %g/%g/%g", cases[i].model, known, in,
                     cached, out, cases[i].known, cases[i].in, cases[i].cached, cases[i].out);
    }
}

/* A chain with a model of no known price cannot keep a USD budget: the
 * check names the model and the settings that price it. */
static void test_prices_check(void **state)
{
    char path[512];
    llm_client *c = NULL;
    struct llm_model_info mi;
    const char *cfg = "{\"llm\":{\"models\":[{\"provider\":\"openai\",\"model\":\"gpt-5\"},"
                      "{\"provider\":\"openai\",\"model\":\"local-x\",\"price_in\":0}]}}";

    (void)state;
    unsetenv("GOALD_LLM_MODEL");
    setenv("GOALD_LLM_MODEL", "qwen3:8b", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_prices_check(c), ERR_INVALID);
    assert_non_null(strstr(err_last(), "model qwen3:8b has no known price"));
    assert_non_null(strstr(err_last(), "llm.price_in and llm.price_out"));
    llm_client_model(c, 0, &mi);
    assert_int_equal(mi.price_known, 0);
    llm_client_free(c);
    /* priced by the settings (free: a local model) */
    setenv("GOALD_LLM_PRICE_IN", "0", 1);
    setenv("GOALD_LLM_PRICE_OUT", "0", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_prices_check(c), 0);
    llm_client_free(c);
    unsetenv("GOALD_LLM_PRICE_IN");
    unsetenv("GOALD_LLM_PRICE_OUT");
    unsetenv("GOALD_LLM_MODEL");
    /* a chain: only an input price is not a price */
    testutil_tmp_path(path, sizeof(path), "prices.json");
    assert_int_equal(fs_write_atomic(path, cfg, strlen(cfg), 0600), 0);
    assert_int_equal(config_load(path), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_prices_check(c), ERR_INVALID);
    assert_non_null(strstr(err_last(), "model local-x (llm.models[1]) has no known price"));
    assert_non_null(strstr(err_last(), "llm.models[1].price_in"));
    llm_client_free(c);
    /* a script model costs nothing */
    setenv("GOALD_LLM_SCRIPT", path, 1);
    config_reset();
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(llm_client_open(&c, NULL), 0);
    assert_int_equal(llm_client_prices_check(c), 0);
    llm_client_free(c);
    unsetenv("GOALD_LLM_SCRIPT");
    config_reset();
}

/* The window an Ollama server applies: the parameters' num_ctx, else the
 * loaded model's context_length (/api/ps), else 4096; never more than the
 * trained length; 0 for an answer that is not Ollama's. */
static void test_ollama_window(void **state)
{
    /* only a server of the operator's own is asked: a public provider
     * would answer every job's probe with a 404 */
    assert_true(llm_url_is_local("http://127.0.0.1:11434/v1"));
    assert_true(llm_url_is_local("http://localhost:11434/v1"));
    assert_true(llm_url_is_local("http://[::1]:11434/v1"));
    assert_true(llm_url_is_local("http://ollama:11434/v1"));
    assert_true(llm_url_is_local("http://192.168.1.5:11434/v1"));
    assert_true(llm_url_is_local("http://172.20.0.2/v1"));
    assert_false(llm_url_is_local("https://openrouter.ai/api/v1"));
    assert_false(llm_url_is_local("https://api.openai.com/v1"));
    assert_false(llm_url_is_local("http://172.32.0.1/v1"));
    assert_false(llm_url_is_local("http://8.8.8.8/v1"));

    const char *show_ctx = "{\"model_info\":{\"general.architecture\":\"qwen2\","
                           "\"qwen2.context_length\":32768},\"parameters\":\"num_ctx    "
                           "        8192\\nstop \\\"<|im_end|>\\\"\"}";
    const char *show_plain = "{\"model_info\":{\"llama.context_length\":131072},"
                             "\"parameters\":\"stop \\\"<|eot_id|>\\\"\"}";
    const char *show_small = "{\"model_info\":{\"llama.context_length\":2048},"
                             "\"parameters\":\"num_ctx 8192\"}";
    const char *ps = "{\"models\":[{\"name\":\"other:1b\",\"context_length\":2048},"
                     "{\"name\":\"llama3.1:8b\",\"model\":\"llama3.1:8b\","
                     "\"context_length\":65536}]}";

    (void)state;
    assert_int_equal(llm_ollama_window(show_ctx, NULL, "qwen2.5-coder:7b"), 8192);
    assert_int_equal(llm_ollama_window(show_ctx, ps, "qwen2.5-coder:7b"), 8192);
    assert_int_equal(llm_ollama_window(show_plain, NULL, "llama3.1:8b"), 4096);
    assert_int_equal(llm_ollama_window(show_plain, ps, "llama3.1:8b"), 65536);
    assert_int_equal(llm_ollama_window(show_plain, ps, "mistral:7b"), 4096);
    assert_int_equal(llm_ollama_window(show_small, NULL, "x"), 2048);
    assert_int_equal(llm_ollama_window("{\"error\":\"model not found\"}", NULL, "x"), 0);
    assert_int_equal(llm_ollama_window("404 page not found", NULL, "x"), 0);
    assert_int_equal(llm_ollama_window(NULL, NULL, "x"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_tool_calls),
        cmocka_unit_test(test_openai_text),
        cmocka_unit_test(test_openai_bad_arguments),
        cmocka_unit_test(test_anthropic_tool_use),
        cmocka_unit_test(test_usage_hostile),
        cmocka_unit_test(test_classify_fixtures),
        cmocka_unit_test(test_classify_status),
        cmocka_unit_test(test_classify_redacts),
        cmocka_unit_test(test_class_names),
        cmocka_unit_test(test_json_extract),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_openai_build),
        cmocka_unit_test(test_anthropic_build),
        cmocka_unit_test(test_anthropic_thinking),
        cmocka_unit_test(test_output_limit),
        cmocka_unit_test(test_messages_json),
        cmocka_unit_test(test_script_memory),
        cmocka_unit_test(test_config_chain),
        cmocka_unit_test(test_parse_damaged),
        cmocka_unit_test(test_prices_families),
        cmocka_unit_test(test_prices_check),
        cmocka_unit_test(test_ollama_window),
    };
    testutil_setup("test_llm");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
