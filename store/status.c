#include "store/status.h"

#include <string.h>

static const char *const goal_names[] = {
    [GOAL_QUEUED] = "queued",       [GOAL_ACTIVE] = "active",       [GOAL_BLOCKED] = "blocked",
    [GOAL_COMPLETED] = "completed", [GOAL_CANCELLED] = "cancelled",
};

static const char *const item_names[] = {
    [ITEM_QUEUED] = "queued",
    [ITEM_READY] = "ready",
    [ITEM_IN_PROGRESS] = "in_progress",
    [ITEM_VERIFY] = "verify",
    [ITEM_DONE] = "done",
    [ITEM_FAILED] = "failed",
    [ITEM_BLOCKED] = "blocked",
    [ITEM_ESCALATED] = "escalated",
    [ITEM_SKIPPED] = "skipped",
    [ITEM_CANCELLED] = "cancelled",
};

static const char *const run_names[] = {
    [RUN_RUNNING] = "running", [RUN_SUCCESS] = "success", [RUN_FAILED] = "failed",
    [RUN_TIMEOUT] = "timeout", [RUN_ABORTED] = "aborted",
};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* The index of name in names (n of them), or n. */
static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name))
            return i;
    return n;
}

enum goal_status goal_status_of(const char *name)
{
    return (enum goal_status)lookup(goal_names, COUNT(goal_names), name);
}

enum item_status item_status_of(const char *name)
{
    return (enum item_status)lookup(item_names, COUNT(item_names), name);
}

enum run_status run_status_of(const char *name)
{
    return (enum run_status)lookup(run_names, COUNT(run_names), name);
}

const char *goal_status_name(enum goal_status s)
{
    return (int)s >= 0 && (int)s < COUNT(goal_names) ? goal_names[s] : "?";
}

const char *item_status_name(enum item_status s)
{
    return (int)s >= 0 && (int)s < COUNT(item_names) ? item_names[s] : "?";
}

const char *run_status_name(enum run_status s)
{
    return (int)s >= 0 && (int)s < COUNT(run_names) ? run_names[s] : "?";
}

int item_status_finished(enum item_status s)
{
    return s == ITEM_DONE || s == ITEM_SKIPPED || s == ITEM_CANCELLED;
}

int goal_status_ended(enum goal_status s)
{
    return s == GOAL_COMPLETED || s == GOAL_CANCELLED;
}
