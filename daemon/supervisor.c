#include "daemon/daemon.h"
#include "daemon/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "lifecycle/forge_goals.h"
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
#include "util/secret.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop, got_hup, got_usr1;

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;

    if (sig == SIGTERM || sig == SIGINT)
        got_stop = 1;
    else if (sig == SIGHUP)
        got_hup = 1;
    else if (sig == SIGUSR1)
        got_usr1 = 1;
    if (sig_pipe[1] >= 0 && write(sig_pipe[1], &c, 1) < 0) {
        /* the pipe is full: the loop is awake anyway */
    }
    errno = saved;
}

static int open_wake_socket(struct daemon *d)
{
    struct sockaddr_un a;
    size_t n = strlen(d->sock_path);

    d->wake_fd = -1;
    if (n == 0 || n >= sizeof(a.sun_path)) {
        log_warn("%s: path too long for a socket; the daemon wakes on its tick only", d->sock_path);
        return 0;
    }
    unlink(d->sock_path); /* ours: we hold the lock */
    d->wake_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (d->wake_fd < 0)
        return err_set(ERR_IO, "socket: %s", strerror(errno));
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, d->sock_path, n + 1);
    if (bind(d->wake_fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        log_warn("%s: cannot listen (%s); the daemon wakes on its tick only", d->sock_path,
                 strerror(errno));
        close(d->wake_fd);
        d->wake_fd = -1;
    }
    chmod(d->sock_path, 0600);
    return 0;
}

static void heartbeat(struct daemon *d)
{
    cJSON *lanes = cJSON_CreateObject(), *jobs;
    char *text;
    int64_t now = time_mono_ms();

    for (int l = 0; l < 2; l++) {
        const char *name = l ? "work" : "plan";
        cJSON *o = cJSON_AddObjectToObject(lanes, name);
        cJSON_AddNumberToObject(o, "running", daemon_count_lane(d, name));
        cJSON_AddNumberToObject(o, "cap",
                                (double)config_int(l ? CFG_DAEMON_WORK_CAP : CFG_DAEMON_PLAN_CAP));
    }
    /* which goald this node runs (the page's nodes table, `status --json`) */
    cJSON_AddStringToObject(lanes, "version", GOALD_VERSION);
    jobs = cJSON_AddArrayToObject(lanes, "jobs");
    for (int i = 0; i < d->nkids; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "run_id", d->kids[i].run_id);
        cJSON_AddStringToObject(j, "goal_id", d->kids[i].goal_id);
        cJSON_AddStringToObject(j, "kind", d->kids[i].kind);
        cJSON_AddStringToObject(j, "lane", d->kids[i].lane);
        cJSON_AddNumberToObject(j, "pid", d->kids[i].pid);
        cJSON_AddNumberToObject(j, "age_ms", (double)(now - d->kids[i].started));
        cJSON_AddItemToArray(jobs, j);
    }
    text = cJSON_PrintUnformatted(lanes);
    xcheck(text);
    {
        struct store_heartbeat hb = {.node_id = d->node_id,
                                     .host = d->host,
                                     .pid = (long)getpid(),
                                     .started_at = d->started_wall,
                                     .last_tick = time_now_ms(),
                                     .lanes = text};
        if (store_heartbeat_write(d->st, &hb) != 0)
            log_warn("%s", err_last());
    }
    cJSON_free(text);
    cJSON_Delete(lanes);
}

/* This node's worktrees of goals that ended, wherever they ended: those
 * the events say ended since the last look (every tick: one query when
 * none did), and at each sweep all of them (monitor_worktrees_sweep:
 * what an earlier daemon, a killed removal or a missed event left). */
static void ended_goals(struct daemon *d)
{
    char(*ids)[ID_SIZE] = NULL;
    size_t n = 0;

    if (store_event_goals_ended_after(d->st, &d->end_event, &ids, &n) != 0) {
        log_warn("goals that ended: %s", err_last());
        err_clear();
        return;
    }
    for (size_t i = 0; i < n; i++)
        daemon_drop_worktree(d, ids[i]);
    free(ids);
}

static void sweep_worktrees(struct daemon *d)
{
    char ids[MAX_KIDS][ID_SIZE];
    struct monitor_busy b = daemon_busy_goals(d, ids);
    int removed = 0;

    if (monitor_worktrees_sweep(d->st, &b, &removed) != 0) {
        log_warn("worktrees: %s", err_last());
        err_clear();
    } else if (removed) {
        log_info("sweep: %d worktree%s of ended goals removed", removed, removed == 1 ? "" : "s");
    }
}

/* The cron lane: in-process, every tick (cheap queries), the sweep every
 * monitor.sweep_interval_s. */
static void cron_lane(struct daemon *d)
{
    int64_t now = time_now_ms();
    int n = 0;

    if (monitor_fire_triggers(d->st, now, &n) != 0)
        log_warn("triggers: %s", err_last());
    else if (n)
        log_info("cron: %d recurring goal instance%s made", n, n == 1 ? "" : "s");
    forge_poll_run(d->st, now); /* labelled issues become goals (docs/forge.md) */
    ended_goals(d);
    if (monitor_check_deadlines(d->st, now, &n) != 0)
        log_warn("deadlines: %s", err_last());
    else if (n)
        log_info("cron: %d goal%s past %s deadline escalated", n, n == 1 ? "" : "s",
                 n == 1 ? "its" : "their");
    /* other nodes' runs: looked at four times per node.dead_after_s, so a
     * dead node's work moves on within about 1.25 times that */
    if (d->shared &&
        time_mono_ms() - d->last_node_check >= (config_int(CFG_NODE_DEAD_AFTER_S) * 1000) / 4) {
        d->last_node_check = time_mono_ms();
        n = daemon_recover_orphans(d, 0, 1);
        if (n)
            log_info("nodes: %d run%s of a dead node aborted and recovered", n, n == 1 ? "" : "s");
    }
    if (!d->last_sweep ||
        time_mono_ms() - d->last_sweep >= config_int(CFG_MONITOR_SWEEP_INTERVAL_S) * 1000) {
        struct monitor_sweep sw;
        int stale = daemon_recover_orphans(d, 0, 1); /* stale leases, dead nodes */
        if (monitor_sweep(d->st, now, stale, &sw) != 0)
            log_warn("sweep: %s", err_last());
        else
            log_debug("sweep: %d stale run%s aborted, %d budget escalation%s, %d events and %d "
                      "context packs deleted",
                      sw.runs_aborted, sw.runs_aborted == 1 ? "" : "s", sw.budget_escalations,
                      sw.budget_escalations == 1 ? "" : "s", sw.events_deleted, sw.packs_deleted);
        sweep_worktrees(d);
        d->last_sweep = time_mono_ms();
    }
}

/* Is anything going to become runnable without a human?  (--once waits
 * for pending retries rather than exit before them.)  since: when this
 * tick's claims began: a retry that fell due after they looked is still
 * to run (reading the clock here, a backoff that ended between the
 * claims and this check was neither claimed nor pending, and --once
 * exited with the goal's item ready: pg.integration.publish_crash). */
static int pending_retries(struct daemon *d, int64_t since)
{
    int n = 0;

    if (store_run_pending_retries(d->st, since, &n) != 0)
        err_clear();
    return n;
}

static void wait_for_events(struct daemon *d, int64_t timeout_ms)
{
    struct pollfd p[3];
    int n = 0, db_fd = d->shared ? store_wake_fd(d->st) : -1;
    char buf[64];

    p[n].fd = sig_pipe[0];
    p[n++].events = POLLIN;
    if (d->wake_fd >= 0) {
        p[n].fd = d->wake_fd;
        p[n++].events = POLLIN;
    }
    /* a NOTIFY from any node (its descriptor may change when the
     * connection is made again: asked for at every wait) */
    if (db_fd >= 0) {
        p[n].fd = db_fd;
        p[n++].events = POLLIN;
    }
    if (poll(p, (nfds_t)n, (int)timeout_ms) > 0) {
        while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
            ;
        if (d->wake_fd >= 0)
            while (recv(d->wake_fd, buf, sizeof(buf), 0) > 0)
                ;
        /* a broken connection (-1) is made again at the next statement;
         * until then the descriptor is not polled */
        if (db_fd >= 0 && store_wake_drain(d->st) < 0)
            log_warn("the database connection broke: reconnecting at the next tick");
    }
}

static void shutdown_jobs(struct daemon *d)
{
    int64_t grace = config_int(CFG_DAEMON_SHUTDOWN_GRACE_S) * 1000;

    if (time_mono_ms() - d->stop_at < grace)
        return;
    /* the grace is over: stop what is left, then mark it aborted */
    for (int i = 0; i < d->nkids; i++) {
        if (d->kids[i].foreign || d->kids[i].gone)
            continue;
        if (!d->kids[i].term_at) {
            d->kids[i].term_at = time_mono_ms();
            kill(-d->kids[i].pid, SIGTERM);
        } else if (time_mono_ms() - d->kids[i].term_at >
                   config_int(CFG_DAEMON_KILL_GRACE_S) * 1000) {
            kill(-d->kids[i].pid, SIGKILL);
        }
    }
}

static void install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Everything before the first tick: the binary's path, the log, the lock,
 * the store, signals and the wake socket. */
static int daemon_open(struct daemon *d)
{
    const struct daemon_opts *o = d->o;
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", d->self, sizeof(d->self) - 1);
    int rc;

    if (n <= 0)
        return err_set(ERR_IO, "cannot find the goald binary: %s", strerror(errno));
    d->self[n] = '\0';
    /* log.level (or GOALD_LOG_LEVEL), else the caller's default */
    log_set_level(log_level_named(config_str(CFG_LOG_LEVEL), (enum log_level)o->log_level));
    if (o->log_file && (rc = log_open_file(o->log_file)) != 0)
        return rc;
    if ((rc = store_local_dir(dir, sizeof(dir), o->db_path)) != 0 ||
        (rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    if (!o->has_lock && (rc = daemon_lock_take(o->db_path, &d->lock_fd)) != 0)
        return rc;
    if ((rc = store_open(&d->st, o->db_path)) != 0)
        return rc;
    if ((rc = store_node_id(d->node_id, sizeof(d->node_id), o->db_path)) != 0)
        return rc;
    id_host(d->host, sizeof(d->host));
    /* with PostgreSQL, submit and resolve on any node wake this one */
    d->shared = store_is_url(o->db_path);
    if (d->shared && (rc = store_wake_listen(d->st)) != 0)
        return rc;
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return err_set(ERR_IO, "pipe: %s", strerror(errno));
    install_signals();
    return open_wake_socket(d);
}

/* Started: say so, then take over what an earlier daemon left. */
static void daemon_start(struct daemon *d)
{
    log_event(LOG_INFO, "daemon.started", "db", d->o->db_path, "mode",
              d->o->once ? "once" : "service", "node", d->node_id, NULL);
    if (store_event_add(d->st, NULL, NULL, NULL, "daemon.started", NULL, NULL) != 0)
        log_warn("event daemon.started not written: %s", err_last());
    /* `status` says running from the moment the lock is held, not after
     * recovery and the first claims (which take seconds on a loaded host) */
    heartbeat(d);
    daemon_recover_orphans(d, 1, 1);
    daemon_recover_held(d, NULL, 0);
    sandbox_cgroup_sweep(); /* left by jobs of an earlier daemon */
    /* a start is the only way new environment variables (a rotated key)
     * arrive, and the configuration's fingerprint cannot tell a key from
     * another of its length: the breaker a refused key opened closes, and
     * its escalations with it (a key still refused fails one job and opens
     * them again).  A config breaker stays: the fingerprint sees every
     * setting but the key, so a start with the same settings starts
     * nothing */
    if (breaker_config_sweep(d->st, time_now_ms()) < 0 ||
        breaker_close_sticky(d->st, "auth", BREAKER_WHY_RESTART, time_now_ms()) < 0)
        log_warn("breakers: %s", err_last());
}

/* The signals that arrived since the last tick: SIGHUP reloads the
 * configuration, SIGUSR1 reopens the log, SIGTERM/SIGINT start the stop. */
static void handle_signals(struct daemon *d)
{
    const struct daemon_opts *o = d->o;

    if (got_hup) {
        got_hup = 0;
        if (config_load(o->config_path) != 0) {
            log_error("config not reloaded: %s", err_last());
        } else {
            secret_take_all(); /* variables the new configuration names */
            log_set_level(log_level_named(config_str(CFG_LOG_LEVEL), (enum log_level)o->log_level));
            log_event(LOG_INFO, "config.reloaded", "config",
                      o->config_path ? o->config_path : "(default)", NULL);
        }
    }
    if (got_usr1) {
        got_usr1 = 0;
        log_reopen();
    }
    if (got_stop && !d->stop_at) {
        d->stop_at = time_mono_ms();
        log_event(LOG_INFO, "daemon.stopping", "jobs", d->nkids ? "running" : "none", NULL);
    }
}

/* Can the database be reached?  Said once when it goes and once when it
 * is back: meanwhile no claim, cron or heartbeat (each would only fail
 * and say so every tick); jobs go on, and the ends of those that end are
 * recorded once it is back (kid_ended). */
static int database_up(struct daemon *d)
{
    if (store_reachable(d->st) != 0) {
        if (!d->db_down_at) {
            d->db_down_at = time_mono_ms();
            log_warn("database out of reach: no claims until it is back, running jobs go on: %s",
                     err_last());
        }
        err_clear();
        return 0;
    }
    if (d->db_down_at) {
        log_info("database: reachable again after %lld s",
                 (long long)((time_mono_ms() - d->db_down_at) / 1000));
        d->db_down_at = 0;
    }
    return 1;
}

/* One tick; 1 when the loop ends (stopped with no job of ours left, or
 * --once with nothing left to do). */
static int tick(struct daemon *d)
{
    int started = 0;
    int64_t claims_at = time_now_ms();

    handle_signals(d);
    daemon_reap(d);
    daemon_enforce_timeouts(d);
    if (d->stop_at) {
        int own = 0;
        shutdown_jobs(d);
        for (int i = 0; i < d->nkids; i++)
            own += !d->kids[i].foreign && !d->kids[i].gone;
        if (own == 0)
            return 1;
    } else if (database_up(d)) {
        cron_lane(d);
        claims_at = time_now_ms();
        started = daemon_claim_all(d);
    }
    if (!d->db_down_at)
        heartbeat(d);
    /* nothing can be recorded any more: stop (jobs get their grace) and
     * say why, rather than loop or exit 0 */
    if (store_disk_full() && !d->disk_full) {
        d->disk_full = 1;
        log_error("database or disk is full: %s: stopping", d->o->db_path);
        if (!d->stop_at)
            d->stop_at = time_mono_ms();
    }
    if (d->o->once && !d->stop_at && d->nkids == 0 && started == 0 &&
        !pending_retries(d, claims_at))
        return 1;
    wait_for_events(d, d->stop_at ? 100
                                  : (d->nkids && d->o->once ? 50 : config_int(CFG_DAEMON_TICK_MS)));
    return 0;
}

/* After the loop: whatever a shutdown killed is recorded as aborted. */
static int daemon_finish(struct daemon *d)
{
    daemon_reap(d);
    for (int i = 0; i < d->nkids; i++)
        if (!d->kids[i].foreign)
            lifecycle_abort_run(d->st, d->kids[i].run_id, "aborted", "the daemon shut down");
    if (store_event_add(d->st, NULL, NULL, NULL, "daemon.stopped", NULL, NULL) != 0)
        log_warn("event daemon.stopped not written: %s", err_last());
    if (store_heartbeat_delete(d->st, d->node_id) != 0)
        log_warn("heartbeat: %s", err_last());
    log_event(LOG_INFO, "daemon.stopped", NULL);
    return d->disk_full || store_disk_full()
               ? err_set(ERR_IO, "database or disk is full: %s", d->o->db_path)
               : 0;
}

int daemon_run(const struct daemon_opts *o)
{
    struct daemon *d = xcalloc(1, sizeof(*d));
    int rc;

    d->o = o;
    d->lock_fd = d->wake_fd = -1;
    d->end_event = -1;
    d->started_wall = time_now_ms();
    daemon_sock_path(o->db_path, d->sock_path, sizeof(d->sock_path));
    if ((rc = daemon_open(d)) != 0)
        goto out;
    daemon_start(d);
    while (!tick(d))
        ;
    rc = daemon_finish(d);
out:
    if (d->wake_fd >= 0) {
        close(d->wake_fd);
        unlink(d->sock_path);
    }
    if (sig_pipe[0] >= 0) {
        close(sig_pipe[0]);
        close(sig_pipe[1]);
        sig_pipe[0] = sig_pipe[1] = -1;
    }
    store_close(d->st);
    daemon_lock_release(d->lock_fd); /* its own (the caller's: lock_fd stays -1) */
    log_close_file();
    free(d);
    return rc;
}
