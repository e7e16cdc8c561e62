/*
 * internal.h - what the files of daemon/ share (not for other folders).
 *
 * supervisor.c is the loop (start, ticks, signals, stop); kids.c the job
 * processes it spawns, reaps and times out, and the claims that start
 * them; orphans.c the runs whose job is gone (an earlier daemon's, a dead
 * node's) and the items a dead job left held; lock.c the instance lock and
 * the wake socket's path.  struct daemon is the loop's state, owned by
 * daemon_run().
 */
#ifndef GOALD_DAEMON_INTERNAL_H
#define GOALD_DAEMON_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"
#include "lifecycle/monitor.h"
#include "store/store.h"
#include "util/id.h"

#define MAX_KIDS 512

struct kid {
    pid_t pid;
    int foreign; /* a job of an earlier daemon, still alive: watched, not reaped */
    char run_id[ID_SIZE];
    char goal_id[ID_SIZE];
    char lane[8];
    char kind[16];
    int64_t started; /* monotonic ms */
    int64_t timeout; /* ms */
    int64_t term_at; /* when SIGTERM was sent for the timeout, 0 if not */
    int timed_out;
    /* the process ended (pid 0) but its end could not be recorded (the
     * database out of reach): kept, holding its lane slot and its goal,
     * and recorded at a later tick */
    int gone, status;
};

struct daemon {
    const struct daemon_opts *o;
    store *st;
    char self[PATH_MAX];
    char sock_path[PATH_MAX];
    int lock_fd, wake_fd;
    struct kid kids[MAX_KIDS];
    int nkids;
    int64_t started_wall;
    int64_t last_sweep;      /* monotonic */
    int64_t stop_at;         /* monotonic; 0 while running */
    int disk_full;           /* a write met a full disk or database: stopping, exit non-zero */
    int shared;              /* a PostgreSQL store: other nodes may share the queue */
    int64_t last_node_check; /* monotonic: the last look at other nodes' runs */
    int64_t db_down_at;      /* monotonic: since when the database is out of reach, 0 if not */
    int64_t end_event;       /* the last event looked at for goals that ended; -1: none yet */
    char node_id[STORE_NODE_ID_MAX];
    char host[256];
};

struct node_ticks;

/* kids.c */
/* pid is the job process of run_id (its command line says so). */
int daemon_job_alive(pid_t pid, const char *run_id);
/* The jobs of d running in lane. */
int daemon_count_lane(const struct daemon *d, const char *lane);
/* The goals d's jobs work on, into ids (MAX_KIDS entries), as a
 * monitor_busy the sweep leaves alone. */
struct monitor_busy daemon_busy_goals(const struct daemon *d, char (*ids)[ID_SIZE]);
/* The worktree of the ended goal goal_id removed, unless a job of d runs
 * it (failures logged). */
void daemon_drop_worktree(struct daemon *d, const char *goal_id);
/* Every job that ended since the last look reaped, its end recorded. */
void daemon_reap(struct daemon *d);
/* Jobs past their timeout: SIGTERM, then SIGKILL after the grace. */
void daemon_enforce_timeouts(struct daemon *d);
/* Claim and spawn what the lanes have room for.  0, or the store's error. */
int daemon_claim_all(struct daemon *d);

/* orphans.c */
/* Items a dead job left held with nothing running them, recovered (t:
 * the nodes' ticks, NULL at start).  0, or the store's error. */
int daemon_recover_held(struct daemon *d, const struct node_ticks *t, int64_t now);
/* Running runs whose job is gone: adopted when alive, else aborted and
 * recovered (startup: the daemon's first look; remote: other nodes' runs
 * too).  0, or the store's error. */
int daemon_recover_orphans(struct daemon *d, int startup, int remote);

#endif
