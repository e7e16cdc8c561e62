/*
 * event.h - the append-only event log.
 *
 * Events are written in the same transaction as the change they record
 * (callers open it).  The id is a strictly increasing sequence.
 */
#ifndef GOALD_STORE_EVENT_H
#define GOALD_STORE_EVENT_H

#include <stdint.h>

#include "store/store.h"

struct cJSON;

/* Append an event.  Any id may be NULL.  payload may be NULL ({}); it is
 * borrowed.  *seq_out (may be NULL) receives the event id. */
int store_event_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                    const char *type, const struct cJSON *payload, int64_t *seq_out);

/* Same with a payload already serialised as JSON text (NULL = {}). */
int store_event_add_raw(store *st, const char *goal_id, const char *item_id,
                        const char *run_id, const char *type, const char *payload_json,
                        int64_t *seq_out);

struct store_event {
    int64_t id;
    int64_t ts;
    const char *goal_id, *item_id, *run_id, *type, *payload; /* valid during the callback */
};

/* Call fn for each event with id > after_id (of goal_id when not NULL), in
 * order, at most limit (0 = all).  fn returns non-zero to stop (that value
 * is returned). */
int store_event_each(store *st, const char *goal_id, int64_t after_id, int limit,
                     int (*fn)(const struct store_event *ev, void *ctx), void *ctx);

/* Retention: delete the events before cutoff_ms; *deleted receives how
 * many went. */
int store_event_delete_before(store *st, int64_t cutoff_ms, int *deleted);

#endif
