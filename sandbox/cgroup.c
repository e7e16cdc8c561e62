#include "sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "util/path.h"

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    size_t n = strlen(text);
    ssize_t w;

    if (fd < 0)
        return -1;
    w = write(fd, text, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

static int read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    size_t got;

    if (!f)
        return -1;
    got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
    return 0;
}

/* Whether the space/comma separated list has word. */
static int has_word(const char *list, const char *word)
{
    size_t wl = strlen(word);

    for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
        int start = p == list || p[-1] == ' ' || p[-1] == ',';
        int end = p[wl] == '\0' || p[wl] == ' ' || p[wl] == ',' || p[wl] == '\n';
        if (start && end)
            return 1;
    }
    return 0;
}

/* s into out, or "" when it does not fit: a cut path names no cgroup. */
static void copy_or_none(char *out, size_t n, const char *s)
{
    if (path_fmt(out, n, "%s", s) != 0)
        out[0] = '\0';
}

/* 1 when the cgroup v2 folder dir offers controller to its children. */
static int v2_enabled(const char *dir, const char *controller)
{
    char ctl[1024], buf[512], plus[32];

    if (path_fmt(ctl, sizeof(ctl), "%s/cgroup.controllers", dir) != 0 ||
        read_small(ctl, buf, sizeof(buf)) != 0 || !has_word(buf, controller))
        return 0;
    if (path_fmt(ctl, sizeof(ctl), "%s/cgroup.subtree_control", dir) != 0 ||
        read_small(ctl, buf, sizeof(buf)) != 0)
        return 0;
    /* enabling may fail (processes in our own cgroup): then none */
    if (!has_word(buf, controller) &&
        ((size_t)snprintf(plus, sizeof(plus), "+%s", controller) >= sizeof(plus) ||
         write_file(ctl, plus) != 0))
        return 0;
    return 1;
}

/* Our cgroup folder in the hierarchy of controller ("pids", "memory") into
 * out; 1 = cgroup v1, 2 = v2 (the controller enabled for children), 0 none. */
static int find_base(const char *controller, char *out, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    char v1mnt[512] = "", v2mnt[512] = "";
    char v1path[512] = "", v2path[512] = "";
    int ver = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        char *sep = strstr(line, " - ");
        char mnt[512], fstype[64], src[256], opts[1024];
        if (!sep)
            continue;
        if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
            continue;
        if (sscanf(sep + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
            continue;
        if (!strcmp(fstype, "cgroup") && has_word(opts, controller) && !v1mnt[0])
            copy_or_none(v1mnt, sizeof(v1mnt), mnt);
        else if (!strcmp(fstype, "cgroup2") && !v2mnt[0])
            copy_or_none(v2mnt, sizeof(v2mnt), mnt);
    }
    fclose(f);
    f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        char *a = strchr(line, ':');
        char *b = a ? strchr(a + 1, ':') : NULL;
        if (!b)
            continue;
        *b = '\0';
        b[strcspn(b + 1, "\n") + 1] = '\0';
        if (a[1] == '\0')
            copy_or_none(v2path, sizeof(v2path), b + 1);
        else if (has_word(a + 1, controller))
            copy_or_none(v1path, sizeof(v1path), b + 1);
    }
    fclose(f);
    if (v1mnt[0] && v1path[0]) {
        if (path_fmt(out, n, "%s%s", v1mnt, strcmp(v1path, "/") ? v1path : "") != 0)
            return 0;
        ver = 1;
    } else if (v2mnt[0] && v2path[0]) {
        if (path_fmt(out, n, "%s%s", v2mnt, strcmp(v2path, "/") ? v2path : "") != 0 ||
            !v2_enabled(out, controller))
            return 0;
        ver = 2;
    }
    return ver;
}

/* mkdir a fresh cgroup beneath base into dir. */
static int make_dir(char *dir, size_t n, const char *base)
{
    static unsigned counter;

    if (path_fmt(dir, n, "%s/goald-%ld-%u-%ld", base, (long)getpid(), counter++,
                 (long)time(NULL)) != 0)
        return -1;
    return mkdir(dir, 0755);
}

static int write_num(const char *dir, const char *file, long long v)
{
    char path[700], num[32];

    if (path_fmt(path, sizeof(path), "%s/%s", dir, file) != 0)
        return -1;
    snprintf(num, sizeof(num), "%lld", v); /* truncation: ok, 32 bytes hold any long long */
    return write_file(path, num);
}

int sandbox_cgroup_create(struct sandbox_cgroup *cg, long pids_max, long long mem_bytes)
{
    char base[400], mbase[400];
    int ver, mver;

    memset(cg, 0, sizeof(*cg));
    if ((ver = find_base("pids", base, sizeof(base))) == 0)
        return -1;
    if (make_dir(cg->dir, sizeof(cg->dir), base) != 0)
        return -1;
    if (write_num(cg->dir, "pids.max", pids_max) != 0) {
        rmdir(cg->dir);
        return -1;
    }
    if (path_fmt(cg->procs, sizeof(cg->procs), "%s/cgroup.procs", cg->dir) != 0) {
        rmdir(cg->dir);
        return -1;
    }
    cg->active = 1;
    if (mem_bytes <= 0 || (mver = find_base("memory", mbase, sizeof(mbase))) == 0)
        return 0;
    if (ver == 2 && mver == 2) {
        /* one folder holds both controllers */
        if (write_num(cg->dir, "memory.max", mem_bytes) == 0) {
            write_num(cg->dir, "memory.swap.max", 0); /* absent without swap accounting */
            cg->mem_active = 1;
        }
        return 0;
    }
    if (mver != 1 || make_dir(cg->mem_dir, sizeof(cg->mem_dir), mbase) != 0)
        return 0;
    if (write_num(cg->mem_dir, "memory.limit_in_bytes", mem_bytes) != 0) {
        rmdir(cg->mem_dir);
        cg->mem_dir[0] = '\0';
        return 0;
    }
    if (path_fmt(cg->mem_procs, sizeof(cg->mem_procs), "%s/cgroup.procs", cg->mem_dir) != 0) {
        rmdir(cg->mem_dir);
        cg->mem_dir[0] = '\0';
        return 0;
    }
    cg->mem_active = 1;
    return 0;
}

static int enter_one(const char *procs)
{
    int fd;
    ssize_t w;

    fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    w = write(fd, "0\n", 2);
    close(fd);
    return w == 2 ? 0 : -1;
}

int sandbox_cgroup_enter(const struct sandbox_cgroup *cg)
{
    if (cg->active && enter_one(cg->procs) != 0)
        return -1;
    if (cg->mem_active && cg->mem_procs[0] && enter_one(cg->mem_procs) != 0)
        return -1;
    return 0;
}

int sandbox_cgroup_signal(const struct sandbox_cgroup *cg, int sig)
{
    FILE *f;
    long pid;
    int n = 0;

    if (!cg->active)
        return 0;
    f = fopen(cg->procs, "re");
    if (!f)
        return 0;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, sig) == 0)
            n++;
    fclose(f);
    return n;
}

void sandbox_cgroup_destroy(struct sandbox_cgroup *cg)
{
    struct timespec ts = {0, 10 * 1000 * 1000};

    if (!cg->active)
        return;
    for (int i = 0; i < 200; i++) {
        sandbox_cgroup_signal(cg, SIGKILL);
        if (rmdir(cg->dir) == 0 || errno == ENOENT)
            break;
        nanosleep(&ts, NULL);
    }
    for (int i = 0; cg->mem_dir[0] && i < 200; i++) {
        if (rmdir(cg->mem_dir) == 0 || errno == ENOENT)
            break;
        nanosleep(&ts, NULL);
    }
    cg->active = 0;
    cg->mem_active = 0;
}

int sandbox_cgroup_probe(void)
{
    struct sandbox_cgroup cg;

    if (sandbox_cgroup_create(&cg, 16, 0) != 0)
        return 0;
    sandbox_cgroup_destroy(&cg);
    return 1;
}

/* When process pid started, in seconds since the epoch; -1 if it is gone
 * (or unreadable). */
static long long proc_start(long pid)
{
    char path[64], buf[1024], *p;
    unsigned long long ticks = 0, btime = 0;
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f;

    if (path_fmt(path, sizeof(path), "/proc/%ld/stat", pid) != 0 ||
        read_small(path, buf, sizeof(buf)) != 0 || !(p = strrchr(buf, ')')))
        return -1;
    /* after "pid (comm) ": state is field 3, starttime field 22 */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                      "%*d %llu",
               &ticks) != 1)
        return -1;
    if (!(f = fopen("/proc/stat", "re")))
        return -1;
    while (fgets(buf, sizeof(buf), f))
        if (sscanf(buf, "btime %llu", &btime) == 1)
            break;
    fclose(f);
    if (!btime || hz <= 0)
        return -1;
    return (long long)(btime + ticks / (unsigned long long)hz);
}

/* Is the goald process that made the cgroup named name still alive?  The
 * name is goald-PID-COUNTER-TIME (make_dir): a live pid that started after
 * TIME is another process that reuses it. */
static int owner_alive(const char *name)
{
    long pid;
    long long made, started;
    unsigned counter;

    if (sscanf(name, "goald-%ld-%u-%lld", &pid, &counter, &made) != 3 || pid <= 0)
        return 1; /* not one of ours: leave it */
    if (pid == (long)getpid())
        return 1;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    started = proc_start(pid);
    if (started < 0)
        return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
    return started <= made + 2; /* btime is rounded: a little slack */
}

/* Kill what is left in dir, then remove it (a short wait for the dying). */
static int remove_dir(const char *dir)
{
    struct sandbox_cgroup cg;
    struct timespec ts = {0, 10 * 1000 * 1000};

    memset(&cg, 0, sizeof(cg));
    cg.active = 1;
    if ((size_t)snprintf(cg.procs, sizeof(cg.procs), "%s/cgroup.procs", dir) >= sizeof(cg.procs))
        return -1;
    for (int i = 0; i < 50; i++) {
        sandbox_cgroup_signal(&cg, SIGKILL);
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        nanosleep(&ts, NULL);
    }
    return -1;
}

static int sweep_base(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char dir[sizeof(((struct sandbox_cgroup *)0)->dir)];
        if (strncmp(e->d_name, "goald-", 6) || owner_alive(e->d_name))
            continue;
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name) >= sizeof(dir))
            continue;
        if (remove_dir(dir) == 0)
            n++;
    }
    closedir(d);
    return n;
}

int sandbox_cgroup_sweep(void)
{
    static const char *const controllers[] = {"pids", "memory"};
    char base[400], done[2][400] = {"", ""};
    int n = 0;

    for (size_t i = 0; i < 2; i++) {
        if (find_base(controllers[i], base, sizeof(base)) == 0)
            continue;
        if (i == 1 && !strcmp(base, done[0]))
            continue; /* cgroup v2: one folder holds both */
        if (path_fmt(done[i], sizeof(done[i]), "%s", base) != 0)
            continue;
        n += sweep_base(base);
    }
    return n;
}
