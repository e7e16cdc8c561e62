/*
 * breaker.h - the breakers table (circuit breakers by error class).
 *
 * Callback structs are only valid during the call.
 */
#ifndef GOALD_STORE_BREAKER_H
#define GOALD_STORE_BREAKER_H

#include <stdint.h>

#include "store/store.h"

struct store_breaker_state {
    const char *error_class, *state;
    int failures;
};

/* Call fn for each breaker that is not closed, by error class.  fn returns
 * non-zero to stop (that value is returned). */
int store_breaker_not_closed_each(store *st,
                                  int (*fn)(const struct store_breaker_state *b, void *ctx),
                                  void *ctx);

struct store_breaker {
    char error_class[64];
    char state[16];        /* closed, open, half_open */
    int failures;
    int64_t opened_at;
    int has_probe;         /* probe_run_id is set */
    char probe_status[16]; /* the probe run's status, "" when none */
    char config_fp[65];    /* "" unless a configuration error opened it */
};

/* The breakers that are not closed, by error class: at most max into
 * rows, *n how many. */
int store_breaker_list_not_closed(store *st, struct store_breaker *rows, int max, int *n);

/* cls's breaker becomes half_open with probe_run_id as its probe. */
int store_breaker_set_probe(store *st, const char *cls, const char *probe_run_id,
                            int64_t now_ms);

/* Make cls's breaker exist (closed, no failures) unless it does. */
int store_breaker_ensure(store *st, const char *cls, int64_t now_ms);

/* cls's state and failures into *out (the other fields are left empty).
 * ERR_NOTFOUND when there is no such breaker. */
int store_breaker_get(store *st, const char *cls, struct store_breaker *out);

/* Open cls's breaker for a configuration error: failures + 1, no probe,
 * the configuration's fingerprint and the reason remembered. */
int store_breaker_open_config(store *st, const char *cls, const char *config_fp,
                              const char *reason, int64_t now_ms);

/* Close cls's breaker if a configuration error opened it; *changed is 1
 * when it did. */
int store_breaker_close_config(store *st, const char *cls, int64_t now_ms, int *changed);

/* The classes (at most max) whose breaker a configuration other than
 * config_fp opened and that are not closed. */
int store_breaker_config_stale(store *st, const char *config_fp, char (*cls)[64], int max,
                               int *n);

/* Closed breakers forget their failures. */
int store_breaker_reset_failures(store *st, int64_t now_ms);

/* The half-open breakers (at most max) whose probe is run_id. */
int store_breaker_probed_by(store *st, const char *run_id, char (*cls)[64], int max, int *n);

/* Close cls's breaker: no failures, no probe. */
int store_breaker_close(store *st, const char *cls, int64_t now_ms);

/* Set cls's state and failures, its probe cleared; opened_at < 0 stores
 * none. */
int store_breaker_update(store *st, const char *cls, const char *state, int failures,
                         int64_t opened_at, int64_t now_ms);

#endif
