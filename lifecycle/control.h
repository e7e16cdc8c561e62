/*
 * control.h - the control plane: run limits, goal budgets, backoff,
 * circuit breakers and no-progress detection.  Every decision is an event
 * (control.limit_reached, retry.scheduled, circuit.opened, circuit.half_open,
 * circuit.closed, progress.stalled); every threshold is a row of the config
 * table (control.*, breaker.*).
 */
#ifndef GOALD_LIFECYCLE_CONTROL_H
#define GOALD_LIFECYCLE_CONTROL_H

#include <stdint.h>

#include "store/store.h"
#include "util/hash.h"

/* min(base * 2^(n-1), max) in ms for the n-th failure (n >= 1), from the
 * config (control.backoff_base_ms, control.backoff_max_ms). */
int64_t control_backoff_ms(int n);

/* ---- run limits ---- */

struct run_usage {
    int turns;          /* model calls made */
    int64_t tokens;     /* input + output so far */
    int64_t started_ms; /* monotonic start of the run */
};

/* Before a model call: ERR_TIMEOUT-like refusal when a limit is reached.
 * Returns 0 when the call may go ahead, or ERR_POLICY with *limit set to
 * "max_turns", "max_wall_time" or "max_tokens" after writing the event
 * control.limit_reached {task_id, limit_type, value, threshold}. */
int control_check_run(store *st, const char *goal_id, const char *item_id, const char *run_id,
                      const struct run_usage *u, int64_t now_mono_ms, const char **limit);

/* Before a model call: would the goal's budget be overrun by the next call
 * (estimated at est_tokens and est_cost)?  0 when it may go ahead, else
 * ERR_POLICY with *which = "tokens", "cost_usd" or "hours" after writing
 * control.limit_reached {limit_type: "budget.<which>", value, estimate,
 * threshold}. */
int control_check_budget(store *st, const char *goal_id, const char *item_id,
                         const char *run_id, int64_t est_tokens, double est_cost,
                         const char **which);

/* At the start of a stage that calls models: a goal with a USD budget
 * (budget_max_cost_usd > 0) may only use a chain whose every model has a
 * known price (llm_client_prices_check()); a model without one would count
 * as $0 against the cap.  0, or ERR_POLICY naming the model and the
 * llm.price_* settings. */
struct goal;
typedef struct llm_client llm_client;
int control_check_prices(const struct goal *g, const llm_client *c);

/* ---- circuit breakers (table breakers, shared by every process) ---- */

/* May a new unit of work that will call a model be claimed now?  Moves
 * open breakers whose cooldown passed to half_open (event), and lets
 * exactly one claim through a half-open breaker as its probe (recorded
 * against probe_run_id).  *allowed receives 1 or 0; *blocking (may be
 * NULL) the error class that blocks. Run inside the claim transaction. */
int breaker_gate(store *st, int64_t now_ms, const char *probe_run_id, int *allowed,
                 char *blocking, size_t blocking_n);

/* Record the outcome of a model call: failure of error class cls (NULL on
 * success).  Success closes a half-open breaker probed by run_id,
 * resets the failure counts of closed breakers and closes the open
 * escalations of a provider's outage (control_provider_down()); failure counts towards
 * opening its class's breaker and reopens a half-open one. */
int breaker_record(store *st, const char *cls, const char *run_id, int64_t now_ms);

/* 1 when an escalation of this type stands for a provider's outage
 * (provider_api, timeout, rate_limit): breaker_record()'s success closes
 * every open one (resolution system, event escalation.closed). */
int control_provider_down(const char *type);

/* A configuration or credential error (class config or auth): open cls's
 * breaker at once, remembering the fingerprint of the model configuration
 * (llm_config_fingerprint()) and reason.  Such a breaker has no cooldown:
 * breaker_gate() keeps it open until the configuration it sees differs
 * (then it closes it and closes the escalations of class cls, see
 * resolve_by_system()), or breaker_close_sticky() is called. */
int breaker_trip(store *st, const char *cls, const char *run_id, const char *reason,
                 int64_t now_ms);

/* The breakers a configuration error opened whose configuration is not
 * this process's any more: closed (breaker_close_sticky()), so that the
 * goals and items they held go on.  Returns how many, or an error. */
int breaker_config_sweep(store *st, int64_t now_ms);

/* Close cls's breaker if a configuration error opened it (event
 * circuit.closed with why).  Unless why is "escalation resolved", the
 * open escalations of type cls are closed by the system with why. */
int breaker_close_sticky(store *st, const char *cls, const char *why, int64_t now_ms);

/* why, when the daemon starts (the environment is read again) */
#define BREAKER_WHY_RESTART "the daemon restarted: it read its configuration and environment again"

/* ---- no-progress detection ---- */

struct progress_detector {
    char last[HASH_HEX_SIZE];
    int same; /* how many identical fingerprints in a row */
    int k;
};

void progress_init(struct progress_detector *d, int k);

/* The fingerprint of a turn: sha256 over its four parts (any may be NULL). */
void progress_fingerprint(char out[HASH_HEX_SIZE], const char *diff_hash, const char *tool_sig,
                          const char *error_class, const char *reply_hash);

/* Observe one turn's fingerprint; returns 1 when the last k were identical
 * (the caller then writes progress.stalled and fails the run). */
int progress_observe(struct progress_detector *d, const char *fingerprint);

#endif
