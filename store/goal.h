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
    char *head_commit;    /* the commit of the last item that reached done (40 hex),
                           * NULL before: a clone-mode goal's head (docs/scaling.md) */
    int clone; /* 1 in clone mode, 0 not, -1 not recorded (submitted before it
                  was: ask the repository, lifecycle/workspace.h) */
};

/* Insert g (its id, title, spec and status must be set; created_at and
 * updated_at are set here).  Runs in the caller's transaction. */
int store_goal_insert(store *st, struct goal *g) GOALD_MUST_CHECK;

/* Read a goal by full id.  ERR_NOTFOUND when absent. */
int store_goal_get(store *st, const char *id, struct goal **out);
void store_goal_free(struct goal *g);

/* Call fn for each goal (status filter may be NULL), newest first.  The
 * struct is only valid during the call; fn must not keep it. */
int store_goal_each(store *st, const char *status, int (*fn)(const struct goal *g, void *ctx),
                    void *ctx);

int store_goal_count(store *st, const char *status, int64_t *out);

/* The kinds of rows a person names by id (a prefix of it). */
enum store_kind {
    STORE_KIND_GOAL,
    STORE_KIND_ITEM,
    STORE_KIND_RUN,
    STORE_KIND_ESCALATION,
};

/* Resolve an id of a row of kind given by a unique prefix (or whole).
 * Prefixes shorter than 8 characters are refused (ERR_INVALID), unknown
 * ones are ERR_NOTFOUND, ambiguous ones ERR_AMBIGUOUS; the message names
 * the kind ("goal", "work item", "run", "escalation") and the prefix. */
int store_resolve_id(store *st, enum store_kind kind, const char *prefix, char out[ID_SIZE]);

/* Add a model call's spend (tokens and cost) to goal_id's spent_tokens and
 * spent_cost_usd.  Runs in the caller's transaction. */
int store_goal_add_spend(store *st, const char *goal_id, int64_t tokens, double cost_usd);

/* Set the goal's partial flag (the final check found pre-existing
 * failures).  Runs in the caller's transaction, if any. */
int store_goal_set_partial(store *st, const char *goal_id);

/* The ids of the goals open now (queued, active or blocked; templates
 * left out), oldest first: *out is a malloc'd array of *n ids (free() it;
 * NULL when none). */
int store_goal_open_ids(store *st, char (**out)[ID_SIZE], size_t *n);

/* *ended is 1 when goal_id is completed or cancelled, else 0 (also when
 * there is no such goal). */
int store_goal_ended(store *st, const char *goal_id, int *ended);

/* An open goal with what holds it, for `daemon --once`: its first open
 * escalation (escalation_id and packet, NULL when none), the open
 * breakers ("class: reason; ...", NULL when none) and the first open
 * escalation about an open breaker (NULL when none).  Borrowed: valid
 * during the callback. */
struct store_goal_waiting {
    const char *id, *title;
    const char *escalation_id, *packet;
    const char *breakers;
    const char *breaker_escalation_id;
};

/* Call fn for each open goal (queued, active, blocked; no templates),
 * oldest first; fn returns non-zero to stop (that value is returned). */
int store_goal_each_waiting(store *st, int (*fn)(const struct store_goal_waiting *w, void *ctx),
                            void *ctx);

/* One more attempt of the goal's current stage (a claim); and none (its
 * stage is done: the next one starts with its own retries). */
int store_goal_attempts_inc(store *st, const char *id);
int store_goal_attempts_reset(store *st, const char *id);

/* Add the wall time of run_id (now_ms - its started_at, at least 0) to the
 * goal's spent_wall_ms. */
int store_goal_spend_run_wall(store *st, const char *goal_id, const char *run_id, int64_t now_ms);

/* A goal's status, for transitions: *found is 0 when absent. */
int store_goal_status_get(store *st, const char *id, int *found, char status[32]);

/* Move a goal from `from` to `to` (updated_at = now; started_at on the
 * first active; ended_at when terminal); *changed is 0 when it was no
 * longer `from`. */
int store_goal_status_set(store *st, const char *id, const char *from, const char *to,
                          int terminal, int64_t now_ms, int *changed);

/* The worktree path of a goal (set by its first run). */
int store_goal_set_worktree(store *st, const char *id, const char *worktree);

/* Record sha (40 hex) as the goal's head: the commit of the item that
 * reaches done in the caller's transaction.  The head of a goal in clone
 * mode is this, never what a remote says. */
int store_goal_set_head(store *st, const char *id, const char *sha) GOALD_MUST_CHECK;

/* The elaboration's result (JSON texts; allowed_actions may be NULL). */
int store_goal_set_elaboration(store *st, const char *id, const char *success_criteria,
                               const char *allowed_actions, const char *verification,
                               const char *elaboration);

/* The elaboration found nothing to do: outcome nothing_to_do with the
 * model's reason, no branch. */
int store_goal_set_nothing_to_do(store *st, const char *id, const char *elaboration,
                                 const char *reason);

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
int store_goal_set_partial_rearm(store *st, const char *id);

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
