/*
 * escalation.h - the escalations table (a question for a human, with its
 * packet and its resolution), and the reads that fill a packet.
 *
 * Structs are the caller's and own nothing.  The cJSON arrays and objects
 * given to the packet readers belong to the caller (cJSON_Delete); rows
 * are appended to them.  Writes run in the caller's transaction.
 */
#ifndef GOALD_STORE_ESCALATION_H
#define GOALD_STORE_ESCALATION_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct cJSON;

struct store_escalation_new {
    const char *id, *goal_id;
    const char *item_id, *run_id; /* NULL: none */
    const char *type, *severity, *urgency;
    const char *packet; /* JSON text */
    int64_t created_at;
};

/* Insert an open escalation unless one of the same item (or goal) and
 * type is open already: *inserted is 1 when this one was. */
int store_escalation_insert(store *st, const struct store_escalation_new *e, int *inserted);

/* Packet: every run of item_id (or, item_id NULL, the goal's runs without
 * an item), oldest first, as objects {run_id, kind, attempt, tier,
 * model_index, model, status, strategy, tried, why_failed, error_class,
 * signature} appended to arr; an attempt's strategy is the last Plan B or
 * human alternative given to the item before the run ("as planned"). */
int store_escalation_packet_attempts(store *st, const char *goal_id, const char *item_id,
                                     struct cJSON *arr);

/* Packet: the latest result of each gate of item_id, {name, exit_code,
 * classification} appended to passing or failing. */
int store_escalation_packet_gates(store *st, const char *item_id, struct cJSON *passing,
                                  struct cJSON *failing);

/* Packet: the goal's artifacts {type, ref, path, hash}, appended to arr. */
int store_escalation_packet_artifacts(store *st, const char *goal_id, struct cJSON *arr);

/* Packet: the last 5 tool calls of run_id but ask_human, oldest first,
 * {tool, args (its first 300 characters)} appended to arr. */
int store_escalation_packet_tool_calls(store *st, const char *run_id, struct cJSON *arr);

/* An escalation with what resolving it needs to know. */
struct store_escalation_ref {
    char id[ID_SIZE], goal_id[ID_SIZE];
    char item_id[ID_SIZE]; /* "" for a goal's */
    char type[32], status[16];
    char item_status[16]; /* "" without an item */
    char run_kind[16];    /* "" without a run */
};

/* ERR_NOTFOUND "escalation ID: not found". */
int store_escalation_ref_get(store *st, const char *id, struct store_escalation_ref *out);

/* pause: the escalation stays open; its resolution says pause. */
int store_escalation_set_paused(store *st, const char *id, const char *input);

/* Resolve escalation id with resolution and its input (may be NULL). */
int store_escalation_resolve(store *st, const char *id, const char *resolution,
                             const char *input, int64_t now_ms);

/* Every other open escalation of goal_id (but except_id) resolves as
 * complete_partial. */
int store_escalation_resolve_others_partial(store *st, const char *goal_id,
                                            const char *except_id, int64_t now_ms);

/* *yes = 1 when something still holds goal_id: an open escalation (not a
 * deadline's) of the goal or of a critical item, or a critical item
 * blocked or escalated. */
int store_escalation_goal_held(store *st, const char *goal_id, int *yes);

/* The open escalations of type (of goal_id, or of any goal when NULL) the
 * system may close: not the publish unit's, and with goal_only not an
 * item's; oldest first.  *out is malloc'd (free(); NULL when none). */
int store_escalation_ids_system_closable(store *st, const char *goal_id, const char *type,
                                         int goal_only, char (**out)[ID_SIZE], size_t *n);

/* Goals (at most max) that are open and past their deadline, without a
 * deadline escalation. */
int store_escalation_goals_past_deadline(store *st, int64_t now_ms, char (*ids)[ID_SIZE],
                                         int max, int *n);

/* Active goals (at most max) that spent one of their budgets, without an
 * open budget escalation. */
int store_escalation_goals_budget_spent(store *st, char (*ids)[ID_SIZE], int max, int *n);

#endif
