/*
 * goal.h - the goals table.
 *
 * A struct goal read from the store owns its strings; store_goal_free()
 * releases them and the struct (accepts NULL).  Optional numbers use -1
 * (integers) or a negative value (doubles) for "not set".
 */
#ifndef GOALD_STORE_GOAL_H
#define GOALD_STORE_GOAL_H

#include <stdint.h>

#include "store/store.h"
#include "util/budget.h"
#include "util/id.h"

struct goal {
    char id[ID_SIZE];
    char *parent_id; /* NULL for a submitted goal */
    char *title;
    char *description;
    char *status;
    int priority;
    int is_template;
    char *schedule;
    char *repo;
    char *base_branch;
    char *branch;
    char *worktree;
    int64_t deadline_at; /* -1: none */
    int64_t budget_max_tokens;   /* -1: none */
    double budget_max_cost_usd;  /* < 0: none */
    double budget_max_hours;     /* < 0: none */
    int64_t spent_tokens;
    double spent_cost_usd;
    int64_t spent_wall_ms;
    char *success_criteria; /* JSON array text */
    char *allowed_actions;  /* JSON array text or NULL */
    char *verification;     /* JSON array text or NULL */
    char *publish;          /* JSON object text or NULL */
    char *elaboration;      /* JSON object text or NULL */
    char *spec;             /* the submitted JSON */
    int partial;
    char *blocked_reason;
    int64_t created_at, updated_at;
    int64_t started_at, ended_at; /* -1: not yet */
    char *outcome;        /* NULL, or "nothing_to_do" (a completed goal) */
    char *outcome_reason; /* why, in the model's words; NULL without outcome */
};

/* Insert g (its id, title, spec and status must be set; created_at and
 * updated_at are set here).  Runs in the caller's transaction. */
int store_goal_insert(store *st, struct goal *g);

/* Read a goal by full id.  ERR_NOTFOUND when absent. */
int store_goal_get(store *st, const char *id, struct goal **out);
void store_goal_free(struct goal *g);

/* Call fn for each goal (status filter may be NULL), newest first.  The
 * struct is only valid during the call; fn must not keep it. */
int store_goal_each(store *st, const char *status, int (*fn)(const struct goal *g, void *ctx),
                    void *ctx);

int store_goal_count(store *st, const char *status, int64_t *out);

/* Resolve an id given by a unique prefix (or whole) in table "goals",
 * "work_items", "runs" or "escalations".  Prefixes shorter than 8
 * characters are refused (ERR_INVALID), unknown ones are ERR_NOTFOUND,
 * ambiguous ones ERR_AMBIGUOUS; the message names the prefix. */
int store_resolve_id(store *st, const char *table, const char *prefix, char out[ID_SIZE]);

/* The budget facts of goal id (util/budget.h): its limits and what it
 * spent.  ERR_NOTFOUND "goal ID: not found" when there is no such goal. */
int store_goal_budget_get(store *st, const char *id, struct budget_facts *out);

/* Goal id's status into status (n bytes; "" when there is no such goal:
 * not an error); *never_elaborated (may be NULL) is 1 when the goal has no
 * elaboration yet. */
int store_goal_status_fresh(store *st, const char *id, char *status, size_t n,
                            int *never_elaborated);

/* Raise the goal's limits: each value > 0 replaces its limit (tokens are
 * stored as an integer), the others stay. */
int store_goal_budget_raise(store *st, const char *id, double max_tokens, double max_cost_usd,
                            double max_hours);

/* The goal completes with what is done: partial, its unit's attempts
 * reset. */
int store_goal_set_partial(store *st, const char *id);

/* Publish without push nor pull request (publish.push and
 * publish.pull_request false), the publish unit's attempts reset. */
int store_goal_publish_skip_push(store *st, const char *id);

/* The goal's unit may be claimed again now, with fresh attempts. */
int store_goal_attempts_rearm(store *st, const char *id);

/* The goal's unit is not claimed before at_ms. */
int store_goal_set_next_attempt(store *st, const char *id, int64_t at_ms);

/* The open instance (queued, active or blocked) of template_id into out
 * ("" when none). */
int store_goal_open_instance(store *st, const char *template_id, char out[ID_SIZE]);

#endif
