/*
 * gate_result.h - the gate_results table: each run of a gate (verify.c),
 * for the report and the pull request body.
 *
 * In _each() callbacks the struct and its strings are borrowed from the
 * store and valid only during the call; fn must copy what it keeps.  fn
 * returns non-zero to stop, and that value is returned.
 */
#ifndef GOALD_STORE_GATE_RESULT_H
#define GOALD_STORE_GATE_RESULT_H

#include <stdint.h>

#include "store/store.h"
#include "util/hash.h"
#include "util/id.h"

struct store_gate_result {
    const char *item_key; /* only store_gate_result_each_latest_of_goal() */
    const char *name;
    int passed;
    int exit_code;              /* -1 when none */
    const char *classification; /* "" when none */
    int counted;                /* 1: tests_passed/tests_failed were parsed */
    int tests_passed, tests_failed;
    const char *output_tail;    /* "" when none; NULL in ..._of_goal() */
    const char *output_hash;    /* may be NULL in ..._of_goal() */
    const char *tree_id;        /* "" when none; NULL in ..._of_goal() */
    const char *run_id;         /* NULL in ..._of_goal() */
};

/* The latest result of each (gate, tree) of the latest run that gated
 * item_id, oldest first. */
int store_gate_result_each_latest_of_item(store *st, const char *item_id,
                                          int (*fn)(const struct store_gate_result *g,
                                                    void *ctx),
                                          void *ctx);

/* The latest result of each (item, gate) of goal_id, in item order then
 * by gate name, with the item's key. */
int store_gate_result_each_latest_of_goal(store *st, const char *goal_id,
                                          int (*fn)(const struct store_gate_result *g,
                                                    void *ctx),
                                          void *ctx);

/* The first run of a gate on a tree in a goal (gate_tree_runs): the
 * tree, the gate as configured and the sandbox it ran in (env, a digest:
 * gates_run_env) decide a run; the first run of that is kept and never
 * recorded over.  cases is the JSON text of its test cases (as in
 * gate_baselines); any string may be NULL. */
struct store_gate_tree_run {
    const char *goal_id, *gate, *command, *env, *tree_id, *run_id;
    int passed, reusable, exit_code;
    int64_t duration_ms;
    const char *format, *cases, *output_hash, *output_tail;
};

/* Record r unless its (goal_id, gate, command, env, tree_id) already has a
 * first run (then nothing changes). */
int store_gate_tree_run_put(store *st, const struct store_gate_tree_run *r) GOALD_MUST_CHECK;

/* The first run of key's (goal_id, gate, command, env, tree_id) (its other
 * members are not read): *found 1 with out filled, whose format, cases
 * and output_tail are malloc'd (free() them with store_gate_tree_hit_release), or *found
 * 0.  An error of the lookup is returned. */
struct store_gate_tree_hit {
    char run_id[ID_SIZE];
    char output_hash[HASH_HEX_SIZE];
    int passed, reusable, exit_code;
    int64_t duration_ms;
    char *format, *cases, *output_tail;
};
int store_gate_tree_run_get(store *st, const struct store_gate_tree_run *key,
                            struct store_gate_tree_hit *out, int *found);
void store_gate_tree_hit_release(struct store_gate_tree_hit *h);

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
int store_gate_result_insert(store *st, const struct store_gate_row *r,
                             int64_t *id_out) GOALD_MUST_CHECK;

/* Replace the note of gate_results row id. */
int store_gate_result_set_note(store *st, int64_t id, const char *note);

/* One test case of gate_results row gate_result_id; status is "pass",
 * "fail" or "skip"; file may be NULL. */
int store_gate_case_insert(store *st, int64_t gate_result_id, const char *name, const char *status,
                           const char *file) GOALD_MUST_CHECK;

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

/* One gate_baselines row: the result of gate (with command) on the tree
 * baseline (its id; rows written before trees were the key name a commit,
 * and are simply never found again) of goal_id; cases is the JSON text of
 * its test cases. */
struct store_gate_baseline {
    const char *goal_id, *gate, *command, *baseline;
    int passed, exit_code;
    const char *format, *cases, *output_hash;
};

/* The cached baseline of key's (goal_id, gate, command, baseline) (its
 * other members are not read): *found 1 with *passed and malloc'd
 * *format and *cases (free() them; either may be NULL), or *found 0.  An
 * error of the lookup is returned. */
int store_gate_baseline_get(store *st, const struct store_gate_baseline *key, int *found,
                            int *passed, char **format, char **cases);

/* Insert or replace b (created_at is now). */
int store_gate_baseline_put(store *st, const struct store_gate_baseline *b);

/* Call fn with the latest result of each gate of an item, by gate name
 * (passed is 0 or 1).  fn returns non-zero to stop. */
int store_gate_result_latest_by_item_each(store *st, const char *item_id,
                                          int (*fn)(const char *name, int passed, void *ctx),
                                          void *ctx);

#endif
