/*
 * fuzz_jsonbig - util/jsonbig.c: jsonbig_parse() on any text against
 * cJSON_Parse() of the same text, with a threshold from the first input
 * byte (low bits: 1 to 64 bytes, so that most strings count as long).
 *
 * Invariants checked (beyond "no crash, no leak, no UB, terminates"):
 * - jsonbig_parse() succeeds exactly when cJSON_Parse() does, and the
 *   trees are equal (node by node, in order);
 * - every long string lies inside the buffer jsonbig owns (no copy);
 * - bit 6 of the first byte: jsonbig_print_take() of the root equals
 *   cJSON_PrintUnformatted() of cJSON's tree; else jsonbig_take() of each
 *   long string equals cJSON's string;
 * - jsonbig_decode() of the rest taken as a string literal's body, in
 *   place, equals cJSON's decoding of that literal (or both refuse).
 */
#include <cjson/cJSON.h>
#include <stdint.h>

#include "tests/fuzz/fuzz.h"
#include "util/jsonbig.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    return 0;
}

/* The same tree, in order (cJSON_Compare looks object members up by key,
 * so a duplicate key never compares equal even to itself). */
static int same(const cJSON *a, const cJSON *b)
{
    for (; a || b; a = a->next, b = b->next) {
        if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF))
            return 0;
        if ((a->string || b->string) && (!a->string || !b->string || strcmp(a->string, b->string)))
            return 0;
        if (cJSON_IsString(a) && strcmp(a->valuestring, b->valuestring))
            return 0;
        if (cJSON_IsNumber(a) && a->valuedouble != b->valuedouble)
            return 0;
        if (!same(a->child, b->child))
            return 0;
        if (!a->next && !b->next)
            break;
    }
    return 1;
}

/* The node of ref at the same place as n in root (same path). */
static const cJSON *twin(const cJSON *root, const cJSON *ref, const cJSON *n)
{
    if (root == n)
        return ref;
    for (const cJSON *a = root ? root->child : NULL, *b = ref ? ref->child : NULL; a && b;
         a = a->next, b = b->next) {
        const cJSON *t = twin(a, b, n);
        if (t)
            return t;
    }
    return NULL;
}

static void check_decode(const char *body, size_t n)
{
    char *lit = malloc(n + 3), *in = malloc(n + 1);
    size_t end = 1;
    cJSON *ref;
    long got;

    if (!lit || !in)
        abort();
    lit[0] = '"';
    memcpy(lit + 1, body, n);
    lit[n + 1] = '"';
    lit[n + 2] = '\0';
    /* only when cJSON's scan ends the literal at the last quote */
    while (end < n + 1 && lit[end] != '"')
        end += lit[end] == '\\' ? 2 : 1;
    if (end == n + 1 && strlen(lit) == n + 2) {
        ref = cJSON_Parse(lit);
        memcpy(in, body, n);
        in[n] = '\0';
        got = jsonbig_decode(in, n, in);
        FUZZ_CHECK((got >= 0) == cJSON_IsString(ref), "decode verdict %ld", got);
        if (got >= 0)
            FUZZ_CHECK(!strcmp(in, ref->valuestring), "decoded differently");
        cJSON_Delete(ref);
    }
    free(lit);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsonbig jb;
    cJSON *ref;
    char *text;
    size_t min;
    int rc, print;

    if (size < 1 || size > 1 << 16)
        return 0;
    min = (size_t)(data[0] & 63) + 1;
    print = (data[0] >> 6) & 1;
    check_decode((const char *)data + 1, size - 1);

    text = malloc(size);
    if (!text)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    ref = cJSON_Parse(text);
    rc = jsonbig_parse(&jb, &text, size - 1, min);
    FUZZ_CHECK(text == NULL, "the text was not taken");
    FUZZ_CHECK((rc == 0) == (ref != NULL), "verdict %d against cJSON's %d", rc, ref != NULL);
    if (rc == 0) {
        FUZZ_CHECK(same(jb.root, ref), "a different tree");
        for (size_t i = 0; i < jb.nbig; i++) {
            const char *v = jb.big[i].node->valuestring;
            FUZZ_CHECK(v >= jb.buf && v < jb.buf + size, "a long string outside the buffer");
        }
        if (print) {
            char *want = cJSON_PrintUnformatted(ref), *got = jsonbig_print_take(&jb, jb.root);
            FUZZ_CHECK(want && got && !strcmp(want, got), "printed differently");
            free(want);
            free(got);
        } else {
            for (size_t i = 0; i < jb.nbig; i++) {
                cJSON *n = jb.big[i].node;
                const cJSON *r = twin(jb.root, ref, n);
                char *s = jsonbig_take(&jb, n);
                FUZZ_CHECK(r && s && !strcmp(s, r->valuestring), "taken differently");
                free(s);
            }
        }
    }
    cJSON_Delete(ref);
    jsonbig_release(&jb);
    return 0;
}
