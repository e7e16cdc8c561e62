/*
 * fuzz_cases - gates/cases*.c, gates/junit.c: gates_parse_cases() on any
 * output a gate could print (every text format is tried on it), and
 * gates_parse_junit() on the same bytes as a report file's text.
 *
 * Invariants checked: parsing succeeds (only out-of-memory may fail); the
 * format is one of the known names, NULL exactly when nothing was found;
 * every id is non-empty, at most 1024 bytes, free of control characters,
 * unique; statuses are in range; the counts derived add up; comparing a
 * run with itself is at test granularity with every failure pre-existing
 * and nothing introduced, fixed, removed or new.  A refused JUnit text
 * leaves no cases and says why.
 */
#include "gates/gates.h"
#include "tests/fuzz/fuzz.h"
#include "util/err.h"

static void check_cases(const struct test_cases *c, int junit)
{
    struct test_counts k;
    struct case_diff d;
    size_t fails = 0;
    const char *interned = c->format ? gates_format_intern(c->format) : NULL;
    int known = interned && !strcmp(interned, c->format);

    FUZZ_CHECK(!c->format || known, "unknown format %s", c->format);
    FUZZ_CHECK(junit || c->format || (!c->n && !c->unnamed_skips), "cases without a format");
    FUZZ_CHECK(junit || !c->format || c->n || c->unnamed_skips, "a format without cases");
    FUZZ_CHECK(c->n <= GATES_CASES_MAX, "%zu cases", c->n);
    for (size_t i = 0; i < c->n; i++) {
        const char *id = c->v[i].id;
        size_t n = strlen(id);
        FUZZ_CHECK(n > 0 && n <= 1024, "case %zu: id of %zu bytes", i, n);
        for (size_t k2 = 0; k2 < n; k2++)
            FUZZ_CHECK((unsigned char)id[k2] >= 0x20 && id[k2] != 0x7f,
                       "case %zu: control character in id", i);
        FUZZ_CHECK(c->v[i].status == TEST_PASS || c->v[i].status == TEST_FAIL ||
                       c->v[i].status == TEST_SKIP,
                   "case %zu: status %d", i, (int)c->v[i].status);
        fails += c->v[i].status == TEST_FAIL;
        for (size_t j = 0; j < i && c->n < 2000; j++)
            FUZZ_CHECK(strcmp(c->v[j].id, id), "id %s twice", id);
    }
    gates_counts_from_cases(&k, c);
    if (c->format) {
        FUZZ_CHECK(k.failed == (int)fails && k.total == k.passed + k.failed + k.skipped &&
                       k.total >= (int)c->n,
                   "counts %d/%d/%d/%d for %zu cases", k.passed, k.failed, k.skipped, k.total,
                   c->n);
    }
    FUZZ_CHECK(gates_compare(&d, c, c) == 0, "compare failed: %s", err_last());
    if (c->n && c->format) {
        FUZZ_CHECK(!strcmp(d.granularity, "test"), "granularity %s", d.granularity);
        FUZZ_CHECK(d.n_pre_existing == fails && !d.n_introduced && !d.n_fixed && !d.n_removed &&
                       !d.n_new_failing,
                   "a run compared with itself changed");
    } else {
        FUZZ_CHECK(!strcmp(d.granularity, "gate"), "granularity %s with no cases", d.granularity);
    }
    case_diff_release(&d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct test_cases c;
    char note[256];
    int rc;

    memset(&c, 0xa5, sizeof(c)); /* gates_parse_cases must set it whatever happens */
    rc = gates_parse_cases(&c, (const char *)data, size, NULL, NULL, note, sizeof(note));
    FUZZ_CHECK(rc == 0, "gates_parse_cases returned %d: %s", rc, err_last());
    FUZZ_CHECK(note[0] == '\0', "a note with no report: %s", note);
    check_cases(&c, 0);
    test_cases_release(&c);

    memset(&c, 0xa5, sizeof(c));
    rc = gates_parse_junit(&c, (const char *)data, size);
    if (rc == 0) {
        FUZZ_CHECK(c.format && !strcmp(c.format, "junit"), "junit format");
        check_cases(&c, 1);
    } else {
        FUZZ_CHECK(rc == ERR_INVALID, "gates_parse_junit returned %d", rc);
        FUZZ_CHECK(!c.n && !c.v && !c.format, "a refused report left cases");
        FUZZ_CHECK(err_last()[0] != '\0', "refused without a message");
    }
    test_cases_release(&c);
    return 0;
}
