/*
 * escalation.h - the escalations table, and the decisions table (what
 * verify, review and the final check decided about a goal and its items).
 *
 * In _each() callbacks the struct and its strings are borrowed from the
 * store and valid only during the call; fn must copy what it keeps.  fn
 * returns non-zero to stop, and that value is returned.  The cJSON a
 * function hands out through *out belongs to the caller (cJSON_Delete).
 */
#ifndef GOALD_STORE_ESCALATION_H
#define GOALD_STORE_ESCALATION_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct cJSON;

/* One escalation.  Each function below says which fields it fills; the
 * others are NULL (created_at 0). */
struct store_escalation {
    const char *id, *goal_id, *item_id, *type, *severity, *urgency, *status;
    const char *resolution; /* the action taken */
    const char *packet;     /* JSON text */
    int64_t created_at;
    const char *goal_title;      /* the goal's title */
    const char *item_key;        /* the work item's key */
    const char *item_title;      /* the work item's title (from the packet) */
    const char *question;        /* the packet's minimal_question */
    const char *last_tool_calls; /* the packet's last_tool_calls, JSON text */
    const char *resolution_input; /* the human's input to the action taken */
};

/* The number of open escalations of goal_id. */
int store_escalation_count_open(store *st, const char *goal_id, int *out);

/* The open escalations of goal_id, oldest first, with the packet's
 * question, work item (key, title) and last tool calls: id, item_id (NULL:
 * the goal's own), type, severity, urgency, status, created_at, question,
 * item_key (NULL when the packet names no item), item_title,
 * last_tool_calls (may be NULL). */
int store_escalation_each_open_of_goal(store *st, const char *goal_id,
                                       int (*fn)(const struct store_escalation *e, void *ctx),
                                       void *ctx);

/* Every escalation (open ones only unless all), oldest first, for
 * `goald escalations`: id, goal_id, item_id ("" for the goal's own),
 * type, severity, urgency, status, resolution ("" when none), packet,
 * created_at, goal_title and item_key ("" when none). */
int store_escalation_each_listed(store *st, int all,
                                 int (*fn)(const struct store_escalation *e, void *ctx),
                                 void *ctx);

/* The escalations of item_id a human answered (resolved, not by the
 * system), newest first, at most limit: type, resolution (the action),
 * resolution_input ("" when none) and question (the packet's
 * minimal_question, "" when none). */
int store_escalation_each_answered(store *st, const char *item_id, int limit,
                                   int (*fn)(const struct store_escalation *e, void *ctx),
                                   void *ctx);

/* At most limit open escalations of goal_id, oldest first, for `watch`:
 * type, item_key ("" when none) and question (the packet's, else the
 * item's, else ""). */
int store_escalation_each_open_question(store *st, const char *goal_id, int limit,
                                        int (*fn)(const struct store_escalation *e, void *ctx),
                                        void *ctx);

/* One decision row; each function below says which fields it fills. */
struct store_decision {
    const char *kind, *aspect, *severity, *note;
    const char *data;     /* JSON text */
    const char *item_key; /* the key of the decision's work item */
};

/* The data of the latest "verification" decision of item_id (verify.c:
 * baseline, granularity, test cases, changed gate inputs), parsed; *out
 * is NULL when there is none. */
int store_decision_latest_verification(store *st, const char *item_id, struct cJSON **out);

/* The partial_failures of the latest final_check decision of goal_id
 * that found the goal partial, parsed; *out NULL when none. */
int store_decision_partial_failures(store *st, const char *goal_id, struct cJSON **out);

/* The data of the latest final_check decision of goal_id, parsed; *out
 * NULL when none. */
int store_decision_latest_final_check(store *st, const char *goal_id, struct cJSON **out);

/* The data of item_id's latest decision of kind, parsed, into *out
 * (cJSON_Delete); NULL when there is none. */
int store_decision_latest_of_item(store *st, const char *item_id, const char *kind,
                                  struct cJSON **out);

/* An item's best attempt: the latest run whose gates passed on its own
 * tree but whose verification found the tests weakened, and whose
 * changes were saved as a patch when the worktree was reset. */
struct store_best_attempt {
    char run_id[ID_SIZE];
    char *patch;                 /* the patch file (goald's, outside the worktree) */
    char *reason;                /* the run's failure reason */
    struct cJSON *verification;  /* that run's verification data */
};

/* The best attempt of item_id into *out (*found 0 when there is none);
 * release it with store_best_attempt_release(). */
int store_decision_best_attempt(store *st, const char *item_id, struct store_best_attempt *out,
                                int *found);
void store_best_attempt_release(struct store_best_attempt *b);

/* The data of goal_id's latest goal-level decision (no item) of kind,
 * parsed, into *out (cJSON_Delete); NULL when there is none. */
int store_decision_latest_of_goal(store *st, const char *goal_id, const char *kind,
                                  struct cJSON **out);

/* The evidence table of goal_id as a JSON array (one object per
 * criterion and done item: criterion, item, evidence, backed_by, tests,
 * kind, backing),
 * in item order; *out NULL when it cannot be read. */
int store_decision_evidence_rows(store *st, const char *goal_id, struct cJSON **out);

/* The latest evidence decision of each (done item, criterion) of goal_id,
 * in item order: note (the criterion), data, item_key. */
int store_decision_each_evidence(store *st, const char *goal_id,
                                 int (*fn)(const struct store_decision *d, void *ctx),
                                 void *ctx);

/* The done items of goal_id whose latest verification changed gate
 * inputs, in item order: item_key and data (the JSON array of the changed
 * paths). */
int store_decision_each_gate_inputs_changed(store *st, const char *goal_id,
                                            int (*fn)(const struct store_decision *d, void *ctx),
                                            void *ctx);

/* The review decisions of goal_id (review_verdict, review_finding,
 * review_unavailable), oldest first: item_key, kind, aspect, severity and
 * note ("" when not set). */
int store_decision_each_review(store *st, const char *goal_id,
                               int (*fn)(const struct store_decision *d, void *ctx), void *ctx);

struct cJSON;

/* The item's latest "test_changes_accepted" decision (a human's waiver:
 * {"cases": [id, ...]}, every case waived so far) into *out
 * (cJSON_Delete), NULL when there is none. */
int store_decision_latest_waiver(store *st, const char *item_id, struct cJSON **out);

/* A decision to append (store_decision_add()): item_id, run_id, aspect,
 * severity and note may be NULL; data NULL is stored as {}.  Every
 * pointer is the caller's. */
struct store_decision_new {
    const char *goal_id, *item_id, *run_id;
    const char *kind, *aspect, *severity, *note;
    const struct cJSON *data;
};

/* Append the decision d (created_at is now). */
int store_decision_add(store *st, const struct store_decision_new *d) GOALD_MUST_CHECK;

/* The baseline of goal_id's first "verification" decision that has one
 * (the goal's starting commit) into out (n bytes), or "" when there is
 * none. */
int store_decision_first_verification_baseline(store *st, const char *goal_id, char *out, size_t n);

/* How many escalations are open. */
int store_escalation_count_open_all(store *st, int64_t *out);

/* Close the open escalations of a goal that ended, by the system, with
 * reason: fn is called for each one closed (id, type), in creation order,
 * after its row was updated; fn returns non-zero to stop. */
int store_escalation_close_by_system(store *st, const char *goal_id, const char *reason,
                                     int64_t now_ms,
                                     int (*fn)(const char *id, const char *type, void *ctx),
                                     void *ctx);

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
