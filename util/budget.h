/*
 * budget.h - the one rule for a goal's budget, as a pure function of the
 * facts (what the goal may spend, what it spent, what the next model call
 * is estimated to cost).  Two callers ask it:
 *
 *   BUDGET_NEXT_CALL  lifecycle/control.c, before a call: would the call
 *                     overrun the budget?  tokens or cost when spent +
 *                     estimate > limit, hours when the wall time spent
 *                     reached the limit.
 *   BUDGET_SPENT      llm/chat.c, before each request: is the budget
 *                     already spent?  tokens or cost when spent >= limit
 *                     (the model client does not account wall time).
 *
 * The first limit reached, in the order tokens, cost, hours, is the
 * verdict.  Nothing is allocated.
 */
#ifndef GOALD_UTIL_BUDGET_H
#define GOALD_UTIL_BUDGET_H

#include <stdint.h>

struct budget_facts {
    int has_max_tokens, has_max_cost, has_max_hours; /* 0: no such limit */
    int64_t max_tokens;
    double max_cost_usd;
    double max_hours;
    int64_t spent_tokens;
    double spent_cost_usd;
    int64_t spent_wall_ms;
};

enum budget_rule { BUDGET_NEXT_CALL, BUDGET_SPENT };

enum budget_limit { BUDGET_OK, BUDGET_TOKENS, BUDGET_COST_USD, BUDGET_HOURS };

struct budget_verdict {
    enum budget_limit which;
    double value;     /* what was spent (hours for BUDGET_HOURS) */
    double threshold; /* the limit */
    double estimate;  /* the next call's estimate (0 for hours and BUDGET_SPENT) */
};

/* The verdict of rule on f for a next call estimated at est_tokens and
 * est_cost (ignored by BUDGET_SPENT).  Returns v->which. */
enum budget_limit budget_check(const struct budget_facts *f, enum budget_rule rule,
                               int64_t est_tokens, double est_cost, struct budget_verdict *v);

/* "tokens", "cost_usd", "hours" ("" for BUDGET_OK). */
const char *budget_limit_name(enum budget_limit l);

#endif
