/*
 * orphans.c - runs whose job is gone: a live job of an earlier daemon is
 * adopted (watched, not reaped); a dead one's run is aborted and handed to
 * recovery; with several nodes, the runs of a node that stopped beating,
 * and the items a job left held between its run's end and that run's
 * recovery.
 */
#include "daemon/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle/abort.h"
#include "lifecycle/claim.h"
#include "lifecycle/control.h"
#include "lifecycle/job.h"
#include "lifecycle/monitor.h"
#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/heartbeat.h"
#include "store/item.h"
#include "store/run.h"
#include "store/store.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* A live job of an earlier daemon: watched as a kid (not reaped). */
static void adopt(struct daemon *d, const struct store_run *o, int64_t now)
{
    struct kid *k = &d->kids[d->nkids++];

    memset(k, 0, sizeof(*k));
    k->pid = (pid_t)o->pid;
    k->foreign = 1;
    snprintf(k->run_id, sizeof(k->run_id), "%s", o->id); /* truncation: ok, an id, ID_SIZE both */
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(k->goal_id, sizeof(k->goal_id), "%s", o->goal_id);
    snprintf(k->lane, sizeof(k->lane), "%s", o->lane); /* truncation: ok, a lane, 8 bytes both */
    snprintf(k->kind, sizeof(k->kind), "%s", o->kind); /* truncation: ok, a kind, 16 bytes both */
    k->started = time_mono_ms() - (o->started_at > 0 ? now - o->started_at : 0);
    k->timeout = (int64_t)(o->timeout_s < 0 ? 600 : o->timeout_s) * 1000;
    log_info("run %.8s: adopted its live job (pid %ld)", o->id, o->pid);
}

static int is_ours(const struct daemon *d, const char *run_id)
{
    for (int k = 0; k < d->nkids; k++)
        if (!strcmp(d->kids[k].run_id, run_id))
            return 1;
    return 0;
}

/* One run left `running` that no kid of ours runs: 1 when it was
 * aborted. */
static int recover_orphan(struct daemon *d, const struct store_run *o, int startup, int64_t now)
{
    if (daemon_job_alive((pid_t)o->pid, o->id)) {
        if (o->lease_until && o->lease_until < now) {
            kill(-(pid_t)o->pid, SIGKILL);
            return lifecycle_abort_run(d->st, o->id, "aborted", "its lease expired") == 0;
        }
        if (startup && d->nkids < MAX_KIDS)
            adopt(d, o, now);
        return 0;
    }
    /* no process: a claim whose job has not started yet (`goald claim`,
     * then `goald job`) is given a minute of its lease; not all of it: a
     * claim whose commit reached the server while its answer was lost (a
     * restart) was never spawned, and would hold its goal and a lane
     * slot until the lease ended */
    if (!startup && o->pid == 0 && o->lease_until >= now && now - o->started_at < 60000)
        return 0;
    return lifecycle_abort_run(d->st, o->id, "aborted",
                               startup ? "its process is gone (found at daemon start)"
                                       : "its process is gone") == 0;
}

/* Is the run this node's?  With SQLite every run is (one daemon per
 * file, whatever its node id was when it claimed); a run claimed before
 * nodes existed has none. */
static int is_local(const struct daemon *d, const struct store_run *o)
{
    return !d->shared || !o->node_id[0] || !strcmp(o->node_id, d->node_id);
}

/* The other nodes' heartbeats, for remote_orphan(). */
struct node_ticks {
    char (*id)[STORE_NODE_ID_MAX];
    int64_t *tick;
    int n, cap;
};

static int note_tick(const struct store_heartbeat *hb, void *ctx)
{
    struct node_ticks *t = ctx;

    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->id = xrealloc(t->id, (size_t)t->cap * sizeof(*t->id));
        t->tick = xrealloc(t->tick, (size_t)t->cap * sizeof(*t->tick));
    }
    /* truncation: ok, node ids are written under STORE_NODE_ID_MAX */
    snprintf(t->id[t->n], sizeof(t->id[t->n]), "%s", hb->node_id);
    t->tick[t->n++] = hb->last_tick;
    return 0;
}

/* Has node stopped beating (no heartbeat, or one older than
 * node.dead_after_s)?  1 with why (n bytes) saying so. */
static int node_stopped(const struct node_ticks *t, const char *node, int64_t now, char *why,
                        size_t n)
{
    int64_t last = -1;

    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->id[i], node))
            last = t->tick[i];
    if (last >= 0 && now - last <= config_int(CFG_NODE_DEAD_AFTER_S) * 1000)
        return 0;
    if (last < 0)
        /* truncation: ok, a reason shown */
        snprintf(why, n, "its node %s has no heartbeat (stopped)", node);
    else
        /* truncation: ok, a reason shown */
        snprintf(why, n, "its node %s stopped beating %lld s ago", node,
                 (long long)((now - last) / 1000));
    return 1;
}

/* A running run of another node: aborted when that node stopped beating
 * or the run's lease expired.  Its process is on that node: never
 * signalled from here (the job sees its run aborted at its next check and
 * stops).  1 when it was aborted. */
static int remote_orphan(struct daemon *d, const struct store_run *o, const struct node_ticks *t,
                         int64_t now)
{
    char why[STORE_NODE_ID_MAX + 96];

    if (!node_stopped(t, o->node_id, now, why, sizeof(why))) {
        if (!o->lease_until || o->lease_until >= now)
            return 0;
        /* truncation: ok, a reason shown */
        snprintf(why, sizeof(why), "its lease expired (node %s)", o->node_id);
    }
    if (lifecycle_abort_run(d->st, o->id, "aborted", why) != 0) {
        err_clear(); /* its node finished it meanwhile, or another node took it */
        return 0;
    }
    log_event(LOG_WARN, "node.run_aborted", "run", o->id, "goal", o->goal_id, "from_node",
              o->node_id, "why", why, NULL);
    return 1;
}

/* Is h, an item held with nothing running it, to be recovered?  At start
 * (t NULL): this node's, once the job's process is gone.  With t (the
 * other nodes' heartbeats): another node's that stopped beating, once h's
 * run ended node.dead_after_s ago (a live job moves its item moments
 * after its run's end; the recovery of one that comes later still is
 * refused once the item is claimed again: recover_run).  why (n bytes):
 * the reason given. */
static int held_gone(const struct daemon *d, const struct store_item_held *h,
                     const struct node_ticks *t, int64_t now, char *why, size_t n)
{
    struct store_run o = {0};

    /* truncation: ok, STORE_NODE_ID_MAX both */
    snprintf(o.node_id, sizeof(o.node_id), "%s", h->node_id);
    if (!t) {
        /* truncation: ok, a reason shown */
        snprintf(why, n, "its job is gone (found at daemon start)");
        return is_local(d, &o) && !(h->pid > 0 && daemon_job_alive((pid_t)h->pid, h->run_id));
    }
    return d->shared && !is_local(d, &o) && h->ended_at > 0 &&
           now - h->ended_at > config_int(CFG_NODE_DEAD_AFTER_S) * 1000 &&
           node_stopped(t, h->node_id, now, why, n);
}

/* Items left held with nothing running them (a job killed between its
 * run's end and that run's recovery while no daemon watched it; or its
 * node died for good): recovered when held_gone() says so.  Returns how
 * many. */
int daemon_recover_held(struct daemon *d, const struct node_ticks *t, int64_t now)
{
    struct store_item_held *h = NULL;
    size_t n = 0;
    int k = 0;

    if (store_item_list_held_idle(d->st, &h, &n) != 0) {
        log_warn("held items: %s", err_last());
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char why[STORE_NODE_ID_MAX + 96];
        if (!h[i].run_id[0] || !held_gone(d, &h[i], t, now, why, sizeof(why)))
            continue;
        if (lifecycle_recover_stranded(d->st, h[i].run_id, why) != 0) {
            err_clear(); /* recovered meanwhile */
            continue;
        }
        if (t)
            log_event(LOG_WARN, "node.item_recovered", "run", h[i].run_id, "item", h[i].item_id,
                      "from_node", h[i].node_id, "why", why, NULL);
        else
            log_info("run %.8s: its item was left held by a dead job: recovered", h[i].run_id);
        k++;
    }
    free(h);
    return k;
}

/* Runs left `running` by an earlier daemon of this node: adopt the live
 * ones, abort the dead ones (and those whose lease expired).  With
 * remote, also the runs of other nodes (remote_orphan).  Returns how many
 * it aborted. */
int daemon_recover_orphans(struct daemon *d, int startup, int remote)
{
    struct store_run *o = NULL;
    struct node_ticks t = {0};
    size_t n = 0;
    int64_t now = time_now_ms();
    int aborted = 0, read = 1;

    if (store_run_list_running(d->st, &o, &n) != 0 ||
        (remote && d->shared && store_heartbeat_each(d->st, note_tick, &t) != 0)) {
        err_clear();
        n = 0;
        read = 0; /* no heartbeat is not a dead node */
    }
    for (size_t i = 0; i < n; i++) {
        if (is_ours(d, o[i].id))
            continue;
        if (is_local(d, &o[i]))
            aborted += recover_orphan(d, &o[i], startup, now);
        else if (remote)
            aborted += remote_orphan(d, &o[i], &t, now);
    }
    /* the items a dead node's job left held after its run's end */
    if (read && remote && d->shared)
        aborted += daemon_recover_held(d, &t, now);
    free(t.id);
    free(t.tick);
    free(o);
    return aborted;
}
