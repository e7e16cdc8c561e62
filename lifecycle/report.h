/*
 * report.h - what a goal has come to: progress by effort points, items,
 * budget, escalations and artifacts (the `goald report` contract of
 * DESIGN.md §6).
 *
 * Returned cJSON trees belong to the caller (cJSON_Delete).
 */
#ifndef GOALD_LIFECYCLE_REPORT_H
#define GOALD_LIFECYCLE_REPORT_H

#include "store/goal.h"
#include "store/store.h"

struct cJSON;

/* The `goal` object of DESIGN.md §6 (id, title, status, branch, partial,
 * and more). */
struct cJSON *report_goal_json(const struct goal *g);

/* The whole report of goal_id.  0 and *out set, or an error. */
int report_build(store *st, const char *goal_id, struct cJSON **out);

/* Progress: percent with one decimal of done_points/total_points (0 when
 * there is nothing to do). */
double report_percent(long long done_points, long long total_points);

#endif
