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

/* The evidence table of goal_id as a JSON array (one object per
 * criterion and done item: criterion, item, evidence, backed_by, tests),
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

/* Append a decision (created_at is now).  item_id, run_id, aspect,
 * severity and note may be NULL; data NULL is stored as {}. */
int store_decision_add(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *kind, const char *aspect, const char *severity, const char *note,
                       const struct cJSON *data) GOALD_MUST_CHECK;

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

#endif
