#include "lifecycle/cancel.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle/job.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "util/config.h"
#include "util/timeutil.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vcs/worktree.h"

/* The goal's running runs: each recorded as aborted, reason "cancelled"
 * (in the caller's transaction); *out the list, for stop_jobs(). */
static int abort_runs(store *st, const char *goal_id, struct store_run_live **out, size_t *n)
{
    cJSON *p;
    int rc = store_run_running_of_goal(st, goal_id, out, n);

    if (rc)
        return rc;
    p = cJSON_CreateObject();
    xcheck(p);
    cJSON_AddStringToObject(p, "reason", "cancelled");
    for (size_t i = 0; i < *n && rc == 0; i++) {
        rc = store_run_set_cancelled(st, (*out)[i].id);
        if (rc == 0)
            rc = transition_apply(st, ENTITY_RUN, (*out)[i].id, "aborted", "running", p);
    }
    cJSON_Delete(p);
    return rc;
}

static void signal_job(const struct store_run_live *r, int sig)
{
    /* the daemon starts each job as the leader of its own process group */
    if (getpgid((pid_t)r->pid) == (pid_t)r->pid)
        kill(-(pid_t)r->pid, sig);
    else
        kill((pid_t)r->pid, sig);
}

/* Stop the job processes of runs (SIGTERM to each job's process group,
 * SIGKILL after daemon.kill_grace_s), each checked to be `goald job RUN`
 * before it is signalled; returns when none of them is alive any more.
 * The daemon reaps them. */
static int stop_jobs(const struct store_run_live *runs, size_t n)
{
    int64_t grace = config_int(CFG_DAEMON_KILL_GRACE_S) * 1000, start = time_mono_ms();
    struct timespec tick = {0, 20 * 1000 * 1000};
    int stopped = 0, killed = 0;

    for (size_t i = 0; i < n; i++)
        if (job_process_is(runs[i].pid, runs[i].id)) {
            signal_job(&runs[i], SIGTERM);
            stopped++;
        }
    for (;;) {
        int alive = 0;
        for (size_t i = 0; i < n; i++)
            alive += job_process_is(runs[i].pid, runs[i].id);
        if (!alive)
            break;
        if (!killed && time_mono_ms() - start >= grace) {
            for (size_t i = 0; i < n; i++)
                if (job_process_is(runs[i].pid, runs[i].id))
                    signal_job(&runs[i], SIGKILL);
            killed = 1;
        } else if (killed && time_mono_ms() - start >= grace + 10000) {
            log_warn("cancel: a job process outlived SIGKILL by 10 s");
            break;
        }
        nanosleep(&tick, NULL);
    }
    return stopped;
}

/* The goal and its unfinished items to cancelled and its runs aborted, in
 * one transaction; *ids (n) and *runs (nruns) are the caller's to free(),
 * even on failure. */
static int cancel_rows(store *st, const char *goal_id, char (**ids)[ID_SIZE], size_t *n,
                       struct store_run_live **runs, size_t *nruns)
{
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = transition_apply(st, ENTITY_GOAL, goal_id, "cancelled", NULL, NULL)) != 0)
        goto out;
    if ((rc = store_item_ids_unfinished(st, goal_id, ids, n)) != 0)
        goto out;
    for (size_t i = 0; i < *n; i++)
        if ((rc = transition_apply(st, ENTITY_ITEM, (*ids)[i], "cancelled", NULL, NULL)) != 0)
            goto out;
    rc = abort_runs(st, goal_id, runs, nruns);
out:
    return store_tx_end(st, rc);
}

int lifecycle_goal_cancel(store *st, const char *goal_id, int *n_items, int *n_jobs)
{
    char (*ids)[ID_SIZE] = NULL;
    struct store_run_live *runs = NULL;
    size_t n = 0, nruns = 0;
    int rc;

    if ((rc = cancel_rows(st, goal_id, &ids, &n, &runs, &nruns)) != 0)
        goto out;
    if (n_items)
        *n_items = (int)n;
    /* the goal is cancelled and its runs aborted: a job checks that before
     * each model call; those running now are stopped before we return */
    {
        int stopped = stop_jobs(runs, nruns);
        if (n_jobs)
            *n_jobs = stopped;
    }
    /* the worktree goes with the goal; its branch stays.  In clone mode
     * this node's (a node without a clone of the repository has none; the
     * other nodes remove theirs when they see the goal ended) */
    {
        struct goal *g = NULL;
        char *repo = NULL, *wt = NULL;
        int clone = 0;
        if (store_goal_get(st, goal_id, &g) == 0 &&
            workspace_locate(st, g, &repo, &wt, &clone) == 0 && repo && wt &&
            (!clone || fs_exists(repo)) && vcs_worktree_remove(repo, wt) != 0)
            log_warn("goal %.8s: worktree %s not removed: %s", goal_id, wt, err_last());
        if (g && repo && !clone)
            workspace_remove_items(g, repo);
        workspace_remove_builds(st, goal_id);
        free(repo);
        free(wt);
        store_goal_free(g);
    }
out:
    free(ids);
    free(runs);
    return rc;
}
