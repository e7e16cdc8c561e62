/*
 * report.h - what a goal has come to: progress by effort points, items,
 * budget, escalations and artifacts (the `goald report` contract of
 * DESIGN.md §6; the JSON shape is in docs/report-json.md).
 *
 * Reports are streamed: a goal with 100,000 work items is written row by
 * row, never held in memory as a tree.
 */
#ifndef GOALD_LIFECYCLE_REPORT_H
#define GOALD_LIFECYCLE_REPORT_H

#include <stdio.h>

#include "store/goal.h"
#include "store/store.h"

struct cJSON;

struct report_progress {
    long long done_points;  /* points of done and skipped items */
    long long total_points; /* points of every item */
    double percent;         /* one decimal */
    int items_total, items_done, items_skipped;
};

/* The status shown for g: its stored status, except "scheduled" for a
 * live template (stored queued; templates never run themselves). */
const char *report_goal_status(const struct goal *g);

/* The `goal` object (id, title, status, branch, partial, and more); the
 * caller frees it with cJSON_Delete(). */
struct cJSON *report_goal_json(const struct goal *g);

/* Progress of goal_id, from one aggregate query. */
int report_progress(store *st, const char *goal_id, struct report_progress *out);

/* percent with one decimal of done/total (0 when there is nothing to do). */
double report_percent(long long done_points, long long total_points);

/* Write the whole report of goal_id as one JSON object (and a newline), or
 * as text for people. */
int report_write_json(store *st, const char *goal_id, FILE *out);
int report_write_text(store *st, const char *goal_id, FILE *out);

/* One work item (by key): its baseline, test cases, changed gate inputs,
 * and each gate's latest result with its failing test cases and the tail
 * of its output.  ERR_NOTFOUND when the goal has no such item. */
int report_write_item(store *st, const char *goal_id, const char *key, int json, FILE *out);

#endif
