/*
 * sandbox.c - running a command in the sandbox (sandbox.h): the command's
 * output kept as a tail (and spilled whole to a file when asked), the
 * child (rlimits, its own process group, a pids cgroup when one can be
 * made, root given up as root: drop.c), the deadlines (SIGTERM, then
 * SIGKILL of the whole group), and the self-test `goald doctor` runs.
 * The argument vector is bwrap.c's.
 */
#include "sandbox/sandbox.h"
#include "sandbox/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/drop.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* --- output capture ---------------------------------------------------- */

struct tail {
    char *buf;
    size_t len, keep, alloc;
    uint64_t total, lines;
    unsigned char last;
};

static void tail_init(struct tail *t, size_t keep)
{
    memset(t, 0, sizeof(*t));
    t->keep = keep;
    t->alloc = keep * 2 + 1;
    t->buf = xmalloc(t->alloc);
}

/* Keep the last `keep` bytes; count every byte and newline. */
static void tail_add(struct tail *t, const char *d, size_t n)
{
    const char *p = d, *end = d + n;

    if (n == 0)
        return;
    t->total += n;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        t->lines++;
        p++;
    }
    t->last = (unsigned char)d[n - 1];
    if (n >= t->keep) {
        memcpy(t->buf, d + n - t->keep, t->keep);
        t->len = t->keep;
        return;
    }
    if (t->len + n > t->alloc - 1) {
        size_t drop = t->len + n - t->keep;
        memmove(t->buf, t->buf + drop, t->len - drop);
        t->len -= drop;
    }
    memcpy(t->buf + t->len, d, n);
    t->len += n;
}

static void tail_finish(struct tail *t, struct sandbox_stream *s)
{
    if (t->len > t->keep) {
        memmove(t->buf, t->buf + t->len - t->keep, t->keep);
        t->len = t->keep;
    }
    t->buf[t->len] = '\0';
    s->data = t->buf;
    s->len = t->len;
    s->total_bytes = t->total;
    s->total_lines = t->lines + (t->total > 0 && t->last != '\n');
    s->truncated = t->total > t->len;
    t->buf = NULL;
}

void sandbox_result_release(struct sandbox_result *res)
{
    if (!res)
        return;
    free(res->out.data);
    free(res->err.data);
    memset(res, 0, sizeof(*res));
}

/* --- the child ----------------------------------------------------------- */

struct child_plan {
    const char *exe; /* absolute path to exec */
    char *const *argv;
    char *const *envp;
    int in_fd, out_fd, err_fd;
    int cwd_fd; /* -1: chdir(cwd) */
    const char *cwd;
    const struct sandbox_cgroup *cg;
    const struct sandbox_drop *drop; /* root given up for the sandbox user, when active */
    struct rlimit lim[5];
    int lim_res[5];
    int nlim;
};

/* After fork: only async-signal-safe calls. */
static void child_exec(const struct child_plan *p)
{
    sigset_t none;

    setpgid(0, 0);
    if (sandbox_cgroup_enter(p->cg) != 0)
        _exit(126);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    if (dup2(p->in_fd, 0) < 0 || dup2(p->out_fd, 1) < 0 || dup2(p->err_fd, 2) < 0)
        _exit(126);
    if (p->cwd_fd >= 0 ? fchdir(p->cwd_fd) != 0 : chdir(p->cwd) != 0)
        _exit(126);
    for (int i = 0; i < p->nlim; i++)
        if (setrlimit((__rlimit_resource_t)p->lim_res[i], &p->lim[i]) != 0)
            _exit(126);
    if (sandbox_drop_child(p->drop) != 0)
        _exit(126);
    closefrom(3);
    execve(p->exe, p->argv, p->envp);
    {
        static const char msg[] = "goald: sandbox: cannot execute the command\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
    }
    _exit(127);
}

static void add_limit(struct child_plan *p, int res, int64_t value)
{
    if (value <= 0)
        return;
    p->lim_res[p->nlim] = res;
    p->lim[p->nlim].rlim_cur = (rlim_t)value;
    p->lim[p->nlim].rlim_max = (rlim_t)value;
    p->nlim++;
}

static void record_unconfined(const struct sandbox_spec *spec)
{
    cJSON *p;

    log_warn("sandbox: GOALD_SANDBOX=none: running unconfined in %s: %.200s", spec->root,
             spec->command ? spec->command : spec->argv[0]);
    if (!spec->st)
        return;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "root", spec->root);
    cJSON_AddStringToObject(p, "command", spec->command ? spec->command : spec->argv[0]);
    cJSON_AddStringToObject(p, "level", "warning");
    if (store_event_add(spec->st, spec->goal_id, spec->item_id, spec->run_id, "sandbox.unconfined",
                        p, NULL) != 0)
        log_warn("sandbox: cannot record sandbox.unconfined: %s", err_last());
    cJSON_Delete(p);
}

/* sandbox.memory_mb in bytes; 0 means half of the physical memory. */
static long long memory_limit(void)
{
    long long mb = config_int(CFG_SANDBOX_MEMORY_MB);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

    if (mb > 0)
        return mb << 20;
    return pages > 0 && psize > 0 ? (long long)pages * psize / 2 : 0;
}

static void kill_all(pid_t pgid, const struct sandbox_cgroup *cg, int sig)
{
    if (pgid > 0)
        kill(-pgid, sig);
    sandbox_cgroup_signal(cg, sig);
}

/* --- the run ------------------------------------------------------------- */

/* What sandbox_run() holds for one command, from the argument vector to the
 * reaping; run_release() frees it all. */
struct run {
    const struct sandbox_spec *spec;
    struct sandbox_result *res;
    struct strv env, args;
    struct sandbox_cgroup cg;
    struct sandbox_drop drop;
    struct tail tout, terr;
    char exe[PATH_MAX];
    int pout[2], perr[2];
    int devnull, spill_fd, pidfd;
    size_t spilled;
    int spill_over;
    int unconfined;
    int64_t start, deadline, kill_at;
    int status, reaped;
    pid_t pid;
};

/* A private, empty HOME of our own for a command that runs outside
 * bubblewrap: $TMPDIR/goald-home-UID, a folder owned by us (not a link). */
static int private_home(char *home, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    struct stat hst;
    int rc;

    if (!tmp || !*tmp)
        tmp = "/tmp";
    if ((rc = path_fmt(home, n, "%s/goald-home-%ld", tmp, (long)getuid())) != 0)
        return err_wrap(rc, "sandbox: TMPDIR");
    if (mkdir(home, 0700) != 0 && errno != EEXIST)
        return err_set(ERR_IO, "sandbox: %s: %s", home, strerror(errno));
    if (lstat(home, &hst) != 0 || !S_ISDIR(hst.st_mode) || hst.st_uid != getuid())
        return err_set(ERR_IO, "sandbox: %s: not a folder of ours", home);
    return 0;
}

/* The command as it runs outside bubblewrap (spec->direct, or
 * GOALD_SANDBOX=none): found in sandbox.path, then $PATH. */
static int prepare_unconfined(struct run *r)
{
    char home[PATH_MAX];
    int rc;

    if ((rc = private_home(home, sizeof(home))) != 0)
        return rc;
    if ((rc = sandbox_build_env(&r->env, r->spec, home)) != 0)
        return rc;
    sandbox_add_command(&r->args, r->spec);
    if (sandbox_find_exe(r->exe, sizeof(r->exe), r->args.v[0], config_str(CFG_SANDBOX_PATH)) != 0 &&
        sandbox_find_exe(r->exe, sizeof(r->exe), r->args.v[0], getenv("PATH")) != 0)
        return err_set(ERR_NOTFOUND, "sandbox: %s: command not found", r->args.v[0]);
    if (r->unconfined)
        record_unconfined(r->spec);
    return 0;
}

/* The command as bubblewrap's argument vector. */
static int prepare_bwrap(struct run *r)
{
    char real[PATH_MAX];
    int rc;

    if ((rc = sandbox_find_bwrap(r->exe, sizeof(r->exe))) != 0)
        return rc;
    if ((rc = sandbox_drop_plan(&r->drop)) != 0)
        return rc;
    /* bubblewrap is executed as the sandbox user: by its real path, so
     * that a link to it in a folder only root may enter (a PATH entry
     * under /root, a 0700 temporary folder) does not stop it */
    if (r->drop.active && !realpath(r->exe, real))
        return err_set(ERR_POLICY, "bubblewrap (%s): %s", r->exe, strerror(errno));
    if (r->drop.active && (rc = path_fmt(r->exe, sizeof(r->exe), "%s", real)) != 0)
        return rc;
    if ((rc = sandbox_build_env(&r->env, r->spec, SANDBOX_HOME)) != 0)
        return rc;
    if ((rc = sandbox_build_bwrap(&r->args, r->spec, r->exe, &r->env, &r->drop)) != 0)
        return rc;
    sandbox_add_command(&r->args, r->spec);
    /* as root: the folder the command writes becomes the sandbox user's */
    return sandbox_drop_prepare(&r->drop, r->spec->root_src ? r->spec->root_src : r->spec->root);
}

/* The per-command pids (and memory) cgroup, when configured; a command
 * that cannot have one runs without (cg.active stays 0). */
static void make_cgroup(struct run *r)
{
    /* what killed jobs left behind: once per process (a job, a `goald
     * tool` call), not on every command of the hot path; the daemon
     * sweeps at start and whenever a job ends */
    static int swept;

    if (!config_bool(CFG_SANDBOX_CGROUP) || config_int(CFG_SANDBOX_NPROC) <= 0 || r->spec->direct)
        return;
    if (!swept) {
        swept = 1;
        sandbox_cgroup_sweep();
    }
    sandbox_cgroup_create(&r->cg, (long)config_int(CFG_SANDBOX_NPROC), memory_limit());
}

/* The output pipes, /dev/null for stdin when the spec gives none, and the
 * spill file. */
static int open_fds(struct run *r)
{
    const struct sandbox_spec *spec = r->spec;

    if (pipe2(r->pout, O_CLOEXEC) != 0 || (!spec->merge_stderr && pipe2(r->perr, O_CLOEXEC) != 0))
        return err_set(ERR_IO, "sandbox: pipe: %s", strerror(errno));
    if (spec->stdin_fd <= 0) {
        r->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (r->devnull < 0)
            return err_set(ERR_IO, "sandbox: /dev/null: %s", strerror(errno));
    }
    if (spec->spill_path) {
        r->spill_fd =
            open(spec->spill_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (r->spill_fd < 0)
            return err_set(ERR_IO, "sandbox: %s: %s", spec->spill_path, strerror(errno));
    }
    return 0;
}

/* Everything the child needs, decided before the fork. */
static void plan_child(struct child_plan *plan, const struct run *r)
{
    const struct sandbox_spec *spec = r->spec;

    memset(plan, 0, sizeof(*plan));
    plan->exe = r->exe;
    plan->argv = r->args.v;
    plan->envp = r->env.v;
    plan->in_fd = spec->stdin_fd > 0 ? spec->stdin_fd : r->devnull;
    plan->out_fd = r->pout[1];
    plan->err_fd = spec->merge_stderr ? r->pout[1] : r->perr[1];
    plan->cwd_fd = spec->direct && spec->cwd_fd > 0 ? spec->cwd_fd : -1;
    plan->cwd = spec->root_src && !spec->direct ? spec->root_src : spec->root;
    plan->cg = &r->cg;
    plan->drop = &r->drop;
    add_limit(plan, RLIMIT_CPU, config_int(CFG_SANDBOX_CPU_S));
    add_limit(plan, RLIMIT_AS, config_int(CFG_SANDBOX_AS_MB) << 20);
    add_limit(plan, RLIMIT_NPROC, config_int(CFG_SANDBOX_NPROC));
    add_limit(plan, RLIMIT_FSIZE, config_int(CFG_SANDBOX_FSIZE_MB) << 20);
    add_limit(plan, RLIMIT_NOFILE, config_int(CFG_SANDBOX_NOFILE));
}

/* Fork the child, start the clock, keep only the read ends of the pipes. */
static int spawn(struct run *r, const struct child_plan *plan)
{
    const struct sandbox_spec *spec = r->spec;

    r->start = time_mono_ms();
    r->deadline = r->start + (spec->timeout_ms > 0 ? spec->timeout_ms
                                                   : config_int(CFG_SANDBOX_TIMEOUT_S) * 1000);
    r->pid = fork();
    if (r->pid < 0)
        return err_set(ERR_IO, "sandbox: fork: %s", strerror(errno));
    if (r->pid == 0)
        child_exec(plan);
    setpgid(r->pid, r->pid); /* also done by the child; whichever runs first */
    r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0); /* -1 before Linux 5.3: then polled */
    close(r->pout[1]);
    r->pout[1] = -1;
    if (r->perr[1] >= 0) {
        close(r->perr[1]);
        r->perr[1] = -1;
    }
    return 0;
}

/* Reap the process if it has ended. */
static void check_reaped(struct run *r, int64_t now)
{
    if (r->reaped || waitpid(r->pid, &r->status, WNOHANG) != r->pid)
        return;
    r->reaped = 1;
    /* leftovers (outside bubblewrap, background children that keep the
     * pipes open) go with their leader */
    kill_all(r->pid, &r->cg, SIGKILL);
    if (!r->kill_at || r->kill_at > now + 200)
        r->kill_at = now + 200;
}

/* The timeout (SIGTERM, then SIGKILL after the grace) and the kill
 * deadline.  1 when the process is gone but something we cannot kill
 * still holds the pipes: give up on them. */
static int check_deadlines(struct run *r, int64_t now)
{
    struct sandbox_result *res = r->res;

    if (!res->timed_out && !res->stopped && now >= r->deadline) {
        res->timed_out = 1;
        kill_all(r->pid, &r->cg, SIGTERM);
        r->kill_at = now + config_int(CFG_SANDBOX_KILL_GRACE_MS);
    }
    if (r->kill_at && now >= r->kill_at) {
        kill_all(r->pid, &r->cg, SIGKILL);
        if (r->reaped)
            return 1;
        r->kill_at = now + 500;
    }
    return 0;
}

/* Copy stdout into the spill file, up to spec->spill_max. */
static void spill(struct run *r, const char *buf, size_t got)
{
    size_t n = got;

    if (r->spill_fd < 0 || r->spill_over)
        return;
    if (r->spec->spill_max && r->spilled + n > r->spec->spill_max) {
        n = r->spec->spill_max - r->spilled;
        r->spill_over = 1;
    }
    if (n && write(r->spill_fd, buf, n) != (ssize_t)n)
        r->spill_over = 1;
    r->spilled += n;
}

/* Read what one pipe has: stderr into its tail; stdout into its tail, the
 * spill file and spec->on_stdout (which may stop the command).  A pipe at
 * its end is closed. */
static void read_pipe(struct run *r, const struct pollfd *pf)
{
    const struct sandbox_spec *spec = r->spec;
    char buf[65536];
    int is_out = pf->fd == r->pout[0];
    ssize_t got;

    if (!(pf->revents & (POLLIN | POLLHUP | POLLERR)))
        return;
    got = read(pf->fd, buf, sizeof(buf));
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        close(pf->fd);
        if (is_out)
            r->pout[0] = -1;
        else
            r->perr[0] = -1;
        return;
    }
    if (!is_out) {
        tail_add(&r->terr, buf, (size_t)got);
        return;
    }
    tail_add(&r->tout, buf, (size_t)got);
    spill(r, buf, (size_t)got);
    if (spec->on_stdout && !r->res->stopped &&
        spec->on_stdout(spec->on_stdout_arg, buf, (size_t)got) != 0) {
        r->res->stopped = 1;
        kill_all(r->pid, &r->cg, SIGKILL);
        if (!r->kill_at)
            r->kill_at = time_mono_ms() + 500;
    }
}

/* Read the output until both pipes are closed and the process is reaped,
 * enforcing the timeout.  The process's exit wakes the poll at once through
 * its pidfd (no polling delay). */
static int pump(struct run *r)
{
    for (;;) {
        struct pollfd pf[3];
        int nf = 0, npipes;
        int64_t now = time_mono_ms();
        int64_t wait_ms;

        check_reaped(r, now);
        if (r->pout[0] >= 0)
            pf[nf++] = (struct pollfd){.fd = r->pout[0], .events = POLLIN};
        if (r->perr[0] >= 0)
            pf[nf++] = (struct pollfd){.fd = r->perr[0], .events = POLLIN};
        npipes = nf;
        if (npipes == 0 && r->reaped)
            return 0;
        if (!r->reaped && r->pidfd >= 0)
            pf[nf++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
        if (check_deadlines(r, now))
            return 0;
        wait_ms = 50;
        if (!r->res->timed_out && r->deadline - now < wait_ms)
            wait_ms = r->deadline - now > 0 ? r->deadline - now : 0;
        if (nf == 0) {
            /* output closed, the process not yet gone, no pidfd: look again soon */
            time_sleep_ms(wait_ms > 2 ? 2 : (wait_ms > 0 ? wait_ms : 1));
            continue;
        }
        if (poll(pf, (nfds_t)nf, (int)wait_ms) < 0 && errno != EINTR) {
            int rc = err_set(ERR_IO, "sandbox: poll: %s", strerror(errno));
            kill_all(r->pid, &r->cg, SIGKILL);
            return rc;
        }
        for (int i = 0; i < npipes; i++)
            read_pipe(r, &pf[i]);
    }
}

/* Reap the process (if pump() has not) and fill the result. */
static void finish(struct run *r)
{
    struct sandbox_result *res = r->res;

    if (!r->reaped) {
        while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
            ;
        r->reaped = 1;
    }
    res->duration_ms = time_mono_ms() - r->start;
    if (WIFEXITED(r->status)) {
        res->exit_code = WEXITSTATUS(r->status);
    } else if (WIFSIGNALED(r->status)) {
        res->term_signal = WTERMSIG(r->status);
        res->exit_code = 128 + res->term_signal;
    }
    /* bubblewrap reports a command killed by a signal as 128 + signal */
    if (!res->term_signal && res->exit_code > 128 && res->exit_code < 128 + 65 &&
        !r->spec->direct && !r->unconfined)
        res->term_signal = res->exit_code - 128;
    res->unconfined = r->unconfined;
    res->pids_cgroup = r->cg.active;
    res->memory_cgroup = r->cg.mem_active;
    res->spilled = r->spill_fd >= 0 && !r->spill_over;
    tail_finish(&r->tout, &res->out);
    tail_finish(&r->terr, &res->err);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Kill and reap a child still running (an error after the fork), and free
 * everything of the run but the result. */
static void run_release(struct run *r)
{
    if (r->pid > 0 && !r->reaped) {
        kill_all(r->pid, &r->cg, SIGKILL);
        waitpid(r->pid, &r->status, 0);
    }
    sandbox_cgroup_destroy(&r->cg);
    sandbox_drop_release(&r->drop);
    free(r->tout.buf);
    free(r->terr.buf);
    for (int i = 0; i < 2; i++) {
        close_fd(&r->pout[i]);
        close_fd(&r->perr[i]);
    }
    close_fd(&r->devnull);
    close_fd(&r->pidfd);
    close_fd(&r->spill_fd);
    sandbox_strv_free(&r->args);
    sandbox_strv_free(&r->env);
}

static int run_once(const struct sandbox_spec *spec, struct sandbox_result *res)
{
    struct run r = {.spec = spec,
                    .res = res,
                    .pout = {-1, -1},
                    .perr = {-1, -1},
                    .devnull = -1,
                    .spill_fd = -1,
                    .pidfd = -1,
                    .pid = -1};
    struct child_plan plan;
    int rc;

    memset(res, 0, sizeof(*res));
    tail_init(&r.tout,
              spec->tail_cap ? spec->tail_cap : (size_t)config_int(CFG_SANDBOX_OUTPUT_KB) << 10);
    tail_init(&r.terr, r.tout.keep);
    if ((rc = sandbox_check_spec(spec)) != 0)
        goto out;
    r.unconfined = !spec->direct && sandbox_unconfined();
    rc = spec->direct || r.unconfined ? prepare_unconfined(&r) : prepare_bwrap(&r);
    if (rc != 0)
        goto out;
    make_cgroup(&r);
    if ((rc = open_fds(&r)) != 0)
        goto out;
    plan_child(&plan, &r);
    if ((rc = spawn(&r, &plan)) != 0)
        goto out;
    rc = pump(&r);
    finish(&r);
out:
    run_release(&r);
    if (rc)
        sandbox_result_release(res);
    return rc;
}

/* bubblewrap gave up while it set the mounts up, before the command ran:
 * its own one line, "bwrap: Can't ... mount ...: Unable to ...".  It
 * reads the mount table and remounts what it bound, and a mount made or
 * removed elsewhere at that moment makes the remount fail (EINVAL). */
static int setup_raced(const struct sandbox_result *res)
{
    const struct sandbox_stream *s = res->err.len ? &res->err : &res->out;
    const char *d = s->data ? s->data : "", *nl = strchr(d, '\n');

    return res->exit_code == 1 && !res->timed_out && !strncmp(d, "bwrap: Can't ", 13) &&
           strstr(d, "mount") && strstr(d, "Unable to") && (!nl || !nl[1]);
}

int sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res)
{
    int rc = run_once(spec, res);

    /* the command never ran: once more (the race does not last) */
    if (rc == 0 && !spec->direct && setup_raced(res)) {
        const char *why = res->err.len ? res->err.data : res->out.data;
        log_warn("sandbox: bubblewrap's setup raced a mount elsewhere (%.*s): run again",
                 (int)strcspn(why, "\n"), why);
        sandbox_result_release(res);
        rc = run_once(spec, res);
    }
    return rc;
}

int sandbox_selftest(char *detail, size_t n)
{
    char bwrap[PATH_MAX];
    char dir[] = "/tmp/goald-selftest-XXXXXX";
    struct sandbox_spec spec = {0};
    struct sandbox_result res;
    static const char *const argv[] = {"true", NULL};
    int rc;

    if (detail && n)
        detail[0] = '\0';
    if (sandbox_unconfined()) {
        if (detail)
            /* truncation: ok, a message */
            snprintf(detail, n, "GOALD_SANDBOX=none: commands run unconfined");
        return err_set(ERR_POLICY, "sandbox: GOALD_SANDBOX=none: commands run unconfined");
    }
    if ((rc = sandbox_find_bwrap(bwrap, sizeof(bwrap))) != 0)
        return rc;
    if (!mkdtemp(dir))
        return err_set(ERR_IO, "sandbox: cannot create a temporary folder: %s", strerror(errno));
    spec.root = dir;
    spec.argv = argv;
    spec.timeout_ms = 30000;
    rc = sandbox_run(&spec, &res);
    if (rc == 0) {
        if (res.exit_code != 0)
            rc = err_set(ERR_FAIL, "sandbox: `true` under %s exited %d: %.300s", bwrap,
                         res.exit_code, res.err.data);
        else if (detail)
            /* truncation: ok, a message */
            snprintf(detail, n, "%s runs `true` in %lld ms; pids cgroup: %s", bwrap,
                     (long long)res.duration_ms, res.pids_cgroup ? "yes" : "no");
        sandbox_result_release(&res);
    }
    rmdir(dir);
    return rc;
}
