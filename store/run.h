/*
 * run.h - the runs table (one attempt of a stage on a goal or item).
 *
 * Ids come back in caller-owned char[ID_SIZE] buffers; nothing here
 * allocates for the caller.
 */
#ifndef GOALD_STORE_RUN_H
#define GOALD_STORE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

/* The goal and item of run run_id: each "" when the column is NULL.
 * ERR_NOTFOUND when there is no such run. */
int store_run_get_goal_item(store *st, const char *run_id, char goal_id[ID_SIZE],
                            char item_id[ID_SIZE]);

/* Remember the model (and its provider) that answered run_id last. */
int store_run_set_model(store *st, const char *run_id, const char *model, const char *provider);

/* Add a model call's usage to run_id's counters; goal_id_out (may be
 * NULL) receives the run's goal, "" when the run is unknown. */
int store_run_add_usage(store *st, const char *run_id, int64_t tokens_in, int64_t tokens_cached,
                        int64_t tokens_out, double cost_usd, char goal_id_out[ID_SIZE]);

/* What runs now for a goal; strings cut to their buffers, "" when
 * unknown. */
struct store_run_running {
    char id[40];
    char kind[16];
    char item_key[64];
    char item_title[256];
    int64_t started_at; /* -1 when not set */
    int turns_started;  /* its turn.started events */
};

/* The latest started run of goal_id still running: *found is 1 and *out
 * filled, or *found is 0 (and *out zeroed) when none runs. */
int store_run_latest_running(store *st, const char *goal_id, struct store_run_running *out,
                             int *found);

/* The same of the run run_id, when it is running (*found 1). */
int store_run_running_get(store *st, const char *run_id, struct store_run_running *out,
                          int *found);

/* The latest finished, unsuccessful run of item_id other than
 * except_run_id that recorded a failure reason: *error_class and *reason
 * malloc'd (*error_class may be NULL), or both NULL when there is none. */
int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason);

/* A goal-level unit the claim rule picked: its goal, the run kind
 * ("elaborate", "plan" or "publish") and the goal's attempts so far. */
struct store_run_pick {
    char goal_id[ID_SIZE];
    char kind[16];
    int attempts;
};

/* The plan lane's rule: a queued goal to elaborate, else an active
 * elaborated goal without items to plan; neither while a run of the goal is
 * running, nor before its next_attempt_at.  Best first (priority, age, id);
 * goals in busy (n_busy of them) are skipped.  ERR_NOTFOUND when none. */
int store_run_pick_plan(store *st, int64_t now_ms, const char (*busy)[ID_SIZE], int n_busy,
                        struct store_run_pick *out);

/* The work lane's goal-level rule: an active goal whose items are all done
 * or skipped (or that a human completed as partial), due, without a
 * running run.  ERR_NOTFOUND when none. */
int store_run_pick_publish(store *st, int64_t now_ms, const char (*busy)[ID_SIZE], int n_busy,
                           struct store_run_pick *out);

/* A ready item the work lane may execute (ranked by lifecycle/select). */
struct store_run_exec_candidate {
    char id[ID_SIZE];
    char goal_id[ID_SIZE];
    int priority;
    int dependents; /* items that depend on it */
    int64_t created_at;
    int64_t updated_at; /* waiting since */
    int inflight;       /* items of its goal in progress or in verification */
};

/* Call fn for each execute candidate at now_ms: a `ready` item of an
 * `active` goal, due, of a goal with fewer than parallel_cap items in
 * progress or in verification (fewer than 1 for a goal without a
 * repository).  fn returns non-zero to stop (that value is returned).
 * Every candidate, in no order: select_next() walks the groups below
 * instead; this is what it is tested against. */
int store_run_execute_candidates_each(store *st, int64_t now_ms, int parallel_cap,
                                      int (*fn)(const struct store_run_exec_candidate *c,
                                                void *ctx),
                                      void *ctx);

/* A group of ready items: those of one priority and one number of
 * dependents, whose scores (lifecycle/select.h) differ only by how long
 * each has waited. */
struct store_run_ready_group {
    int priority;
    int dependents;
};

/* The group of `ready` items after `after` (NULL: the first) in the order
 * priority DESC, dependents DESC, into *out: *found 0 past the last.  A
 * seek on work_items_ready each (migration 0019), not a scan. */
int store_run_ready_group_next(store *st, const struct store_run_ready_group *after,
                               struct store_run_ready_group *out, int *found);

/* store_run_execute_candidates_each() for the candidates of group g only,
 * in the order updated_at, created_at, id (the longest waiting first), so
 * that fn may stop as soon as the rest cannot score higher. */
int store_run_execute_group_each(store *st, int64_t now_ms, int parallel_cap,
                                 const struct store_run_ready_group *g,
                                 int (*fn)(const struct store_run_exec_candidate *c, void *ctx),
                                 void *ctx);

/* The queues of `goald status`, by the claim rule at now_ms: plan = the
 * goals store_run_pick_plan would pick; work = the goals
 * store_run_pick_publish would pick plus the execute candidates;
 * waiting_on_dependencies = the items still `queued`. */
struct store_run_queues {
    int64_t plan, work, waiting_on_dependencies;
};
int store_run_queue_counts(store *st, int64_t now_ms, int parallel_cap,
                           struct store_run_queues *out);

/* The runs created at or after since_ms: how many ended failed or timed
 * out, the tokens they used (in and out) and their cost in micro-USD (the
 * dashboard's last 24 hours). */
struct store_run_window {
    int64_t failed, tokens, cost_micro_usd;
};
int store_run_window_totals(store *st, int64_t since_ms, struct store_run_window *out);

/* How many ready items and queued or active goals wait for a retry that is
 * not yet due at now_ms (`daemon --once` waits for them). */
int store_run_pending_retries(store *st, int64_t now_ms, int *out);

/* A new run row, status running. */
struct store_run_new {
    const char *id, *goal_id;
    const char *item_id; /* NULL for goal-level units */
    const char *kind, *lane;
    int attempt, tier, model_index, timeout_s;
    int64_t lease_until, now_ms; /* created_at and started_at are now_ms */
    const char *node_id;         /* the node that claimed it (store_node_id) */
};
int store_run_insert(store *st, const struct store_run_new *r) GOALD_MUST_CHECK;

/* The timeout_s of the last run of (goal, kind) when that run timed out
 * with a timeout set; else *out is 0. */
int store_run_last_timeout_s(store *st, const char *goal_id, const char *kind, int *out);

/* A run's row. */
struct store_run {
    char id[ID_SIZE];
    char goal_id[ID_SIZE];
    char item_id[ID_SIZE]; /* "" when none */
    char kind[16];
    char lane[8];
    char status[16];
    int attempt;
    int timeout_s;       /* -1 when not set */
    long pid;            /* 0 when not set */
    int64_t lease_until; /* 0 when not set */
    int64_t started_at;
    char failure_reason[256];        /* "" when none; cut at 255 bytes */
    char node_id[STORE_NODE_ID_MAX]; /* "" for a run claimed before nodes existed */
};

/* Read a run.  ERR_NOTFOUND ("run ID: not found") when absent. */
int store_run_get(store *st, const char *id, struct store_run *out);

/* Every run with status running: *out is a malloc'd array of *n (free();
 * NULL when none). */
int store_run_list_running(store *st, struct store_run **out, size_t *n);

/* A running run with what `status` shows of it. */
struct store_run_job {
    const char *run_id, *goal_id, *item_id, *kind, *lane, *goal_title, *item_key;
    const char *node_id; /* "" for a run claimed before nodes existed */
    long pid;
    int64_t started_at;
};
/* Call fn for each running run, oldest first (item_id and item_key are ""
 * for goal-level runs).  fn returns non-zero to stop. */
int store_run_jobs_each(store *st, int (*fn)(const struct store_run_job *j, void *ctx), void *ctx);

/* How many runs of lane are running on node_id, or on every node when
 * node_id is NULL (the lane caps: a node's, the global one). */
int store_run_count_running(store *st, const char *lane, const char *node_id, int64_t *out);

/* *yes = 1 when the latest run of an item of goal_id (goal_id NULL: the
 * latest run of item_id) other than except_run_id is a run of item_id
 * that ended by asking a human (an ask_human escalation names it), else
 * 0. */
int store_run_item_asked_last(store *st, const char *goal_id, const char *item_id,
                              const char *except_run_id, int *yes);

/* The id of item_id's latest run (the last claimed) into out; "" when it
 * has none. */
int store_run_latest_of_item(store *st, const char *item_id, char out[ID_SIZE]);

/* Renew a running run's lease (no-op when it is no longer running). */
int store_run_renew_lease(store *st, const char *run_id, int64_t lease_until);

/* The run's status and its goal's ("" each when the run is absent). */
int store_run_live_status(store *st, const char *run_id, char run_status[16], char goal_status[16]);

/* The job took the run: pid, lease, started_at (kept when set).
 * ERR_TRANSITION when the run is no longer running. */
int store_run_mark_started(store *st, const char *run_id, long pid, int64_t lease_until,
                           int64_t now_ms);

/* Write a run's end fields (NULL strings write NULL). */
struct store_run_end {
    int turns, model_index;
    const char *summary, *error_class, *error_signature, *failure_reason;
};
int store_run_write_end(store *st, const char *run_id,
                        const struct store_run_end *e) GOALD_MUST_CHECK;

/* The last (at most 3) failed, timed-out or aborted runs of an item, newest
 * first: class, signature and reason ("" when not set). */
struct store_run_failure {
    const char *error_class, *error_signature, *failure_reason;
};
int store_run_item_failures_each(store *st, const char *item_id,
                                 int (*fn)(const struct store_run_failure *f, void *ctx),
                                 void *ctx);

/* One attempt at an item (an execute or plan_b run), for `report --item`:
 * strings are "" when the column is NULL, except verification (the data
 * of the run's "verification" decision, JSON text) which is NULL when the
 * run was not verified; times are -1 when not yet. */
struct store_run_attempt {
    const char *run_id, *kind, *status, *model, *error_class, *failure_reason, *summary;
    const char *verification;
    int attempt, tier, turns;
    int64_t started_at, ended_at;
};
/* Call fn for each attempt at item_id, oldest first; fn returns non-zero
 * to stop (that value is returned).  Borrowed strings, valid during the
 * call only. */
int store_run_item_attempts_each(store *st, const char *item_id,
                                 int (*fn)(const struct store_run_attempt *a, void *ctx),
                                 void *ctx);

/* A run's status and its goal and item ids, for transitions: *found is 0
 * when the run is absent.  item_id is "" when none. */
int store_run_status_get(store *st, const char *id, int *found, char status[32],
                         char goal_id[ID_SIZE], char item_id[ID_SIZE]);

/* Move a run from status `from` to `to` (ended_at = now when terminal);
 * *changed is 0 when it was no longer `from`. */
int store_run_status_set(store *st, const char *id, const char *from, const char *to, int terminal,
                         int64_t now_ms, int *changed);

/* What ending a run from outside (the daemon, cancel) needs to know. */
struct store_run_facts {
    char goal_id[ID_SIZE];
    char item_id[ID_SIZE]; /* "" for a goal-level unit */
    char kind[16];
    char lane[8];
    char status[16];
    int attempt;
    int timeout_s; /* 0: none recorded */
    int model_index;
};

/* ERR_NOTFOUND "run ID: not found". */
int store_run_facts_get(store *st, const char *id, struct store_run_facts *out);

/* Record why run id failed (class, signature, reason) if it is still
 * running. */
int store_run_set_failure_if_running(store *st, const char *id, const char *cls,
                                     const char *signature, const char *reason);

struct store_run_live {
    char id[ID_SIZE];
    long pid; /* 0: none recorded */
};

/* The running runs of goal_id, oldest first: *out (free(); NULL when
 * none) of *n. */
int store_run_running_of_goal(store *st, const char *goal_id, struct store_run_live **out,
                              size_t *n);

/* Record run id (if still running) as failed by a cancel: class and
 * reason "cancelled". */
int store_run_set_cancelled(store *st, const char *id);

#endif
