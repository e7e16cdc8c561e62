/*
 * intake.h - stage 1: validate a goal's JSON strictly and store it.
 *
 * Messages name the file and the JSON path, e.g.
 *   "goal.json: budget.max_tokens: expected a positive integer, got \"abc\""
 * (the CLI adds "goald: ").  Every field is checked: intake_parse_all()
 * gives every error; the error slot holds the first.
 */
#ifndef GOALD_LIFECYCLE_INTAKE_H
#define GOALD_LIFECYCLE_INTAKE_H

#include <stddef.h>

#include "store/goal.h"
#include "util/strbuf.h"
#include "store/store.h"

#define INTAKE_MAX_BYTES (1 << 20)

struct cJSON;

/* The actions a goal may allow (the agent's tool names). */
extern const char *const intake_actions[];

/* 1 when actions (a JSON array of action names) lets the model change the
 * worktree or run commands (bash, write or edit); 0 for a read-only goal
 * or NULL. */
int intake_actions_change(const struct cJSON *actions);

/* Validate text (len bytes) as a goal.  On success *out is a new goal
 * (free with store_goal_free()) whose id is still empty; on failure
 * ERR_INVALID and nothing is allocated. */
int intake_parse(struct goal **out, const char *text, size_t len, const char *fname);

/* The same, appending every error to errors (one a line, may be NULL) and
 * the warnings of a valid goal (a deadline already past) to warnings (may
 * be NULL). */
int intake_parse_all(struct goal **out, const char *text, size_t len, const char *fname,
                     strbuf *errors, strbuf *warnings);

/* The same for a goal submitted over the HTTP API: its repo must lie
 * under http.repos and its publish.remote (a path or a URL) under
 * http.remotes, checked before anything is opened; ERR_POLICY (the
 * message names the setting) when it does not, or when http.repos is
 * empty.  A repository path is stored resolved (symbolic links
 * followed), as it was admitted. */
int intake_parse_api(struct goal **out, const char *text, size_t len, const char *fname,
                     strbuf *errors, strbuf *warnings);

/* Give g an id (and its branch name when it has a repo), insert it as
 * `queued` with the event goal.submitted, in one transaction.  id_out
 * receives the id. */
int intake_submit(store *st, struct goal *g, char id_out[ID_SIZE]);

#endif
