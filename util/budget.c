#include "util/budget.h"

#include <string.h>

const char *budget_limit_name(enum budget_limit l)
{
    switch (l) {
    case BUDGET_TOKENS: return "tokens";
    case BUDGET_COST_USD: return "cost_usd";
    case BUDGET_HOURS: return "hours";
    case BUDGET_OK: break;
    }
    return "";
}

static enum budget_limit verdict(struct budget_verdict *v, enum budget_limit which, double value,
                                 double threshold, double estimate)
{
    v->which = which;
    v->value = value;
    v->threshold = threshold;
    v->estimate = estimate;
    return which;
}

/* Would the next call overrun?  (control_check_budget's rule.) */
static enum budget_limit next_call(const struct budget_facts *f, int64_t est_tokens,
                                   double est_cost, struct budget_verdict *v)
{
    if (f->has_max_tokens && f->spent_tokens + est_tokens > f->max_tokens)
        return verdict(v, BUDGET_TOKENS, (double)f->spent_tokens, (double)f->max_tokens,
                       (double)est_tokens);
    if (f->has_max_cost && f->spent_cost_usd + est_cost > f->max_cost_usd)
        return verdict(v, BUDGET_COST_USD, f->spent_cost_usd, f->max_cost_usd, est_cost);
    if (f->has_max_hours && (double)f->spent_wall_ms >= f->max_hours * 3600000.0)
        return verdict(v, BUDGET_HOURS, (double)f->spent_wall_ms / 3600000.0, f->max_hours, 0);
    return BUDGET_OK;
}

/* Is it spent already?  (The model client's rule, before each request.) */
static enum budget_limit spent(const struct budget_facts *f, struct budget_verdict *v)
{
    if (f->has_max_tokens && f->spent_tokens >= f->max_tokens)
        return verdict(v, BUDGET_TOKENS, (double)f->spent_tokens, (double)f->max_tokens, 0);
    if (f->has_max_cost && f->spent_cost_usd >= f->max_cost_usd)
        return verdict(v, BUDGET_COST_USD, f->spent_cost_usd, f->max_cost_usd, 0);
    return BUDGET_OK;
}

enum budget_limit budget_check(const struct budget_facts *f, enum budget_rule rule,
                               int64_t est_tokens, double est_cost, struct budget_verdict *v)
{
    memset(v, 0, sizeof(*v));
    if (rule == BUDGET_SPENT)
        return spent(f, v);
    return next_call(f, est_tokens, est_cost, v);
}
