/*
 * instrument.c - the commands people write, made to name their test
 * cases (docs/verification.md, "Per-test results without special flags").
 *
 * A gate's cases are what lets goald judge it per test: which tests the
 * item broke, fixed, removed.  `pytest -q` names only failures, `python -m
 * unittest` names none that pass, `go test` prints no per-test lines
 * without -v.  So before a gate runs, goald adds what the runner needs,
 * without changing what the command tests: PYTEST_ADDOPTS gains -rA (every
 * outcome in the short summary; a -r of the command's own comes later on
 * pytest's command line and wins), `-m unittest` gains -v, `go test`
 * gains -json, and `ctest` gains -V (ctest shows a test executable's own
 * output, the cases inside it, only with -V, or for failures alone with
 * --output-on-failure).  The gate's record keeps the command as written.
 */
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "gates/roles.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* The position of word w in c as a shell word (blank or start before it,
 * blank or end after it), or NULL. */
static const char *word_at(const char *c, const char *w)
{
    size_t n = strlen(w);

    for (const char *p = strstr(c, w); p; p = strstr(p + 1, w))
        if ((p == c || strchr(" \t;&|(", p[-1])) && (!p[n] || strchr(" \t;&|)", p[n])))
            return p;
    return NULL;
}

/* c with text inserted at offset at, into a new string. */
static char *insert_at(const char *c, size_t at, const char *text)
{
    size_t n = strlen(c), k = strlen(text);
    char *out = xmalloc(n + k + 1);

    memcpy(out, c, at);
    memcpy(out + at, text, k);
    memcpy(out + at + k, c + at, n - at + 1);
    return out;
}

/* `-m unittest` without -v: -v after it (after `discover`, which must
 * come first). */
static char *unittest_verbose(const char *c)
{
    const char *m = word_at(c, "-m unittest"), *after;

    if (!m || word_at(c, "-v") || word_at(c, "--verbose"))
        return NULL;
    after = m + strlen("-m unittest");
    if (!strncmp(after, " discover", 9) && (!after[9] || strchr(" \t;&|)", after[9])))
        after += 9;
    return insert_at(c, (size_t)(after - c), " -v");
}

/* `go test` without -json: -json after it. */
static char *go_json(const char *c)
{
    const char *g = word_at(c, "go test");

    if (!g || strstr(c, "-json"))
        return NULL;
    return insert_at(c, (size_t)(g - c) + strlen("go test"), " -json");
}

/* `ctest` without -V/-VV/--verbose/--extra-verbose: -V after it. */
static char *ctest_verbose(const char *c)
{
    const char *t = word_at(c, "ctest");

    if (!t || word_at(c, "-V") || word_at(c, "-VV") || word_at(c, "--verbose") ||
        word_at(c, "--extra-verbose"))
        return NULL;
    return insert_at(c, (size_t)(t - c) + strlen("ctest"), " -V");
}

char *gates_instrument(const struct gate_spec *g, const char **env, size_t env_max)
{
    struct gate_plan one = {(struct gate_spec *)g, 1};
    unsigned runners = g->command ? gates_runners(&one) : 0;
    char *cmd = NULL, *next;
    size_t ne = 0;

    if (env_max)
        env[0] = NULL;
    if (!g->command)
        return NULL;
    if ((runners & RUNNER_PYTEST) && ne + 1 < env_max) {
        env[ne++] = "PYTEST_ADDOPTS=-rA";
        env[ne] = NULL;
    }
    if ((runners & RUNNER_UNITTEST) && (next = unittest_verbose(g->command)))
        cmd = next;
    if ((runners & RUNNER_GO) && (next = go_json(cmd ? cmd : g->command))) {
        free(cmd);
        cmd = next;
    }
    if ((runners & RUNNER_CTEST) && (next = ctest_verbose(cmd ? cmd : g->command))) {
        free(cmd);
        cmd = next;
    }
    return cmd;
}
