#include "lifecycle/cancel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/transitions.h"
#include "store/goal.h"
#include "util/err.h"
#include "util/id.h"
#include "util/log.h"
#include "vcs/worktree.h"

int lifecycle_goal_cancel(store *st, const char *goal_id, int *n_items)
{
    static const char sql[] =
        "SELECT id FROM work_items WHERE goal_id = ? AND status IN"
        " ('queued','ready','in_progress','blocked','escalated') ORDER BY created_at, rowid";
    char (*ids)[ID_SIZE] = NULL;
    size_t n = 0;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = transition_apply(st, ENTITY_GOAL, goal_id, "cancelled", NULL, NULL)) != 0)
        goto fail;
    if ((rc = store_ids(st, sql, goal_id, &ids, &n)) != 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        if ((rc = transition_apply(st, ENTITY_ITEM, ids[i], "cancelled", NULL, NULL)) != 0)
            goto fail;
    if ((rc = store_tx_commit(st)) != 0)
        goto out;
    if (n_items)
        *n_items = (int)n;
    /* the worktree goes with the goal; its branch stays */
    {
        struct goal *g = NULL;
        if (store_goal_get(st, goal_id, &g) == 0 && g->repo && g->worktree &&
            vcs_worktree_remove(g->repo, g->worktree) != 0)
            log_warn("goal %.8s: worktree %s not removed: %s", goal_id, g->worktree, err_last());
        store_goal_free(g);
    }
    goto out;
fail:
    store_tx_rollback(st);
out:
    free(ids);
    return rc;
}
