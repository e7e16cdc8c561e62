/*
 * gates.h - deterministic verification: a goal's gates run in the sandbox
 * on a worktree, their results stored as evidence.
 *
 * A gate is {"name","type","command","must_pass","timeout_s","report"} as
 * in the goal JSON (docs/goal-json.md).  Its output (stdout and stderr as
 * one stream) is kept whole in a temporary file while it runs: hashed
 * (sha256, the evidence), parsed for test counts, and its redacted tail
 * kept for the record and for the agent's next attempt.
 */
#ifndef GOALD_GATES_GATES_H
#define GOALD_GATES_GATES_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct cJSON;
#include "util/hash.h"
#include "util/strbuf.h"

#define GATES_BUILD_DIRS_MAX 4   /* build folders a gate may declare */
#define GATES_BUILD_DIR_LEN 256  /* bytes of one, at most */

struct gate_spec {
    char *name;
    char *type; /* test, build, lint, typecheck, custom */
    char *command;
    char *report; /* a JUnit XML file the command writes (relative), or NULL */
    int must_pass;
    int timeout_s; /* 0: lane.work_timeout_s */
    /* the build folders its command makes (relative to the worktree),
     * kept warm from the goal's start (docs/verification.md "Warm build
     * folders"); owned, freed by gates_plan_release */
    char *build_dirs[GATES_BUILD_DIRS_MAX];
    size_t n_build_dirs;
};

struct gate_plan {
    struct gate_spec *gates;
    size_t n;
};

/* Parse a verification plan (JSON array text; NULL or "[]" is an empty
 * plan).  ERR_INVALID names the bad gate. */
int gates_plan_parse(struct gate_plan *out, const char *json);
void gates_plan_release(struct gate_plan *p);

/* build_dirs.c: 0 when rel may be a declared build folder (relative, not
 * empty, at most GATES_BUILD_DIR_LEN bytes, no empty, ".", ".." or
 * ".git" component in any case, no control character); else ERR_INVALID
 * with why (n bytes) saying what is wrong. */
int gates_build_dir_check(const char *rel, char *why, size_t n);

/* 0 when the JSON value v (a gate's "build_dirs", may be NULL: none) is
 * an array of at most GATES_BUILD_DIRS_MAX folders that pass
 * gates_build_dir_check, none inside another; else ERR_INVALID with why
 * (n bytes) naming the entry ("[1]: ...") and *bad (may be NULL) its
 * index, -1 for the array itself. */
int gates_build_dirs_check(const struct cJSON *v, char *why, size_t n, int *bad);

struct test_counts {
    int passed, failed, skipped, total; /* -1 when unknown */
    const char *format;                 /* "ctest", "pytest", ...; NULL when none found */
};

/* ---- Test cases (docs/verification.md "Test cases") --------------------
 * A gate's output (and its JUnit XML report file) parsed into named test
 * cases, so that two runs can be compared case by case.  Ids are exact
 * strings; formats and how each forms its ids are in the docs. */
enum test_status { TEST_PASS = 0, TEST_FAIL = 1, TEST_SKIP = 2 }; /* error/timeout in a case = FAIL */

struct test_case {
    char *id;
    enum test_status status;
    char *file; /* source file the runner names, or NULL */
};

struct test_cases {
    struct test_case *v;
    size_t n;           /* unique ids: a repeated id keeps the worst status (FAIL > PASS > SKIP) */
    const char *format; /* "junit", "tap", "pytest", "unittest", "go", "ctest", "cargo",
                         * "node", the C frameworks' ("ctest+cmocka", "unity", ...:
                         * gates_format_intern); NULL: not parsed.  Static: never freed */
    size_t unnamed_skips; /* skips the runner counted without naming them (pytest's
                           * "SKIPPED [2] file:line"), not in v */
    int truncated;        /* more than GATES_CASES_MAX cases: the rest were dropped */
    int incomplete;       /* the runner's own summary counts more tests than were named
                           * (pytest -q names only failures): a case absent here may
                           * have run, so nothing is called removed */
};

#define GATES_CASES_MAX 200000          /* cases kept per gate run */
#define GATES_CASES_STORED 20000        /* rows per gate in gate_cases */
#define GATES_REPORT_MAX ((size_t)32 << 20) /* a larger report file is ignored */

/* Parse the gate's (redacted) output, and the JUnit XML report file
 * report_rel (may be NULL) read beneath root (never following a link out,
 * refusing a FIFO/socket/device at once, capped at GATES_REPORT_MAX), into
 * out (which the caller releases with test_cases_release, also on error).
 * A report with test cases wins; else, of the formats found in the output,
 * the one with the most cases.  0 also when nothing holds cases (format
 * NULL, n 0); ERR_NOMEM only.  A bad or hostile report file is ignored with
 * a note in note (note_n bytes, may be NULL/0; "" when nothing to say). */
int gates_parse_cases(struct test_cases *out, const char *output, size_t len, const char *root,
                      const char *report_rel, char *note, size_t note_n);
void test_cases_release(struct test_cases *c);
/* The static name of format f (a stored one) among those
 * gates_parse_cases gives, or NULL when f is none of them. */
const char *gates_format_intern(const char *f);

/* Read the report file rel beneath root into out (at most cap bytes) under
 * the path policy: no symlink leading out of root, no ".." (ERR_POLICY); a
 * FIFO, socket, device or folder refused at once without blocking
 * (ERR_POLICY); larger than cap: ERR_TOOBIG; missing: ERR_NOTFOUND.  The
 * message (err_last) names rel. */
int gates_report_read(strbuf *out, const char *root, const char *rel, size_t cap);

/* Parse JUnit XML text (expat; DOCTYPEs declaring entities and external
 * entities are refused) into out.  0 with out->format "junit" (possibly 0
 * cases); ERR_INVALID when not well-formed or refused (message says why);
 * ERR_NOMEM. */
int gates_parse_junit(struct test_cases *out, const char *xml, size_t len);

struct case_diff {
    char **introduced;   size_t n_introduced;   /* PASS at base, FAIL now */
    char **pre_existing; size_t n_pre_existing; /* FAIL at base and now */
    char **fixed;        size_t n_fixed;        /* FAIL at base, PASS now */
    char **removed;      size_t n_removed;      /* PASS at base, absent now (not skipped) */
    char **removed_failing; size_t n_removed_failing; /* FAIL at base, absent now: a target
                                                          that vanished */
    char **new_failing;  size_t n_new_failing;  /* absent (or skipped) at base, FAIL now */
    const char *granularity; /* "test" when both sides were parsed in the same format, else "gate" */
};

/* instrument.c: what g's command needs so that the runners goald knows
 * name every test case (docs/verification.md).  Fills env (at most
 * env_max entries with the NULL that ends them; static strings) with
 * variables to add, and returns the command to run instead of
 * g->command (malloc'd, the caller frees it), or NULL to run it as
 * written. */
char *gates_instrument(const struct gate_spec *g, const char **env, size_t env_max);

/* Compare per test case (ids matched exactly).  When either side has no
 * cases, or their formats differ, granularity is "gate" and the lists are
 * empty: the caller falls back to comparing the gates' pass/fail.  Lists
 * hold copies of the ids in the order of `now` (removed: of `base`); the
 * caller frees them with case_diff_release.  0 (out of memory aborts). */
int gates_compare(struct case_diff *out, const struct test_cases *base,
                  const struct test_cases *now);
void case_diff_release(struct case_diff *d);

/* Counts derived from parsed cases (format copied; total includes
 * unnamed skips).  All -1 and format NULL when c has no format. */
void gates_counts_from_cases(struct test_counts *out, const struct test_cases *c);

struct gate_result {
    char name[128];
    char type[16];
    char *command;
    int must_pass;
    int passed;     /* exit code 0 and not timed out */
    int exit_code;
    int timed_out;
    int64_t duration_ms;
    char *output_tail; /* redacted, at most GATES_TAIL bytes */
    char output_hash[HASH_HEX_SIZE];
    struct test_counts counts; /* from cases when parsed, else summary lines */
    struct test_cases cases;   /* parsed test cases (format NULL: none) */
    char note[512];            /* why the report file was ignored, cases cut...; "" if none */
    char classification[16]; /* introduced, pre-existing, flaky; "" when it passed */
};

#define GATES_TAIL 16384

/* Who runs the gate, for events and the sandbox (any may be NULL). */
struct gates_ctx {
    store *st;
    const char *goal_id, *item_id, *run_id;
    /* git folders bound read-only into the sandbox, from goald's records
     * (struct sandbox_spec); NULL when root is not a goal's worktree */
    const char *git_common, *git_dir;
    int cold; /* for lifecycle/: build from nothing, no warm build folder (the final check) */
};

/* Run gate g in root.  0 with *out filled (passed or not); an error only
 * when the gate could not be run at all (no sandbox: ERR_POLICY). */
int gates_run(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
              struct gate_result *out);
/* gates_run() with the folder root_src bound at root in the sandbox (a
 * throw-away copy of the worktree: the gate's side effects stay in it);
 * root_src NULL is gates_run(). */
int gates_run_at(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
                 const char *root_src, struct gate_result *out);
void gate_result_release(struct gate_result *r);

/* run_env.c: a digest (sha256 hex) of what decides g's run besides the
 * tree: the gate as configured (name, type, command, report, build
 * folders, timeout),
 * what instrument.c adds, the sandbox settings and the values of the
 * variables passed in.  The same digest on the same tree: the same run. */
void gates_run_env(char out[HASH_HEX_SIZE], const struct gate_spec *g);

/* Record r (with the tree id it ran on) in gate_results, and its cases
 * in gate_cases (failures first, at most GATES_CASES_STORED rows; a note
 * in gate_results.note says when some were cut).  *id_out (may be NULL)
 * receives the row id. */
int gates_store(const struct gates_ctx *ctx, const struct gate_result *r, const char *tree_id,
                int64_t *id_out);

/* Load the cases stored for gate_results row id into out (release with
 * test_cases_release; format NULL when none were stored). */
int gates_cases_load(store *st, int64_t gate_result_id, struct test_cases *out);

/* Test counts found in a gate's output from summary lines (ctest, pytest,
 * go test -v, cargo test, TAP): the fallback when no cases were parsed. */
void gates_parse_counts(struct test_counts *out, const char *output, size_t len);

#endif
