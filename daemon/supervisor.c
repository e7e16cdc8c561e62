#include "daemon/daemon.h"

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

/* A file of this node's: with SQLite, beside the database (its path and
 * suffix; "" is the database itself, which the daemon locks); with a
 * PostgreSQL store, name in the node's state folder (the nodes share the
 * queue, not these files).  0, or ERR_INVALID (too long). */
static int node_file(char *out, size_t n, const char *db_path, const char *suffix, const char *name)
{
    char dir[PATH_MAX];
    int rc, w;

    if (!store_is_url(db_path))
        w = snprintf(out, n, "%s%s", db_path, suffix);
    else if ((rc = store_local_dir(dir, sizeof(dir), db_path)) != 0)
        return rc;
    else
        w = snprintf(out, n, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "the daemon's %s: path too long", name);
    return 0;
}

void daemon_sock_path(const char *db_path, char *sock, size_t sock_n)
{
    if (node_file(sock, sock_n, db_path, ".sock", "daemon.sock") != 0)
        sock[0] = '\0'; /* no socket: binding it fails and says so */
}

void daemon_wake(store *st)
{
    struct sockaddr_un a;
    char path[PATH_MAX];
    int fd;

    /* every node's daemon (PostgreSQL), at once or at the commit */
    if (store_wake_nodes(st) != 0)
        err_clear();
    daemon_sock_path(store_path(st), path, sizeof(path));
    if (strlen(path) >= sizeof(a.sun_path))
        return;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, path, strlen(path) + 1);
    if (sendto(fd, "w", 1, 0, (struct sockaddr *)&a, sizeof(a)) < 0) {
        /* no daemon listening: it will see the work at its next start */
    }
    close(fd);
}

/* The pid of the process holding a flock() on the file st describes, from
 * /proc/locks (which names the file by device and inode, whatever path
 * opened it); 0 when none is found. */
static long lock_holder(const struct stat *st)
{
    FILE *f = fopen("/proc/locks", "re");
    char line[256];
    long found = 0, by_ino = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        char kind[16], mode[16];
        unsigned maj, min;
        unsigned long long ino;
        long pid;
        if (strstr(line, "->")) /* a waiter, not the holder */
            continue;
        if (sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%llu", kind, mode, &pid, &maj, &min, &ino) !=
            6)
            continue;
        if (strcmp(kind, "FLOCK") || strcmp(mode, "WRITE") || ino != (unsigned long long)st->st_ino)
            continue;
        if (maj == major(st->st_dev) && min == minor(st->st_dev)) {
            found = pid;
            break;
        }
        by_ino = pid; /* overlay file systems report another device */
    }
    fclose(f);
    return found ? found : by_ino;
}

/* How long a start waits for the lock of a daemon that just died: a job
 * it was forking when it was killed shares the lock until its exec, which
 * on a loaded machine takes a while. */
#define LOCK_GRACE_MS 2000

/* flock(fd, LOCK_EX) within ms milliseconds: 1 when taken. */
static int lock_within(int fd, int ms)
{
    for (int waited = 0;; waited += 50) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 1;
        if (errno != EWOULDBLOCK || waited >= ms)
            return 0;
        time_sleep_ms(50);
    }
}

/* One instance per database: an exclusive flock() on the database file
 * itself.  flock() locks are independent of the POSIX locks SQLite takes
 * on the same file, but a close() of this descriptor would drop SQLite's
 * POSIX locks of this process on the file: the descriptor is opened before
 * the process's first connection and closed after its last
 * (daemon_lock_release checks). */
int daemon_lock_take(const char *db_path, int *out)
{
    struct stat st;
    char path[PATH_MAX], dir[PATH_MAX];
    int fd, rc;

    *out = -1;
    if (store_sqlite_open_count() > 0)
        return err_set(ERR_INVALID, "daemon lock: taken after a database connection was "
                                    "opened (it must come first)");
    if ((rc = store_local_dir(dir, sizeof(dir), db_path)) != 0 ||
        (rc = fs_mkdir_p(dir, 0700)) != 0 ||
        (rc = node_file(path, sizeof(path), db_path, "", "daemon.lock")) != 0)
        return rc;
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
        return err_set(ERR_IO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(ERR_IO, "%s: not a regular file", path);
    }
    if (!lock_within(fd, LOCK_GRACE_MS)) {
        long pid = lock_holder(&st);
        char who[32] = "unknown";
        close(fd);
        if (pid > 0)
            snprintf(who, sizeof(who), "%ld", pid);
        return err_set(ERR_BUSY, "a daemon is already running for %s (pid %s)", db_path, who);
    }
    *out = fd;
    return 0;
}

void daemon_lock_release(int fd)
{
    if (fd < 0)
        return;
    if (store_sqlite_open_count() > 0) {
        log_warn("daemon lock: a database connection is still open: the lock is kept "
                 "until the process exits");
        return;
    }
    close(fd);
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

static int job_alive(pid_t pid, const char *run_id)
{
    return job_process_is((long)pid, run_id);
}

static int count_lane(const struct daemon *d, const char *lane)
{
    int n = 0;

    for (int i = 0; i < d->nkids; i++)
        if (!strcmp(d->kids[i].lane, lane))
            n++;
    return n;
}

static struct kid *find_kid(struct daemon *d, pid_t pid)
{
    for (int i = 0; i < d->nkids; i++)
        if (d->kids[i].pid == pid)
            return &d->kids[i];
    return NULL;
}

static void drop_kid(struct daemon *d, struct kid *k)
{
    *k = d->kids[--d->nkids];
}

/* What a run's row says at its end, for the log line. */
struct run_end {
    char status[16], item[ID_SIZE], attempt[16], failure[256];
};

static void run_end_read(struct daemon *d, const char *run_id, struct run_end *e)
{
    struct store_run r;

    memset(e, 0, sizeof(*e));
    if (store_run_get(d->st, run_id, &r) != 0) {
        err_clear();
        return;
    }
    snprintf(e->status, sizeof(e->status), "%s", r.status);
    snprintf(e->item, sizeof(e->item), "%s", r.item_id);
    snprintf(e->attempt, sizeof(e->attempt), "%d", r.attempt);
    snprintf(e->failure, sizeof(e->failure), "%s", r.failure_reason);
}

/* After a job process ended: if its run is still `running`, the job died
 * without finishing it (crash, kill -9, timeout kill): abort and recover.
 * Either way one log line: job.finished (the run's status, and its failure
 * reason when it failed) or job.aborted.  -1 when nothing could be
 * recorded (said once per kid). */
static int job_ended(struct daemon *d, struct kid *k, int status)
{
    char reason[256];
    int64_t dur = time_mono_ms() - k->started;
    char durs[32], failed[512];
    struct run_end e;
    int rc;

    if (k->timed_out)
        snprintf(reason, sizeof(reason), "killed after its timeout of %lld s",
                 (long long)(k->timeout / 1000));
    else if (k->foreign)
        snprintf(reason, sizeof(reason), "the job process of an earlier daemon is gone");
    else if (WIFSIGNALED(status))
        snprintf(reason, sizeof(reason), "the job process was killed by signal %d",
                 WTERMSIG(status));
    else
        snprintf(reason, sizeof(reason),
                 "the job process exited with status %d without "
                 "finishing its run",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    rc = lifecycle_abort_run(d->st, k->run_id, k->timed_out ? "timeout" : "aborted", reason);
    snprintf(failed, sizeof(failed), "%s", rc ? err_last() : "");
    snprintf(durs, sizeof(durs), "%lld", (long long)dur);
    run_end_read(d, k->run_id, &e);
    if (rc == 0) {
        log_event(LOG_WARN, "job.aborted", "run", k->run_id, "goal", k->goal_id, "item",
                  e.item[0] ? e.item : NULL, "kind", k->kind, "status", e.status, "attempt",
                  e.attempt, "duration_ms", durs, "failure", reason, NULL);
        return 0;
    }
    if (rc == ERR_TRANSITION && strcmp(e.status, "success") != 0) {
        /* the job died after ending its run, before recovering its item */
        if ((rc = lifecycle_recover_stranded(d->st, k->run_id, reason)) == 0) {
            log_event(LOG_WARN, "job.aborted", "run", k->run_id, "goal", k->goal_id, "item",
                      e.item[0] ? e.item : NULL, "kind", k->kind, "status", e.status, "attempt",
                      e.attempt, "duration_ms", durs, "failure", reason, "recovered", "item", NULL);
            return 0;
        }
        snprintf(failed, sizeof(failed), "%s", err_last());
    }
    if (rc == ERR_TRANSITION || rc == ERR_NOTFOUND) {
        int ok = !strcmp(e.status, "success");
        log_event(ok ? LOG_INFO : LOG_WARN, "job.finished", "run", k->run_id, "goal", k->goal_id,
                  "item", e.item[0] ? e.item : NULL, "kind", k->kind, "status", e.status, "attempt",
                  e.attempt, "duration_ms", durs, "failure", !ok && e.failure[0] ? e.failure : NULL,
                  NULL);
        return 0;
    }
    if (!k->gone)
        log_error("run %.8s: cannot record its end (retried): %s", k->run_id, failed);
    err_clear();
    return -1;
}

/* The goals of this node's jobs now (ids: room for MAX_KIDS). */
static struct monitor_busy busy_goals(const struct daemon *d, char (*ids)[ID_SIZE])
{
    struct monitor_busy b = {(const char(*)[ID_SIZE])ids, d->nkids};

    for (int i = 0; i < d->nkids; i++)
        memcpy(ids[i], d->kids[i].goal_id, ID_SIZE);
    return b;
}

/* This node's worktree of goal_id goes when the goal ended and no job of
 * this node runs it (monitor_worktree_drop). */
static void drop_worktree(struct daemon *d, const char *goal_id)
{
    char ids[MAX_KIDS][ID_SIZE];
    struct monitor_busy b = busy_goals(d, ids);
    int removed = 0;

    if (monitor_worktree_drop(d->st, goal_id, &b, &removed) != 0) {
        log_warn("%s", err_last());
        err_clear();
    }
}

/* k's process ended: record it, or keep k (gone) to try again.  Its
 * goal's worktree goes when the goal ended (a cancel on another node, a
 * publish whose own removal failed). */
static void kid_ended(struct daemon *d, struct kid *k, int status)
{
    char goal[ID_SIZE];

    if (job_ended(d, k, status) == 0) {
        memcpy(goal, k->goal_id, ID_SIZE);
        drop_kid(d, k);
        drop_worktree(d, goal);
        return;
    }
    k->gone = 1;
    k->status = status;
    k->pid = 0;
}

static void reap(struct daemon *d)
{
    int status, ended = 0;
    pid_t pid;

    /* ends not recorded at an earlier tick (kid_ended) */
    for (int i = d->nkids - 1; i >= 0; i--)
        if (d->kids[i].gone)
            kid_ended(d, &d->kids[i], d->kids[i].status);
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct kid *k = find_kid(d, pid);
        if (!k)
            continue;
        kid_ended(d, k, status);
        ended++;
    }
    /* a job killed (timeout, SIGKILL, crash) leaves its command's cgroup */
    if (ended && sandbox_cgroup_sweep() > 0)
        log_debug("removed the cgroups of ended jobs");
    /* jobs of an earlier daemon: not our children, watched by pid */
    for (int i = d->nkids - 1; i >= 0; i--)
        if (d->kids[i].foreign && !d->kids[i].gone && !job_alive(d->kids[i].pid, d->kids[i].run_id))
            kid_ended(d, &d->kids[i], 0);
}

static void enforce_timeouts(struct daemon *d)
{
    int64_t now = time_mono_ms();
    int64_t grace = config_int(CFG_DAEMON_KILL_GRACE_S) * 1000;

    for (int i = 0; i < d->nkids; i++) {
        struct kid *k = &d->kids[i];
        if (k->gone)
            continue;
        if (!k->term_at && now - k->started > k->timeout) {
            k->timed_out = 1;
            k->term_at = now;
            log_event(LOG_WARN, "job.timeout", "run", k->run_id, "goal", k->goal_id, "kind",
                      k->kind, NULL);
            kill(-k->pid, SIGTERM);
        } else if (k->term_at && now - k->term_at > grace) {
            kill(-k->pid, SIGKILL);
        }
    }
}

static int spawn(struct daemon *d, const struct claim *c)
{
    const char *argv[10];
    int argc = 0;
    struct kid *k;
    char **envp = NULL;
    int secret_fd = -1;
    pid_t pid;

    if (d->nkids >= MAX_KIDS)
        return err_set(ERR_BUSY, "too many jobs");
    /* the credentials go through a pipe, never the job's environment
     * (which its children could read in /proc/PID/environ) */
    if (secret_child_env(&envp, &secret_fd) != 0)
        return -1;
    argv[argc++] = d->self;
    argv[argc++] = "--db";
    argv[argc++] = d->o->db_path;
    if (d->o->config_path) {
        argv[argc++] = "--config";
        argv[argc++] = d->o->config_path;
    }
    argv[argc++] = "job";
    argv[argc++] = c->run_id;
    argv[argc] = NULL;
    pid = fork();
    if (pid < 0) {
        int e = errno;
        secret_child_env_free(envp);
        if (secret_fd >= 0)
            close(secret_fd);
        return err_set(ERR_IO, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        sigset_t none;
        int null = open("/dev/null", O_RDWR);
        setpgid(0, 0); /* its own group: a timeout kills all of it */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            if (null > 2)
                close(null);
        }
        if (secret_fd >= 0)
            fcntl(secret_fd, F_SETFD, 0);
        if (envp)
            execve(d->self, (char *const *)argv, envp);
        else
            execv(d->self, (char *const *)argv);
        _exit(127);
    }
    secret_child_env_free(envp);
    if (secret_fd >= 0)
        close(secret_fd);
    setpgid(pid, pid);
    k = &d->kids[d->nkids++];
    memset(k, 0, sizeof(*k));
    k->pid = pid;
    snprintf(k->run_id, sizeof(k->run_id), "%s", c->run_id);
    snprintf(k->goal_id, sizeof(k->goal_id), "%s", c->goal_id);
    snprintf(k->lane, sizeof(k->lane), "%s", c->lane);
    snprintf(k->kind, sizeof(k->kind), "%s", c->kind);
    k->started = time_mono_ms();
    k->timeout = (int64_t)(c->timeout_s > 0 ? c->timeout_s : 600) * 1000;
    {
        char pids[32], att[16];
        snprintf(pids, sizeof(pids), "%ld", (long)pid);
        snprintf(att, sizeof(att), "%d", c->attempt);
        log_event(LOG_INFO, "job.started", "run", c->run_id, "goal", c->goal_id, "item",
                  c->item_id[0] ? c->item_id : NULL, "kind", c->kind, "lane", c->lane, "job_pid",
                  pids, "attempt", att, NULL);
    }
    return 0;
}

/* Claim and start units while the lanes have room; returns how many. */
static int claim_all(struct daemon *d)
{
    static const struct {
        const char *lane;
        enum cfg_key cap;
    } lanes[] = {{"plan", CFG_DAEMON_PLAN_CAP}, {"work", CFG_DAEMON_WORK_CAP}};
    char busy[MAX_KIDS][ID_SIZE];
    int started = 0;

    /* a configuration error's breaker closes when the configuration changed
     * (SIGHUP, or a restart with another one) */
    if (breaker_config_sweep(d->st, time_now_ms()) < 0)
        log_warn("breakers: %s", err_last());

    for (size_t l = 0; l < 2; l++) {
        while (count_lane(d, lanes[l].lane) < config_int(lanes[l].cap)) {
            struct claim c;
            int nb = 0, rc;
            for (int i = 0; i < d->nkids; i++)
                memcpy(busy[nb++], d->kids[i].goal_id, ID_SIZE);
            struct claim_scope scope = {d->node_id, (const char(*)[ID_SIZE])busy, nb,
                                        (int)config_int(lanes[l].cap),
                                        d->shared ? d->node_id : NULL};
            rc = claim_next(d->st, lanes[l].lane, CLAIM_NOW, &scope, &c, NULL, 0);
            if (rc == ERR_NOTFOUND)
                break;
            if (rc) {
                log_warn("claim (%s lane): %s", lanes[l].lane, err_last());
                break;
            }
            if (spawn(d, &c) != 0) {
                log_error("run %.8s: cannot start its job: %s", c.run_id, err_last());
                lifecycle_abort_run(d->st, c.run_id, "aborted", "the job could not be started");
                break;
            }
            started++;
        }
    }
    return started;
}

/* A live job of an earlier daemon: watched as a kid (not reaped). */
static void adopt(struct daemon *d, const struct store_run *o, int64_t now)
{
    struct kid *k = &d->kids[d->nkids++];

    memset(k, 0, sizeof(*k));
    k->pid = (pid_t)o->pid;
    k->foreign = 1;
    snprintf(k->run_id, sizeof(k->run_id), "%s", o->id);
    snprintf(k->goal_id, sizeof(k->goal_id), "%s", o->goal_id);
    snprintf(k->lane, sizeof(k->lane), "%s", o->lane);
    snprintf(k->kind, sizeof(k->kind), "%s", o->kind);
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
    if (job_alive((pid_t)o->pid, o->id)) {
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
        snprintf(why, n, "its node %s has no heartbeat (stopped)", node);
    else
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

    snprintf(o.node_id, sizeof(o.node_id), "%s", h->node_id);
    if (!t) {
        snprintf(why, n, "its job is gone (found at daemon start)");
        return is_local(d, &o) && !(h->pid > 0 && job_alive((pid_t)h->pid, h->run_id));
    }
    return d->shared && !is_local(d, &o) && h->ended_at > 0 &&
           now - h->ended_at > config_int(CFG_NODE_DEAD_AFTER_S) * 1000 &&
           node_stopped(t, h->node_id, now, why, n);
}

/* Items left held with nothing running them (a job killed between its
 * run's end and that run's recovery while no daemon watched it; or its
 * node died for good): recovered when held_gone() says so.  Returns how
 * many. */
static int recover_held(struct daemon *d, const struct node_ticks *t, int64_t now)
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
static int recover_orphans(struct daemon *d, int startup, int remote)
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
        aborted += recover_held(d, &t, now);
    free(t.id);
    free(t.tick);
    free(o);
    return aborted;
}

static void heartbeat(struct daemon *d)
{
    cJSON *lanes = cJSON_CreateObject(), *jobs;
    char *text;
    int64_t now = time_mono_ms();

    for (int l = 0; l < 2; l++) {
        const char *name = l ? "work" : "plan";
        cJSON *o = cJSON_AddObjectToObject(lanes, name);
        cJSON_AddNumberToObject(o, "running", count_lane(d, name));
        cJSON_AddNumberToObject(o, "cap",
                                (double)config_int(l ? CFG_DAEMON_WORK_CAP : CFG_DAEMON_PLAN_CAP));
    }
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
        drop_worktree(d, ids[i]);
    free(ids);
}

static void sweep_worktrees(struct daemon *d)
{
    char ids[MAX_KIDS][ID_SIZE];
    struct monitor_busy b = busy_goals(d, ids);
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
        n = recover_orphans(d, 0, 1);
        if (n)
            log_info("nodes: %d run%s of a dead node aborted and recovered", n, n == 1 ? "" : "s");
    }
    if (!d->last_sweep ||
        time_mono_ms() - d->last_sweep >= config_int(CFG_MONITOR_SWEEP_INTERVAL_S) * 1000) {
        struct monitor_sweep sw;
        int stale = recover_orphans(d, 0, 1); /* stale leases, dead nodes */
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
    recover_orphans(d, 1, 1);
    recover_held(d, NULL, 0);
    sandbox_cgroup_sweep(); /* left by jobs of an earlier daemon */
    /* a start is the only way new environment variables (a rotated key)
     * arrive, and the configuration's fingerprint cannot tell a key from
     * another of its length: the breaker a refused key opened closes, and
     * its escalations with it (a key still refused fails one job and opens
     * them again).  A config breaker stays: the fingerprint sees every
     * setting but the key, so a start with the same settings starts
     * nothing (issue 16) */
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
    reap(d);
    enforce_timeouts(d);
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
        started = claim_all(d);
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
    reap(d);
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
