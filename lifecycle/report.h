/*
 * report.h - what a goal has come to: progress by effort points, items,
 * budget, escalations and artifacts (the `goald report` contract of
 * docs/design.md §6; the JSON shape is in docs/report-json.md).
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
    long long done_points;  /* points of done items (skipped ones are not done) */
    long long total_points; /* points of every item */
    long long skipped_points, blocked_points;
    double percent;         /* one decimal */
    int items_total, items_done, items_skipped;
    int items_blocked; /* blocked (waiting on an answer) or escalated */
    int items_running; /* in_progress or verify */
    int items_cancelled;
};

/* p as the "progress" object of `report --json` (and of each goal of
 * `goals --json`); cJSON_Delete it. */
struct cJSON *report_progress_json(const struct report_progress *p);

/* "no repository" when the goal has nothing to verify its work against
 * (no repo: no gates, no branch, no commit, no pull request), else NULL.
 * Shown as "unverified — no repository" wherever the goal is shown. */
const char *report_unverified_reason(const struct goal *g);
#define REPORT_NO_REPO "unverified \xe2\x80\x94 no repository"

/* A progress bar of width cells for people: '#' done, 's' skipped,
 * '!' blocked or escalated, '.' the rest, by points.  out has width + 1
 * bytes. */
void report_bar(char *out, int width, const struct report_progress *p);

/* One line of counts: "3 done, 1 skipped, 1 blocked of 6 items (8 of 11
 * points)"; skipped, blocked, running and cancelled items are named
 * whenever there are any. */
void report_counts(char *out, size_t n, const struct report_progress *p);

/* What a goal is doing now and what last went wrong, for `status` and
 * `watch`.  Strings are empty when unknown; times -1. */
struct report_activity {
    char run_id[40];
    char kind[16];       /* elaborate, plan, execute, ... ("" nothing runs) */
    char item_key[64];
    char item_title[256];
    int64_t run_started_at;
    int turn;            /* turns started by that run */
    char tool[32];       /* its last tool call */
    char tool_arg[256];  /* that call's main argument (path, command, pattern) */
    int others_running;  /* more runs of the goal going (items side by side) */
    char last_error[512];
    int64_t last_error_at;
    int open_escalations;
};
int report_activity(store *st, const char *goal_id, struct report_activity *out);

/* The status shown for g: its stored status, except "scheduled" for a
 * live template (stored queued; templates never run themselves). */
const char *report_goal_status(const struct goal *g);

/* The `goal` object (id, title, status, branch, partial, and more); the
 * caller frees it with cJSON_Delete(). */
struct cJSON *report_goal_json(const struct goal *g);

/* Progress of goal_id, from one aggregate query. */
int report_progress(store *st, const char *goal_id, struct report_progress *out);

/* Append to rows one evidence row per criterion the goal-level
 * evaluation judged (item null, kind review, or unchecked when it gave
 * no verdict; report_eval.c).  0, or an error when it cannot be read. */
int report_evaluation_rows(store *st, const char *goal_id, struct cJSON *rows);

/* Why the goal's criteria leave it partial (the evaluation's reasons, one
 * string each; [] when none): cJSON_Delete it. */
struct cJSON *report_partial_reasons(store *st, const char *goal_id);

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
