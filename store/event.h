/*
 * event.h - the append-only event log.
 *
 * Events are written in the same transaction as the change they record
 * (callers open it).  The id is a strictly increasing sequence.
 */
#ifndef GOALD_STORE_EVENT_H
#define GOALD_STORE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct cJSON;

/* Append an event.  Any id may be NULL.  payload may be NULL ({}); it is
 * borrowed.  A string in it longer than UTF8_TEXT_MAX bytes (util/utf8.h)
 * is stored cut, with a note saying so.  *seq_out (may be NULL) receives
 * the event id. */
int store_event_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                    const char *type, const struct cJSON *payload,
                    int64_t *seq_out) GOALD_MUST_CHECK;

/* Same with a payload already serialised as JSON text (NULL = {}). */
int store_event_add_raw(store *st, const char *goal_id, const char *item_id,
                        const char *run_id, const char *type, const char *payload_json,
                        int64_t *seq_out) GOALD_MUST_CHECK;

struct store_event {
    int64_t id;
    int64_t ts;
    const char *goal_id, *item_id, *run_id, *type, *payload; /* valid during the callback */
    int64_t payload_size; /* its bytes (store_event_each_capped() only) */
};

/* Call fn for each event with id > after_id (of goal_id when not NULL), in
 * order, at most limit (0 = all).  fn returns non-zero to stop (that value
 * is returned). */
int store_event_each(store *st, const char *goal_id, int64_t after_id, int limit,
                     int (*fn)(const struct store_event *ev, void *ctx), void *ctx);

/* store_event_each() for a reader of bounded memory: a payload larger
 * than inline_max bytes is not read (ev->payload NULL; read it in slices
 * with store_event_payload_read()); ev->payload_size is every payload's
 * size in bytes.  Memory: inline_max, whatever the events hold. */
int store_event_each_capped(store *st, const char *goal_id, int64_t after_id, int limit,
                            size_t inline_max, int (*fn)(const struct store_event *ev, void *ctx),
                            void *ctx);

/* Up to n bytes of event id's payload text from byte off on into buf
 * (not NUL-terminated): *got, 0 past its end (a slice may end inside a
 * UTF-8 character).  ERR_NOTFOUND when the event is gone. */
int store_event_payload_read(store *st, int64_t id, int64_t off, char *buf, size_t n, size_t *got);

/* The id of the last event before ts (ms); 0 when none. */
int store_event_id_before(store *st, int64_t ts, int64_t *out);

/* The last tool call started by run_id: its tool name and main argument
 * (path, command, pattern, summary or question, else the arguments as
 * text), cut to their buffers; both "" when the run called none. */
int store_event_last_tool_call(store *st, const char *run_id, char *tool, size_t tool_n,
                               char *arg, size_t arg_n);

/* The last failure event of goal_id (run.failed, run.timeout,
 * run.aborted, tool_call.failed): *found 1 with its time, type, reason
 * (reason, error or tool, else "") and tool ("" when none), cut to their
 * buffers; *found 0 when the goal has none. */
struct store_event_failure {
    int64_t ts;
    char type[64];
    char why[1024];
    char tool[256];
};
int store_event_last_failure(store *st, const char *goal_id, struct store_event_failure *out,
                             int *found);

/* The goal of the last failed, timed-out or aborted run or failed tool
 * call of any goal; "" when none. */
int store_event_last_failure_goal(store *st, char out[ID_SIZE]);

/* Tokens (in + out) and cost of the goal's last llm.response;
 * ERR_NOTFOUND (no message, outputs untouched) when it made none. */
int store_event_last_llm_usage(store *st, const char *goal_id, int64_t *tokens, double *cost_usd);

/* Call fn for each tool_call.started/completed/failed and worktree.reset
 * event of an item, in order, with its type and payload text (valid during the call).  fn
 * returns non-zero to stop (that value is returned). */
int store_event_item_tool_calls_each(store *st, const char *item_id,
                                     int (*fn)(const char *type, const char *payload, void *ctx),
                                     void *ctx);

/* One event of store_event_item_steps_each(): its type and payload, and
 * its run's id, status and error class ("" when none); borrowed, valid
 * during the call. */
struct store_step_event {
    const char *type, *payload, *run_id, *run_status, *run_error_class;
};

/* store_event_item_tool_calls_each() with each event's run. */
int store_event_item_steps_each(store *st, const char *item_id,
                                int (*fn)(const struct store_step_event *e, void *ctx),
                                void *ctx);

/* The goals that ended (goal.completed and goal.cancelled events) after
 * event *after_id, oldest first, into *ids (malloc'd, free(); NULL when
 * none) of *n; *after_id moves to the last event's id.  *after_id < 0
 * only reads where the events are now.  Event ids grow in the order
 * their transactions took the write lock, so an event whose transaction
 * is still open is missed: callers sweep now and then as well. */
int store_event_goals_ended_after(store *st, int64_t *after_id, char (**ids)[ID_SIZE], size_t *n);

/* Retention: delete the events before cutoff_ms; *deleted receives how
 * many went. */
int store_event_delete_before(store *st, int64_t cutoff_ms, int *deleted);

#endif
