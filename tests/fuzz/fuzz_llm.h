/*
 * fuzz_llm.h - the checks fuzz_llm_openai and fuzz_llm_anthropic share: a
 * response parser turns any body into either a well-formed response or an
 * invalid_response (or classified) error, never half of each.
 */
#ifndef GOALD_TESTS_FUZZ_LLM_H
#define GOALD_TESTS_FUZZ_LLM_H

#include <cjson/cJSON.h>

#include "llm/llm.h"
#include "llm/llm_internal.h"
#include "tests/fuzz/fuzz.h"
#include "util/err.h"

typedef int (*fuzz_llm_parse_fn)(llm_client *c, const char *body, struct llm_response *resp,
                                 struct llm_error *err);

/* Parse data with parse and check the result.  cache_in_input: the parser
 * promises usage.input counts the cache reads and writes too (Anthropic
 * reports them apart and the parser adds them; OpenAI's cached_tokens is
 * the provider's word, and llm_cost() clamps it). */
static inline void fuzz_llm_check(fuzz_llm_parse_fn parse, const uint8_t *data, size_t size,
                                  int cache_in_input)
{
    struct llm_response r = {0};
    struct llm_error e = {0};
    char *body = fuzz_cstr(data, size);
    int rc;

    if (!body)
        return;
    rc = parse(NULL, body, &r, &e);
    if (rc == 0) {
        FUZZ_CHECK(e.cls == LLM_ERR_NONE && !e.message, "success with an error set");
        FUZZ_CHECK(r.message.role == LLM_ASSISTANT, "role %d", (int)r.message.role);
        FUZZ_CHECK(r.message.ncalls == 0 || r.message.calls, "%zu calls, no array",
                   r.message.ncalls);
        for (size_t i = 0; i < r.message.ncalls; i++) {
            const struct llm_tool_call *tc = &r.message.calls[i];
            cJSON *args;

            FUZZ_CHECK(tc->id && tc->name && *tc->name && tc->arguments,
                       "call %zu: missing id, name or arguments", i);
            args = cJSON_Parse(tc->arguments);
            FUZZ_CHECK(cJSON_IsObject(args), "call %zu: arguments %s are not an object", i,
                       tc->arguments);
            cJSON_Delete(args);
        }
        /* token counts feed budgets and costs: a negative one would give
         * budget back */
        FUZZ_CHECK(r.usage.input >= 0 && r.usage.output >= 0 && r.usage.cached_input >= 0 &&
                       r.usage.cache_write >= 0,
                   "negative usage: in %lld out %lld cached %lld write %lld",
                   (long long)r.usage.input, (long long)r.usage.output,
                   (long long)r.usage.cached_input, (long long)r.usage.cache_write);
        FUZZ_CHECK(!cache_in_input || r.usage.cached_input + r.usage.cache_write <= r.usage.input,
                   "cached %lld + written %lld > input %lld", (long long)r.usage.cached_input,
                   (long long)r.usage.cache_write, (long long)r.usage.input);
        llm_response_release(&r);
    } else {
        FUZZ_CHECK(rc == ERR_FAIL, "parse returned %d", rc);
        FUZZ_CHECK(e.cls != LLM_ERR_NONE && e.message && *e.message, "failure without an error");
        FUZZ_CHECK(!r.message.content && !r.message.calls && !r.finish_reason && !r.model,
                   "failure left a half-filled response");
        llm_error_release(&e);
    }
    free(body);
}

#endif
