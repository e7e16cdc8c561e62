/*
 * goal_evaluate.h - the goal-level evaluation before publish (stage
 * `evaluate`, see goal_evaluate.c): each success criterion judged from
 * the goal's diff, next to the deterministic evidence the items left.
 */
#ifndef GOALD_LIFECYCLE_GOAL_EVALUATE_H
#define GOALD_LIFECYCLE_GOAL_EVALUATE_H

struct job_ctx;
struct cJSON;

enum goal_eval_action {
    GOAL_EVAL_PUBLISH,   /* go on publishing (partial when *partial) */
    GOAL_EVAL_REPLANNED, /* follow-up items were planned: the goal goes on working */
    GOAL_EVAL_ESCALATED  /* a critical criterion is unmet: the goal waits for a human */
};

struct goal_eval {
    enum goal_eval_action action;
    int partial;            /* a criterion is left unmet or unchecked */
    struct cJSON *reasons;  /* owned: why partial, one string a criterion */
};

/* Evaluate j's goal (a publish run) on its worktree's head (40 hex).  A
 * criterion proven by test cases, or by a passing gate it names, needs
 * no model; the others are asked
 * of the model once per head (a publish retried on the same head reuses
 * the answer).  The verdicts are recorded as an "evaluation" decision
 * and a goal.evaluated event.  An unmet criterion that no gate or test
 * proves sends the goal back to planning once (follow-up items for it);
 * after that it escalates when a critical item serves it, else leaves
 * the goal partial.  human_partial: a human completed the goal as
 * partial (nothing is replanned or escalated).  A model that cannot be
 * asked leaves the unproven criteria unchecked.  out is filled (release
 * with goal_eval_release); 0, or an error after job_fail(). */
int goal_evaluate(struct goal_eval *out, struct job_ctx *j, const char *head, int human_partial);

void goal_eval_release(struct goal_eval *e);

#endif
