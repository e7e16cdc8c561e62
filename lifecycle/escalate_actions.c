/*
 * escalate_actions.c - what each kind of escalation offers a human, and
 * its scope: the packet lists these actions (escalate.c) and `goald
 * resolve` accepts exactly them (resolve.c).
 */
#include "lifecycle/escalate_actions.h"

#include <string.h>

/* What each kind of escalation offers: every action listed here does what
 * its option says (resolve.c), and no other is accepted.  The scope is
 * "item" (a work item's), "publish" (the goal's publish step) or "goal"
 * (elaboration, planning, the monitor). */
static const char *const item_budget_actions[] = {"increase_budget", "complete_partial", "pause",
                                                  NULL};
static const char *const goal_budget_actions[] = {"increase_budget", "pause", NULL};
static const char *const item_actions[] = {"retry",           "alternative",      "skip",
                                           "increase_budget", "complete_partial", "pause",
                                           NULL};
/* a blocked item (ask_human) cannot be skipped (docs/design.md §2): answer it */
static const char *const ask_actions[] = {"retry", "alternative", "complete_partial", "pause",
                                          NULL};
/* the model's key or configuration (alternative: retry with another
 * strategy once it is fixed) */
static const char *const item_config_actions[] = {"retry", "alternative", "skip",
                                                  "complete_partial", "pause", NULL};
/* an item refused because its tests were weakened or removed: a human
 * may accept named test changes (resolve.c) */
static const char *const tests_changed_actions[] = {
    "accept_test_changes", "retry", "alternative", "skip", "complete_partial", "pause", NULL};
static const char *const publish_actions[] = {"retry", "skip", "pause", NULL};
static const char *const goal_actions[] = {"retry", "pause", NULL};
static const char *const deadline_actions[] = {"retry", "complete_partial", "pause", NULL};
static const char *const criteria_actions[] = {"complete_partial", "pause", NULL};

const char *const *escalate_actions(const char *type, const char *scope)
{
    int item = scope && !strcmp(scope, "item");

    if (!strcmp(type, "deadline"))
        return deadline_actions;
    if (!strcmp(type, "criteria_unmet"))
        return criteria_actions;
    if (!strcmp(type, "budget"))
        return item ? item_budget_actions : goal_budget_actions;
    if (scope && !strcmp(scope, "publish"))
        return publish_actions;
    if (!item)
        return goal_actions;
    if (!strcmp(type, "ask_human"))
        return ask_actions;
    if (!strcmp(type, "tests_changed"))
        return tests_changed_actions;
    if (!strcmp(type, "auth") || !strcmp(type, "config"))
        return item_config_actions;
    return item_actions;
}

const char *escalate_scope(const char *item_id, const char *run_kind)
{
    if (item_id && *item_id)
        return "item";
    return run_kind && !strcmp(run_kind, "publish") ? "publish" : "goal";
}
