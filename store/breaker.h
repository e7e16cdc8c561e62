/*
 * breaker.h - the breakers table (circuit breakers by error class).
 *
 * Callback structs are only valid during the call.
 */
#ifndef GOALD_STORE_BREAKER_H
#define GOALD_STORE_BREAKER_H

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

#endif
