/*
 * fuzz.h - what the libFuzzer targets in tests/fuzz share (header-only, so
 * that each target stays one file).
 *
 * A finding is a crash, a sanitizer report, a leak, a timeout, or a
 * FUZZ_CHECK that fails: the harness states an invariant of the code under
 * test and abort()s when the input breaks it, so that libFuzzer saves the
 * input as crash-<sha1> (docs/fuzzing.md).
 */
#ifndef GOALD_TESTS_FUZZ_H
#define GOALD_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Each target's, and each calls xalloc_cjson_hooks() first: cJSON
 * allocating as in the goald binary. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The input as a C string: a malloc'd copy with a NUL added, or NULL when
 * the input holds a NUL byte (the parsers take C strings, so the bytes after
 * a NUL could never reach them; such inputs are rejected, not explored).
 * The caller frees it with free(). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s;

    if (memchr(data, '\0', size))
        return NULL;
    s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Whether the environment variable name is set to a non-empty value other
 * than "0". */
static inline int fuzz_env_flag(const char *name)
{
    const char *v = getenv(name);

    return v && *v && strcmp(v, "0") != 0;
}

#endif
