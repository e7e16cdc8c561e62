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
    sqlite3_stmt *s;
    char (*ids)[ID_SIZE] = NULL;
    size_t n = 0, alloc = 0;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = transition_apply(st, ENTITY_GOAL, goal_id, "cancelled", NULL, NULL)) != 0)
        goto fail;
    if ((rc = store_prepare(st, &s, sql)) != 0)
        goto fail;
    store_bind_text(s, 1, goal_id);
    for (;;) {
        int step = sqlite3_step(s);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "work items");
            break;
        }
        if (n == alloc) {
            alloc = alloc ? alloc * 2 : 16;
            ids = realloc(ids, alloc * sizeof(*ids));
            if (!ids)
                abort();
        }
        snprintf(ids[n++], ID_SIZE, "%s", (const char *)sqlite3_column_text(s, 0));
    }
    store_done(s);
    if (rc)
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
