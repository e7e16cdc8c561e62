/*
 * breaker.h - the circuit breakers' events and the closing of a breaker a
 * configuration error opened, below the policy of lifecycle/control.c.
 *
 * Here so that resolving an escalation (resolve.c) can close its breaker
 * without depending on control.c, which closes escalations itself
 * (control.c -> resolve.c -> breaker.c, no cycle).
 */
#ifndef GOALD_LIFECYCLE_BREAKER_H
#define GOALD_LIFECYCLE_BREAKER_H

#include <stdint.h>

#include "store/store.h"

/* Write the event type (circuit.opened, circuit.half_open,
 * circuit.closed) for cls's breaker, with the configured threshold and
 * cooldown; reason and run_id may be NULL. */
int breaker_event_write(store *st, const char *type, const char *cls, int failures,
                        const char *run_id, const char *reason);

/* Close cls's breaker if a configuration error opened it, with event
 * circuit.closed (reason why).  *changed (may be NULL) is 1 when it was
 * open.  The escalations of cls are left as they are. */
int breaker_close_config(store *st, const char *cls, const char *why, int64_t now_ms,
                         int *changed);

#endif
