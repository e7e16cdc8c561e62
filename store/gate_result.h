/*
 * gate_result.h - the gate_results, gate_cases and gate_baselines tables:
 * what a verification gate did on one tree, its test cases, and the
 * cached result of a gate on a baseline commit.
 *
 * Rows go in as borrowed strings (nothing here keeps a pointer after the
 * call).  Strings handed to an _each callback are borrowed and valid only
 * during the call.  Strings returned through char ** out-parameters are
 * malloc'd: the caller free()s them.
 */
#ifndef GOALD_STORE_GATE_RESULT_H
#define GOALD_STORE_GATE_RESULT_H

#include <stdint.h>

#include "store/store.h"

/* One gate_results row.  Any string may be NULL (SQL NULL); a test count
 * below 0 is stored as NULL (unknown). */
struct store_gate_row {
    const char *goal_id, *item_id, *run_id;
    const char *name, *type, *command;
    int must_pass, passed, exit_code;
    int64_t duration_ms;
    const char *output_tail, *output_hash, *tree_id;
    const char *classification; /* introduced, pre-existing, flaky; NULL when it passed */
    int tests_passed, tests_failed, tests_skipped, tests_total;
    const char *tests_format, *note;
};

/* Insert r (created_at is now).  *id_out (may be NULL) receives the row
 * id.  Runs in the caller's transaction, if any. */
int store_gate_result_insert(store *st, const struct store_gate_row *r, int64_t *id_out);

/* Replace the note of gate_results row id. */
int store_gate_result_set_note(store *st, int64_t id, const char *note);

/* One test case of gate_results row gate_result_id; status is "pass",
 * "fail" or "skip"; file may be NULL. */
int store_gate_case_insert(store *st, int64_t gate_result_id, const char *name, const char *status,
                           const char *file);

/* The tests_format of gate_results row id: *format_out is a malloc'd
 * copy (free() it) or NULL.  ERR_NOTFOUND "gate result ID: not found". */
int store_gate_result_format(store *st, int64_t id, char **format_out);

/* The cases of gate_results row id in insertion order; fn returning
 * non-zero stops the walk and is returned. */
int store_gate_cases_each(store *st, int64_t gate_result_id,
                          int (*fn)(const char *name, const char *status, const char *file,
                                    void *ctx),
                          void *ctx);

/* The failing gates of item_id's latest gated run that were blamed on it
 * (classification introduced, or none), in the order they ran. */
int store_gate_result_failed_last_run_each(store *st, const char *item_id,
                                           int (*fn)(const char *name, int exit_code,
                                                     const char *output_tail, void *ctx),
                                           void *ctx);

/* One gate_baselines row: the result of gate (with command) on commit
 * baseline of goal_id; cases is the JSON text of its test cases. */
struct store_gate_baseline {
    const char *goal_id, *gate, *command, *baseline;
    int passed, exit_code;
    const char *format, *cases, *output_hash;
};

/* The cached baseline of (goal_id, gate, command, baseline): *found 1 with
 * *passed and malloc'd *format and *cases (free() them; either may be
 * NULL), or *found 0.  An error of the lookup is returned. */
int store_gate_baseline_get(store *st, const char *goal_id, const char *gate, const char *command,
                            const char *baseline, int *found, int *passed, char **format,
                            char **cases);

/* Insert or replace b (created_at is now). */
int store_gate_baseline_put(store *st, const struct store_gate_baseline *b);

#endif
