#include "lifecycle/select.h"

#include <stdio.h>
#include <string.h>

#include "util/config.h"
#include "util/err.h"

double select_score(const struct select_candidate *c, int64_t now_ms)
{
    double full = (double)config_int(CFG_SELECT_FRESHNESS_FULL_S) * 1000.0;
    double age = (double)(now_ms - c->waiting_since);
    double fresh = age <= 0 ? 0 : age >= full ? 100 : 100.0 * age / full;
    double dep = c->dependents * 20.0 > 100 ? 100 : c->dependents * 20.0;

    return c->priority * 0.6 + fresh * 0.2 + dep * 0.2;
}

/* 1 when a is better than b. */
static int better(const struct select_candidate *a, const struct select_candidate *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    if (a->created_at != b->created_at)
        return a->created_at < b->created_at;
    return strcmp(a->id, b->id) < 0;
}

int select_next(store *st, int64_t now_ms, const char (*busy_goals)[ID_SIZE], int n_busy,
                struct select_candidate *out)
{
    static const char sql[] =
        "SELECT w.id, w.goal_id, w.priority, w.created_at, w.updated_at,"
        " (SELECT count(*) FROM work_item_deps d WHERE d.depends_on_id = w.id)"
        " FROM work_items w JOIN goals g ON g.id = w.goal_id"
        " WHERE w.status = 'ready' AND g.status = 'active' AND w.next_attempt_at <= ?"
        " AND NOT EXISTS (SELECT 1 FROM work_items o WHERE o.goal_id = w.goal_id"
        " AND o.status IN ('in_progress', 'verify'))";
    sqlite3_stmt *s;
    int found = 0;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, now_ms);
    for (;;) {
        struct select_candidate c;
        int step = sqlite3_step(s), busy = 0;
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = store_err(st, "select");
            break;
        }
        memset(&c, 0, sizeof(c));
        snprintf(c.id, sizeof(c.id), "%s", sqlite3_column_text(s, 0));
        snprintf(c.goal_id, sizeof(c.goal_id), "%s", sqlite3_column_text(s, 1));
        for (int i = 0; i < n_busy; i++)
            if (!strcmp(busy_goals[i], c.goal_id))
                busy = 1;
        if (busy)
            continue;
        c.priority = sqlite3_column_int(s, 2);
        c.created_at = sqlite3_column_int64(s, 3);
        c.waiting_since = sqlite3_column_int64(s, 4);
        c.dependents = sqlite3_column_int(s, 5);
        c.score = select_score(&c, now_ms);
        if (!found || better(&c, out)) {
            *out = c;
            found = 1;
        }
    }
    store_done(s);
    if (rc)
        return rc;
    return found ? 0 : ERR_NOTFOUND;
}
