/*
 * kids.c - the daemon's job processes: how many run per lane, their ends
 * reaped and recorded (a job's own end, else the signal that killed it),
 * their timeouts (SIGTERM, then SIGKILL), the worktrees of goals that
 * ended, and the claims that spawn new ones (`goald job RUN_ID`, each the
 * leader of its own process group).
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
#include "store/status.h"
#include "store/store.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/log.h"
#include "util/secret.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

int daemon_job_alive(pid_t pid, const char *run_id)
{
    return job_process_is((long)pid, run_id);
}

int daemon_count_lane(const struct daemon *d, const char *lane)
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
    snprintf(e->status, sizeof(e->status), "%s", r.status); /* truncation: ok, a status, short */
    snprintf(e->item, sizeof(e->item), "%s", r.item_id); /* truncation: ok, an id, ID_SIZE both */
    snprintf(e->attempt, sizeof(e->attempt), "%d", r.attempt); /* truncation: ok, a number fits */
    /* truncation: ok, a reason shown */
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
        /* truncation: ok, a reason shown */
        snprintf(reason, sizeof(reason), "killed after its timeout of %lld s",
                 (long long)(k->timeout / 1000));
    else if (k->foreign)
        /* truncation: ok, a reason shown */
        snprintf(reason, sizeof(reason), "the job process of an earlier daemon is gone");
    else if (WIFSIGNALED(status))
        /* truncation: ok, a reason shown */
        snprintf(reason, sizeof(reason), "the job process was killed by signal %d",
                 WTERMSIG(status));
    else
        snprintf(reason, sizeof(reason), /* truncation: ok, a reason shown */
                 "the job process exited with status %d without "
                 "finishing its run",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    rc = lifecycle_abort_run(d->st, k->run_id, k->timed_out ? "timeout" : "aborted", reason);
    snprintf(failed, sizeof(failed), "%s", rc ? err_last() : ""); /* truncation: ok, a message */
    snprintf(durs, sizeof(durs), "%lld", (long long)dur); /* truncation: ok, a number fits */
    run_end_read(d, k->run_id, &e);
    if (rc == 0) {
        log_event(LOG_WARN, "job.aborted", "run", k->run_id, "goal", k->goal_id, "item",
                  e.item[0] ? e.item : NULL, "kind", k->kind, "status", e.status, "attempt",
                  e.attempt, "duration_ms", durs, "failure", reason, NULL);
        return 0;
    }
    if (rc == ERR_TRANSITION && run_status_of(e.status) != RUN_SUCCESS) {
        /* the job died after ending its run, before recovering its item */
        if ((rc = lifecycle_recover_stranded(d->st, k->run_id, reason)) == 0) {
            log_event(LOG_WARN, "job.aborted", "run", k->run_id, "goal", k->goal_id, "item",
                      e.item[0] ? e.item : NULL, "kind", k->kind, "status", e.status, "attempt",
                      e.attempt, "duration_ms", durs, "failure", reason, "recovered", "item", NULL);
            return 0;
        }
        snprintf(failed, sizeof(failed), "%s", err_last()); /* truncation: ok, a message */
    }
    if (rc == ERR_TRANSITION || rc == ERR_NOTFOUND) {
        int ok = run_status_of(e.status) == RUN_SUCCESS;
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
struct monitor_busy daemon_busy_goals(const struct daemon *d, char (*ids)[ID_SIZE])
{
    struct monitor_busy b = {(const char(*)[ID_SIZE])ids, d->nkids};

    for (int i = 0; i < d->nkids; i++)
        memcpy(ids[i], d->kids[i].goal_id, ID_SIZE);
    return b;
}

/* This node's worktree of goal_id goes when the goal ended and no job of
 * this node runs it (monitor_worktree_drop). */
void daemon_drop_worktree(struct daemon *d, const char *goal_id)
{
    char ids[MAX_KIDS][ID_SIZE];
    struct monitor_busy b = daemon_busy_goals(d, ids);
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
        daemon_drop_worktree(d, goal);
        return;
    }
    k->gone = 1;
    k->status = status;
    k->pid = 0;
}

void daemon_reap(struct daemon *d)
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
        if (d->kids[i].foreign && !d->kids[i].gone && !daemon_job_alive(d->kids[i].pid, d->kids[i].run_id))
            kid_ended(d, &d->kids[i], 0);
}

void daemon_enforce_timeouts(struct daemon *d)
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
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(k->run_id, sizeof(k->run_id), "%s", c->run_id);
    /* truncation: ok, an id, ID_SIZE both */
    snprintf(k->goal_id, sizeof(k->goal_id), "%s", c->goal_id);
    snprintf(k->lane, sizeof(k->lane), "%s", c->lane); /* truncation: ok, a lane, 8 bytes both */
    snprintf(k->kind, sizeof(k->kind), "%s", c->kind); /* truncation: ok, a kind, 16 bytes both */
    k->started = time_mono_ms();
    k->timeout = (int64_t)(c->timeout_s > 0 ? c->timeout_s : 600) * 1000;
    {
        char pids[32], att[16];
        snprintf(pids, sizeof(pids), "%ld", (long)pid); /* truncation: ok, a number fits */
        snprintf(att, sizeof(att), "%d", c->attempt); /* truncation: ok, a number fits */
        log_event(LOG_INFO, "job.started", "run", c->run_id, "goal", c->goal_id, "item",
                  c->item_id[0] ? c->item_id : NULL, "kind", c->kind, "lane", c->lane, "job_pid",
                  pids, "attempt", att, NULL);
    }
    return 0;
}

/* Claim and start units while the lanes have room; returns how many. */
int daemon_claim_all(struct daemon *d)
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
        while (daemon_count_lane(d, lanes[l].lane) < config_int(lanes[l].cap)) {
            struct claim c;
            int nb = 0, rc;
            /* a goal with a job here takes no other unit, but for the
             * work lane's items of a goal that runs them side by side:
             * the claim rule counts those (goal.max_parallel_items) */
            for (int i = 0; i < d->nkids; i++)
                if (l == 0 || strcmp(d->kids[i].kind, "execute") != 0 || d->kids[i].gone)
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
