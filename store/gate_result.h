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

#include "store/store.h"

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

#endif
