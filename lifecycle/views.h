/*
 * views.h - the JSON objects goald shows, built once for both the CLI's
 * --json and the HTTP API (http/), so that the two cannot drift.
 *
 * Every builder returns a new cJSON tree the caller frees with
 * cJSON_Delete(); they abort on out of memory (util/xalloc.h) and report
 * no other failure: a part that cannot be read is shown as unknown (-1,
 * null), as `goald status` always did.
 */
#ifndef GOALD_LIFECYCLE_VIEWS_H
#define GOALD_LIFECYCLE_VIEWS_H

#include <stdint.h>

#include "store/escalation.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/store.h"

struct cJSON;

/* `goald status --json`: the daemon's heartbeat, queues, lanes, running
 * jobs with their activity, breakers, open escalations, last error. */
struct cJSON *view_status(store *st, int64_t now);

/* One goal of `goald goals --json`: report_goal_json(), its progress
 * (report_progress_json()) and next_fire_at (the template's next fire
 * time, else null). */
struct cJSON *view_goal_listed(store *st, const struct goal *g, int64_t now);

/* The shown status of g ("scheduled" for a live template) matches want
 * (NULL: any). */
int view_goal_status_matches(const struct goal *g, const char *want);

/* 1 when s is a status `goals` filters on: scheduled or a goal status. */
int view_goal_status_valid(const char *s);
#define VIEW_GOAL_STATUSES "scheduled, queued, active, blocked, completed or cancelled"

/* The stored status to ask the store for when the shown status want is
 * asked (a template is stored queued and shown scheduled). */
const char *view_goal_status_stored(const char *want);

/* One escalation of `goald escalations --json`, with its whole packet. */
struct cJSON *view_escalation(const struct store_escalation *e);

/* One event of `goald events --json`: seq, time, type, goal_id, item_id,
 * run_id (null when none) and payload. */
struct cJSON *view_event(const struct store_event *ev);

/* A time for `events --since` and `GET /v1/events?since=`: an RFC 3339
 * date-time, or a duration back from now ("90s", "10m", "2h", "1d"),
 * into *out (ms).  0, or -1 when s is neither. */
int view_parse_since(const char *s, int64_t now, int64_t *out);

#endif
