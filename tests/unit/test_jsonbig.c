/* Unit tests: util/jsonbig.c (long JSON strings decoded in place), and the
 * memory it saves in the model's answers and the tools: neither the LLM
 * parsers nor tool_call_take() let cJSON allocate a copy of a write's
 * content (counted through cJSON's allocation hooks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "tests/unit/testutil.h"
#include "tools/tool.h"
#include "util/config.h"
#include "util/fsutil.h"
#include "util/jsonbig.h"
#include "util/strbuf.h"

static char *dup_s(const char *s)
{
    char *p = strdup(s);
    if (!p)
        abort();
    return p;
}

/* cJSON's decoding of the literal "body" */
static char *cjson_decode(const char *body, int *ok)
{
    strbuf sb = STRBUF_INIT;
    cJSON *j;
    char *out = NULL;

    assert_int_equal(strbuf_addf(&sb, "\"%s\"", body), 0);
    j = cJSON_Parse(sb.buf);
    *ok = cJSON_IsString(j);
    if (*ok)
        out = dup_s(j->valuestring);
    cJSON_Delete(j);
    strbuf_release(&sb);
    return out;
}

static void test_decode(void **state)
{
    static const char *const cases[] = {
        "plain", "a\\\"b", "back\\\\slash", "\\/\\b\\f\\n\\r\\t", "caf\\u00e9 \\u4e2d",
        "pair \\ud83d\\ude00 end", "\\u0041\\u00", /* short: refused */
        "\\ud800", "\\ud800\\u0041", "\\udc00", /* lone or bad surrogates: refused */
        "\\uzzzz!", /* cJSON decodes invalid hex digits as 0: a NUL */
        "\\ud[[\\\\", /* \u swallows half of a \\: cJSON escapes the closing quote */
        "\\x", "\\'", "raw \x01 control", "\xff\xfe bytes", "",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int ok;
        char *want = cjson_decode(cases[i], &ok);
        size_t n = strlen(cases[i]);
        char *buf = malloc(n + 1);
        long got;

        memcpy(buf, cases[i], n + 1);
        assert_int_equal(jsonbig_decode(buf, n, NULL) >= 0, ok);
        got = jsonbig_decode(buf, n, buf); /* in place */
        assert_int_equal(got >= 0, ok);
        if (ok)
            assert_string_equal(buf, want);
        free(buf);
        free(want);
    }
}

/* jsonbig_parse with a small threshold against cJSON_Parse. */
static void same_as_cjson(const char *text, size_t min, size_t want_big)
{
    struct jsonbig jb;
    char *t = dup_s(text);
    cJSON *ref = cJSON_Parse(text);
    size_t len = strlen(text);

    assert_int_equal(jsonbig_parse(&jb, &t, len, min) == 0, ref != NULL);
    assert_null(t);
    assert_int_equal(jb.nbig, want_big);
    if (ref)
        assert_true(cJSON_Compare(jb.root, ref, 1));
    for (size_t i = 0; i < jb.nbig; i++) { /* the strings live in the text's own memory */
        const char *v = jb.big[i].node->valuestring;
        assert_true(v >= jb.buf && v < jb.buf + len);
        assert_true(jb.big[i].node->type & cJSON_IsReference);
    }
    cJSON_Delete(ref);
    jsonbig_release(&jb);
}

static void test_parse(void **state)
{
    (void)state;
    same_as_cjson("{\"a\":\"short\",\"long\":\"0123456789 \\\"x\\\" \\n\\u00e9\"}", 12, 1);
    same_as_cjson("[\"0123456789abc\",\"0123456789abd\",{\"k\":[\"0123456789abe\"]},1,true]", 12,
                  3);
    /* keys are never replaced, however long */
    same_as_cjson("{\"0123456789abcdef\" : \"v\", \"x\":\"0123456789abcdef\"}", 12, 1);
    same_as_cjson("\"0123456789abcdef\"", 12, 1);                      /* a bare string */
    same_as_cjson("{\"a\":\"0123456789abcdef\"} trailing \"0123456789abcdef\"", 12, 1);
    same_as_cjson("{\"a\":\"0123456789abcdef\\u0000 after nul\"}", 12, 1);
    same_as_cjson("{\"a\":\"0123456789ab\\qcdef\"}", 12, 0); /* refused: as cJSON */
    same_as_cjson("{\"a\":\"0123456789abcdef\",}", 12, 0);  /* refused: as cJSON */
    same_as_cjson("{\"a\":\"0123456789abcdef", 12, 0);      /* unterminated */
    same_as_cjson("{\"a\":\"\",\"b\":\"0123456789abcdef\"}", 12, 1); /* a real "" beside */
    same_as_cjson("{\"a\":\"short\"}", 0, 0);
}

static void test_take(void **state)
{
    struct jsonbig jb;
    char *t = dup_s("{\"a\":\"0123456789abcdef\",\"b\":\"fedcba9876543210!\",\"c\":\"s\"}");
    char *a, *b, *c;

    (void)state;
    assert_int_equal(jsonbig_parse(&jb, &t, strlen(t), 12), 0);
    assert_int_equal(jb.nbig, 2);
    c = jsonbig_take(&jb, cJSON_GetObjectItem(jb.root, "c")); /* short: from cJSON */
    a = jsonbig_take(&jb, cJSON_GetObjectItem(jb.root, "a")); /* another lives: a copy */
    assert_non_null(jb.buf);
    b = jsonbig_take(&jb, cJSON_GetObjectItem(jb.root, "b")); /* the last: the buffer itself */
    assert_null(jb.buf);
    assert_string_equal(a, "0123456789abcdef");
    assert_string_equal(b, "fedcba9876543210!");
    assert_string_equal(c, "s");
    assert_null(cJSON_GetObjectItem(jb.root, "b")->valuestring);
    assert_null(jsonbig_take(&jb, cJSON_GetObjectItem(jb.root, "b"))); /* taken already */
    free(a);
    free(b);
    free(c);
    jsonbig_release(&jb);
}

static void print_case(const char *text, const char *path, int in_place)
{
    struct jsonbig jb;
    char *t = dup_s(text);
    cJSON *ref = cJSON_Parse(text), *node, *rnode;
    char *want, *got;

    assert_int_equal(jsonbig_parse(&jb, &t, strlen(text), 12), 0);
    node = path ? cJSON_GetObjectItem(jb.root, path) : jb.root;
    rnode = path ? cJSON_GetObjectItem(ref, path) : ref;
    want = cJSON_PrintUnformatted(rnode);
    got = jsonbig_print_take(&jb, node);
    assert_string_equal(got, want);
    assert_int_equal(jb.buf == NULL, in_place);
    free(got);
    free(want);
    cJSON_Delete(ref);
    jsonbig_release(&jb);
}

static void test_print_take(void **state)
{
    (void)state;
    /* escapes of every kind come back as cJSON prints them */
    print_case("{\"path\":\"a.c\",\"content\":\"line \\\"1\\\"\\n\\tC:\\\\tmp\\\\ \\u0001 \\/ "
               "caf\\u00e9\",\"n\":[1,2.5,null,false]}",
               NULL, 1);
    /* two long strings (an edit), with pieces between */
    print_case("{\"old_text\":\"0123456789abcdef\\\"\",\"x\":{\"y\":\"z\"},\"new_text\":"
               "\"\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\"}",
               NULL, 1);
    /* a long string elsewhere still lives in the buffer: a copy */
    print_case("{\"input\":{\"content\":\"0123456789abcdef\"},\"text\":\"0123456789abcdefgh\"}",
               "input", 0);
    /* nothing long inside */
    print_case("{\"input\":{\"a\":1},\"text\":\"0123456789abcdefgh\"}", "input", 0);
}

/* ---- no copy of a long string by cJSON --------------------------------- */

static size_t biggest; /* the largest allocation cJSON asked for */

static void *counting_malloc(size_t n)
{
    if (n > biggest)
        biggest = n;
    return malloc(n);
}

static void hooks_on(void)
{
    cJSON_Hooks h = {counting_malloc, free};
    biggest = 0;
    cJSON_InitHooks(&h);
}

static void hooks_off(void)
{
    xalloc_cjson_hooks(); /* back to the policy of every program */
}

#define CONTENT_BYTES ((size_t)1 << 20)

/* 1 MiB of C with quotes and backslashes, JSON-escaped once (esc 1) or
 * twice (esc 2, as inside OpenAI's arguments string). */
static void add_content(strbuf *sb, int esc)
{
    static const char line[] = "\tputs(\"a \\\"b\\\" C:\\\\x\");\n";
    for (size_t n = 0; n < CONTENT_BYTES; n += sizeof(line) - 1) {
        for (const char *p = line; *p; p++) {
            const char *e = *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" : *p == '\n' ? "\\n"
                                                : *p == '\t'                ? "\\t"
                                                                            : NULL;
            if (!e) {
                assert_int_equal(strbuf_addc(sb, *p), 0);
            } else if (esc == 1) {
                assert_int_equal(strbuf_adds(sb, e), 0);
            } else { /* the escape, escaped */
                assert_int_equal(strbuf_adds(sb, "\\\\"), 0);
                assert_int_equal(strbuf_adds(sb, e[1] == '"'    ? "\\\""
                                                 : e[1] == '\\' ? "\\\\"
                                                                : e + 1),
                                 0);
            }
        }
    }
}

static void check_args(const char *args)
{
    cJSON *j = cJSON_Parse(args);
    const cJSON *c = cJSON_GetObjectItem(j, "content");
    assert_true(cJSON_IsString(c));
    assert_true(strlen(c->valuestring) >= CONTENT_BYTES);
    assert_non_null(strstr(c->valuestring, "\tputs(\"a \\\"b\\\" C:\\\\x\");\n"));
    assert_string_equal(cJSON_GetObjectItem(j, "path")->valuestring, "big.c");
    cJSON_Delete(j);
}

static void test_openai_no_copy(void **state)
{
    strbuf body = STRBUF_INIT;
    struct llm_response r;
    struct llm_error e;
    size_t len;
    char *b;

    (void)state;
    memset(&r, 0, sizeof(r));
    memset(&e, 0, sizeof(e));
    strbuf_init(&body, (size_t)16 << 20);
    assert_int_equal(
        strbuf_adds(&body,
                    "{\"model\":\"m\",\"choices\":[{\"finish_reason\":\"tool_calls\",\"message\":"
                    "{\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
                    "\"function\":{\"name\":\"write\",\"arguments\":\"{\\\"path\\\":\\\"big.c\\\","
                    "\\\"content\\\":\\\""),
        0);
    add_content(&body, 2);
    assert_int_equal(
        strbuf_adds(&body,
                    "\\\"}\"}}]}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}"),
        0);
    b = strbuf_detach(&body, &len);
    hooks_on();
    assert_int_equal(llm_openai_parse_take(NULL, b, len, &r, &e), 0);
    hooks_off();
    /* before: cJSON held the decoded arguments (over 1 MiB) beside the body */
    assert_true(biggest < JSONBIG_MIN);
    assert_int_equal(r.message.ncalls, 1);
    assert_string_equal(r.message.calls[0].name, "write");
    assert_string_equal(r.finish_reason, "tool_calls");
    assert_int_equal(r.usage.output, 7);
    check_args(r.message.calls[0].arguments);
    llm_response_release(&r);
    llm_error_release(&e);
}

static void test_anthropic_no_copy(void **state)
{
    strbuf body = STRBUF_INIT;
    struct llm_response r;
    struct llm_error e;
    size_t len;
    char *b;

    (void)state;
    memset(&r, 0, sizeof(r));
    memset(&e, 0, sizeof(e));
    strbuf_init(&body, (size_t)16 << 20);
    assert_int_equal(
        strbuf_adds(&body,
                    "{\"id\":\"msg\",\"type\":\"message\",\"model\":\"m\",\"content\":[{\"type\":"
                    "\"text\",\"text\":\"writing\"},{\"type\":\"tool_use\",\"id\":\"t1\","
                    "\"name\":\"write\",\"input\":{\"path\":\"big.c\",\"content\":\""),
        0);
    add_content(&body, 1);
    assert_int_equal(strbuf_adds(&body,
                                 "\"}}],\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":5,"
                                 "\"output_tokens\":7}}"),
                     0);
    b = strbuf_detach(&body, &len);
    hooks_on();
    assert_int_equal(llm_anthropic_parse_take(NULL, b, len, &r, &e), 0);
    hooks_off();
    /* before: the decoded content, then the arguments printed from it */
    assert_true(biggest < JSONBIG_MIN);
    assert_int_equal(r.message.ncalls, 1);
    assert_string_equal(r.message.content, "writing");
    assert_string_equal(r.finish_reason, "tool_calls");
    check_args(r.message.calls[0].arguments);
    llm_response_release(&r);
    llm_error_release(&e);
}

static void test_tool_take_no_copy(void **state)
{
    strbuf args = STRBUF_INIT, file = STRBUF_INIT;
    struct tool_result res;
    struct tool_ctx c;
    static const char *const allowed[] = {"write", NULL};
    char root[600], path[700], *a;

    (void)state;
    testutil_tmp_path(root, sizeof(root), "wt");
    assert_int_equal(fs_mkdir_p(root, 0700), 0);
    strbuf_init(&args, (size_t)16 << 20);
    assert_int_equal(strbuf_adds(&args, "{\"path\":\"big.c\",\"content\":\""), 0);
    add_content(&args, 1);
    assert_int_equal(strbuf_adds(&args, "\"}"), 0);
    a = strbuf_detach(&args, NULL);
    memset(&c, 0, sizeof(c));
    c.root = root;
    c.allowed = allowed;
    hooks_on();
    assert_int_equal(tool_call_take(&c, "write", &a, &res), 0);
    hooks_off();
    assert_true(res.ok);
    /* before: cJSON decoded the content beside the text */
    assert_true(biggest < JSONBIG_MIN);
    /* the history gets the compact copy */
    assert_non_null(strstr(a, "not kept in the conversation"));
    snprintf(path, sizeof(path), "%s/big.c", root);
    assert_int_equal(fs_read_file(&file, path, (size_t)16 << 20), 0);
    assert_true(file.len >= CONTENT_BYTES);
    assert_memory_equal(file.buf, "\tputs(\"a \\\"b\\\" C:\\\\x\");\n", 24);
    strbuf_release(&file);
    tool_result_release(&res);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),           cmocka_unit_test(test_parse),
        cmocka_unit_test(test_take),             cmocka_unit_test(test_print_take),
        cmocka_unit_test(test_openai_no_copy),   cmocka_unit_test(test_anthropic_no_copy),
        cmocka_unit_test(test_tool_take_no_copy),
    };
    testutil_setup("test_jsonbig");
    setenv("GOALD_TOOLS_SPILL_DIR", testutil_dir, 1);
    config_load(NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
