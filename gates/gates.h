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
#include "util/hash.h"

struct gate_spec {
    char *name;
    char *type; /* test, build, lint, typecheck, custom */
    char *command;
    char *report; /* a JUnit XML file the command writes (relative), or NULL */
    int must_pass;
    int timeout_s; /* 0: lane.work_timeout_s */
};

struct gate_plan {
    struct gate_spec *gates;
    size_t n;
};

/* Parse a verification plan (JSON array text; NULL or "[]" is an empty
 * plan).  ERR_INVALID names the bad gate. */
int gates_plan_parse(struct gate_plan *out, const char *json);
void gates_plan_release(struct gate_plan *p);

struct test_counts {
    int passed, failed, skipped, total; /* -1 when unknown */
    const char *format;                 /* "ctest", "pytest", ...; NULL when none found */
};

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
    struct test_counts counts;
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
};

/* Run gate g in root.  0 with *out filled (passed or not); an error only
 * when the gate could not be run at all (no sandbox: ERR_POLICY). */
int gates_run(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
              struct gate_result *out);
void gate_result_release(struct gate_result *r);

/* Record r (with the tree id it ran on) in gate_results.  *id_out (may be
 * NULL) receives the row id. */
int gates_store(const struct gates_ctx *ctx, const struct gate_result *r, const char *tree_id,
                int64_t *id_out);

/* Test counts found in a gate's output (ctest, pytest, go test, cargo
 * test, TAP), or in a JUnit XML report file when report_path is given. */
void gates_parse_counts(struct test_counts *out, const char *output, size_t len,
                        const char *report_path);

#endif
