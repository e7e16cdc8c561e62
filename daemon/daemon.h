/*
 * daemon.h - the supervisor: one per database.
 *
 * A tick loop (daemon.tick_ms, woken at once by `submit` and `resolve`
 * through a datagram socket beside the database, and with PostgreSQL by
 * a NOTIFY from any node) that claims units of work and runs each as a child `goald job RUN_ID` in
 * its own process group, within the lane caps (daemon.plan_cap, daemon.work_cap; one item per goal
 * at a time).  It reaps its children, kills a job that runs past its timeout (SIGTERM, then SIGKILL
 * to the whole group) and records it as `timeout`, and runs the cron lane in-process (triggers,
 * deadlines, the periodic sweep).  It never calls a model itself.
 *
 * Nodes: each daemon is a node (store_node_id) with its own heartbeat
 * row; a run records the node that claimed it.  Lane caps are per node,
 * daemon.global_*_cap over every node (in the claim's transaction).
 *
 * Restart: runs of this node left `running` whose process is gone, or
 * whose lease expired, become `aborted` and go through recovery.  The runs
 * of another node are recovered only when that node stopped beating
 * (node.dead_after_s) or their lease expired: its processes are never
 * signalled from here.  Signals: SIGTERM and
 * SIGINT stop claiming, let running jobs finish within
 * daemon.shutdown_grace_s, then kill and abort them; SIGHUP reloads the
 * configuration; SIGUSR1 reopens the log file.
 */
#ifndef GOALD_DAEMON_DAEMON_H
#define GOALD_DAEMON_DAEMON_H

#include <stddef.h>

#include "store/store.h"

struct daemon_opts {
    const char *db_path;     /* required */
    const char *config_path; /* passed to jobs; may be NULL */
    const char *log_file;    /* JSON lines; may be NULL */
    int once;                /* exit when nothing is runnable */
    int log_level;           /* enum log_level when log.level is unset, at start
                                and at each SIGHUP (the service: LOG_INFO) */
    int lock_fd;             /* >= 0 with has_lock: the instance lock the caller took
                                (daemon_lock_take) and releases; else daemon_run
                                takes and releases its own */
    int has_lock;
};

/* Take the instance lock of db_path's daemon into *fd: one daemon per
 * database.  With SQLite, an exclusive flock() on the database file
 * itself, so that every path to it (a symlink, a hard link, a bind mount)
 * finds the same lock; with PostgreSQL, a file in the node's state
 * folder.  Must be taken before this process opens its first SQLite
 * connection (a close of the descriptor on the refused path would drop
 * SQLite's locks).  ERR_BUSY names the holder's pid. */
int daemon_lock_take(const char *db_path, int *fd);

/* Release what daemon_lock_take took (fd < 0: nothing).  The descriptor
 * is closed only when this process holds no SQLite connection; else it
 * stays open until the process exits, and the lock with it. */
void daemon_lock_release(int fd);

/* Run the daemon until it is told to stop (or, with once, until nothing is
 * runnable).  0 on a clean exit; ERR_BUSY when another daemon holds the
 * database (the message names its pid); other errors when the daemon
 * itself failed. */
int daemon_run(const struct daemon_opts *o);

/* Wake the daemon of st's database, if one is listening (submit,
 * resolve, cancel): this node's through its socket, and with a PostgreSQL
 * store every node's (store_wake_nodes).  Never fails: no daemon is
 * fine. */
void daemon_wake(store *st);

/* The wake socket's path beside the database (DB.sock). */
void daemon_sock_path(const char *db_path, char *sock, size_t sock_n);

#endif
