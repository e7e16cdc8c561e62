/*
 * status.h - the statuses of goals, work items and runs as enums.
 *
 * The database stores a status as its name (the state machines of
 * lifecycle/transitions.c, docs/lifecycle.md); code outside the store
 * compares the enums these return, never the names.  A name that is not a
 * status (NULL, a row from a newer binary) is *_UNKNOWN.
 */
#ifndef GOALD_STORE_STATUS_H
#define GOALD_STORE_STATUS_H

enum goal_status {
    GOAL_QUEUED,
    GOAL_ACTIVE,
    GOAL_BLOCKED,
    GOAL_COMPLETED,
    GOAL_CANCELLED,
    GOAL_STATUS_UNKNOWN,
};

enum item_status {
    ITEM_QUEUED,
    ITEM_READY,
    ITEM_IN_PROGRESS,
    ITEM_VERIFY,
    ITEM_DONE,
    ITEM_FAILED,
    ITEM_BLOCKED,
    ITEM_ESCALATED,
    ITEM_SKIPPED,
    ITEM_CANCELLED,
    ITEM_STATUS_UNKNOWN,
};

enum run_status {
    RUN_RUNNING,
    RUN_SUCCESS,
    RUN_FAILED,
    RUN_TIMEOUT,
    RUN_ABORTED,
    RUN_STATUS_UNKNOWN,
};

enum goal_status goal_status_of(const char *name);
enum item_status item_status_of(const char *name);
enum run_status run_status_of(const char *name);

/* The stored name of a status ("?" for *_UNKNOWN); static strings. */
const char *goal_status_name(enum goal_status s);
const char *item_status_name(enum item_status s);
const char *run_status_name(enum run_status s);

/* An item that will not run again: done, skipped or cancelled. */
int item_status_finished(enum item_status s);

/* A goal that ended: completed or cancelled. */
int goal_status_ended(enum goal_status s);

#endif
