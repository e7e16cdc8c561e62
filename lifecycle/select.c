#include "lifecycle/select.h"

#include <stdio.h>
#include <string.h>

#include "lifecycle/goal_view.h"
#include "store/goal.h"
#include "store/run.h"
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

#define SEEN_MAX 32 /* goals whose parallel_allowed() answer is kept */

struct pick {
    store *st;
    int64_t now_ms;
    const char (*busy_goals)[ID_SIZE];
    int n_busy;
    struct select_candidate *best;
    int found;
    int in_group;      /* a candidate of the group walked was scored */
    double group_top;  /* the score of its first */
    /* parallel_allowed()'s answers in this pick, per goal: a goal's
     * repository does not change, and a goal with a running item may
     * have many ready ones walked */
    struct {
        char goal_id[ID_SIZE];
        int ok;
    } seen[SEEN_MAX];
    int n_seen;
};

/* May goal_id run a second item while one runs?  Only with a local
 * repository: each parallel item has a worktree of its own there
 * (workspace.c), and lands on the goal branch under the goal's landing
 * lock.  In clone mode the goal's head is the database's and its ref on
 * the remote is one, so its items take turns. */
static int parallel_allowed(struct pick *p, const char *goal_id)
{
    struct goal *g = NULL;
    int ok;

    for (int i = 0; i < p->n_seen; i++)
        if (!strcmp(p->seen[i].goal_id, goal_id))
            return p->seen[i].ok;
    if (store_goal_get(p->st, goal_id, &g) != 0) {
        err_clear();
        return 0; /* not remembered: the next look may find it */
    }
    ok = g->repo && !goal_view_clone(g);
    store_goal_free(g);
    if (p->n_seen < SEEN_MAX) {
        snprintf(p->seen[p->n_seen].goal_id, ID_SIZE, "%s", goal_id); /* truncation: ok, an id fits */
        p->seen[p->n_seen++].ok = ok;
    }
    return ok;
}

/* Score one candidate of the claim rule into c; 0 when it is of a busy
 * goal, or of a goal that must run its items one at a time and runs one
 * (parallel_allowed). */
static int score(struct pick *p, const struct store_run_exec_candidate *e,
                 struct select_candidate *c)
{
    for (int i = 0; i < p->n_busy; i++)
        if (!strcmp(p->busy_goals[i], e->goal_id))
            return 0;
    if (e->inflight > 0 && !parallel_allowed(p, e->goal_id))
        return 0;
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", e->id); /* truncation: ok, an id, ID_SIZE both */
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(c->goal_id, sizeof(c->goal_id), "%s", e->goal_id);
    c->priority = e->priority;
    c->created_at = e->created_at;
    c->waiting_since = e->updated_at;
    c->dependents = e->dependents;
    c->score = select_score(c, p->now_ms);
    return 1;
}

/* One candidate of a group, the longest waiting first: within a group
 * (one priority, one number of dependents) a score only falls as the
 * wait shortens, so the walk ends at the first that scores below the
 * group's first (those that tie with it are all looked at: their order is
 * the tie-break's, not the walk's). */
static int consider(const struct store_run_exec_candidate *e, void *ctx)
{
    struct pick *p = ctx;
    struct select_candidate c;

    if (!score(p, e, &c))
        return 0;
    if (!p->in_group) {
        p->in_group = 1;
        p->group_top = c.score;
    } else if (c.score < p->group_top) {
        return 1; /* the rest of the group scores lower still */
    }
    if (!p->found || better(&c, p->best)) {
        *p->best = c;
        p->found = 1;
    }
    return 0;
}

int select_next(store *st, int64_t now_ms, const char (*busy_goals)[ID_SIZE], int n_busy,
                struct select_candidate *out)
{
    struct pick p = {.st = st, .now_ms = now_ms, .busy_goals = busy_goals, .n_busy = n_busy,
                     .best = out};
    struct store_run_ready_group g, next;
    int cap = (int)config_int(CFG_GOAL_MAX_PARALLEL_ITEMS);
    int found, rc = store_run_ready_group_next(st, NULL, &g, &found);

    while (rc == 0 && found) {
        p.in_group = 0;
        rc = store_run_execute_group_each(st, now_ms, cap, &g, consider, &p);
        if (rc != 0 && rc != 1)
            return rc;
        rc = store_run_ready_group_next(st, &g, &next, &found);
        g = next;
    }
    if (rc)
        return rc;
    return p.found ? 0 : ERR_NOTFOUND;
}
