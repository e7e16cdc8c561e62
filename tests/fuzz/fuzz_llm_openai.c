/*
 * fuzz_llm_openai - llm/openai.c: llm_openai_parse() on any response body
 * (a Chat Completions answer or an error object).  Checks: fuzz_llm.h.
 */
#include "tests/fuzz/fuzz_llm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_llm_check(llm_openai_parse, data, size, 0);
    return 0;
}
