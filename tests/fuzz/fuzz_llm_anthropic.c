/*
 * fuzz_llm_anthropic - llm/anthropic.c: llm_anthropic_parse() on any
 * response body (a Messages answer or an error object).  Checks:
 * fuzz_llm.h.
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
    fuzz_llm_check(llm_anthropic_parse, data, size, 1);
    return 0;
}
