#include "sandbox/sandbox.h"

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
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define INSTALL_HINT                                                                               \
    "install it with `apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`, "   \
    "or set GOALD_SANDBOX=none to run commands unconfined (not recommended)"

#define SANDBOX_HOME "/tmp/home"

/* A growable NULL-terminated vector of malloc'd strings. */
struct strv {
    char **v;
    size_t n, alloc;
};

static void strv_push(struct strv *sv, const char *s)
{
    if (sv->n + 2 > sv->alloc) {
        size_t na = sv->alloc ? sv->alloc * 2 : 64;
        sv->v = xrealloc(sv->v, na * sizeof(*sv->v));
        sv->alloc = na;
    }
    sv->v[sv->n] = xstrdup(s);
    sv->n++;
    sv->v[sv->n] = NULL;
}

static void strv_push2(struct strv *sv, const char *a, const char *b)
{
    strv_push(sv, a);
    strv_push(sv, b);
}

static void strv_push3(struct strv *sv, const char *a, const char *b, const char *c)
{
    strv_push(sv, a);
    strv_push(sv, b);
    strv_push(sv, c);
}

static void strv_free(struct strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    memset(sv, 0, sizeof(*sv));
}

int sandbox_unconfined(void)
{
    const char *m = config_str(CFG_SANDBOX_MODE);
    return m && !strcmp(m, "none");
}

/* Look name up in path_list (or take it as a path when it has a slash). */
static int find_exe(char *out, size_t n, const char *name, const char *path_list)
{
    char dir[4096];
    const char *p = path_list;

    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return -1;
        snprintf(out, n, "%s", name);
        return 0;
    }
    while (p && *p) {
        size_t len = strcspn(p, ":");
        if (len > 0 && len < sizeof(dir)) {
            memcpy(dir, p, len);
            dir[len] = '\0';
            if ((size_t)snprintf(out, n, "%s/%s", dir, name) < n && access(out, X_OK) == 0 &&
                !fs_is_dir(out))
                return 0;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return -1;
}

int sandbox_find_bwrap(char *out, size_t n)
{
    const char *b = config_str(CFG_SANDBOX_BWRAP);
    const char *path = getenv("PATH");

    if (!b || !*b)
        b = "bwrap";
    if (find_exe(out, n, b, path && *path ? path : "/usr/local/bin:/usr/bin:/bin") != 0)
        return err_set(ERR_POLICY, "bubblewrap (%s) not found: %s", b, INSTALL_HINT);
    return 0;
}

/* Append a read-only view of a system folder: a symlink stays a symlink
 * (merged /usr), a folder is bound read-only, a missing one is skipped. */
static void add_system(struct strv *a, const char *path)
{
    struct stat st;
    char target[PATH_MAX];

    if (lstat(path, &st) != 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        ssize_t k = readlink(path, target, sizeof(target) - 1);
        if (k <= 0)
            return;
        target[k] = '\0';
        strv_push3(a, "--symlink", target, path);
    } else if (S_ISDIR(st.st_mode)) {
        strv_push3(a, "--ro-bind", path, path);
    }
}

/* Secrets of /etc, replaced by an empty file. */
static void add_masks(struct strv *a)
{
    static const char *files[] = {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-",
                                  "/etc/security/opasswd"};
    struct stat st;
    glob_t g;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (lstat(files[i], &st) == 0 && S_ISREG(st.st_mode))
            strv_push3(a, "--ro-bind", "/dev/null", files[i]);
    if (glob("/etc/ssh/ssh_host_*", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            if (lstat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode))
                strv_push3(a, "--ro-bind", "/dev/null", g.gl_pathv[i]);
    }
    globfree(&g);
}

/* Whether dir is path or lies beneath it (both absolute, no "..", as
 * realpath gives them). */
static int beneath(const char *dir, const char *path)
{
    size_t n = strlen(dir);

    if (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Git metadata, from goald's records only (spec->git_common and
 * spec->git_dir, computed from the repository opened at submit): nothing
 * in the worktree is read to decide what gets bound, so a `.git` the model
 * rewrote ("gitdir: /") cannot widen the sandbox.
 *
 * - the common folder read-only (objects, refs, the worktree's admin
 *   folder beneath it), so `git log` and `git diff` work and nothing can be
 *   committed; its config (which may hold credentials) and the worktree's
 *   config.worktree are replaced by /dev/null (a device bind: git reads an
 *   empty config; a read-only bind of /dev/null on a nodev mount would make
 *   git refuse to start);
 * - WORKTREE/.git read-only when it is a regular file (the gitlink goald
 *   made; the lifecycle rebuilds a worktree whose gitlink was changed), so
 *   the model cannot replace it.  A link or anything else there is not
 *   bound: bubblewrap would follow a link.
 *
 * Without records (a folder that is not a goal's worktree) only a real
 * `.git` folder or file in the root is made read-only; a link is never
 * bound.  ERR_INVALID when the records are not absolute folders or the
 * admin folder is not beneath the common one. */
static int add_git(struct strv *a, const struct sandbox_spec *spec, struct sandbox_drop *drop)
{
    char dotgit[PATH_MAX], common[PATH_MAX], admin[PATH_MAX], cfg[PATH_MAX + 32];
    struct stat st;
    int has_dotgit;

    if ((size_t)snprintf(dotgit, sizeof(dotgit), "%s/.git", spec->root) >= sizeof(dotgit))
        return err_set(ERR_INVALID, "sandbox: %s: path too long", spec->root);
    has_dotgit = lstat(dotgit, &st) == 0;
    if (!spec->git_common && !spec->git_dir) {
        if (has_dotgit && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
            strv_push3(a, "--ro-bind",
                       sandbox_drop_stage(drop, dotgit,
                                          SANDBOX_STAGE_NOFOLLOW |
                                              (S_ISDIR(st.st_mode) ? SANDBOX_STAGE_DIR : 0)),
                       dotgit);
        return 0;
    }
    if (!spec->git_common || !spec->git_dir || spec->git_common[0] != '/' ||
        spec->git_dir[0] != '/' || !realpath(spec->git_common, common) ||
        !realpath(spec->git_dir, admin) || !fs_is_dir(common) || !fs_is_dir(admin))
        return err_set(ERR_INVALID,
                       "sandbox: git_common and git_dir: expected existing absolute "
                       "folders (%s, %s)",
                       spec->git_common ? spec->git_common : "(none)",
                       spec->git_dir ? spec->git_dir : "(none)");
    if (!beneath(common, admin))
        return err_set(ERR_INVALID, "sandbox: git folder %s is not beneath the common folder %s",
                       admin, common);
    strv_push3(a, "--ro-bind", sandbox_drop_stage(drop, common, SANDBOX_STAGE_DIR), common);
    snprintf(cfg, sizeof(cfg), "%s/config", common);
    if (lstat(cfg, &st) == 0 && S_ISREG(st.st_mode))
        strv_push3(a, "--dev-bind", "/dev/null", cfg);
    snprintf(cfg, sizeof(cfg), "%s/config.worktree", admin);
    if (lstat(cfg, &st) == 0 && S_ISREG(st.st_mode))
        strv_push3(a, "--dev-bind", "/dev/null", cfg);
    if (has_dotgit && lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode))
        strv_push3(a, "--ro-bind", sandbox_drop_stage(drop, dotgit, SANDBOX_STAGE_NOFOLLOW),
                   dotgit);
    return 0;
}

/* Extra read-only binds from sandbox.binds: "PATH" or {"src","dest"}. */
static int add_binds(struct strv *a, struct sandbox_drop *drop)
{
    const cJSON *binds = config_json(CFG_SANDBOX_BINDS);
    const cJSON *it;

    if (!binds)
        return 0;
    if (!cJSON_IsArray(binds))
        return err_set(ERR_INVALID, "sandbox.binds: expected a list");
    cJSON_ArrayForEach(it, binds)
    {
        const char *src = NULL, *dest = NULL;
        if (cJSON_IsString(it)) {
            src = dest = it->valuestring;
        } else if (cJSON_IsObject(it)) {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "src");
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, "dest");
            src = cJSON_IsString(s) ? s->valuestring : NULL;
            dest = cJSON_IsString(d) ? d->valuestring : src;
        }
        if (!src || !dest || src[0] != '/' || dest[0] != '/')
            return err_set(ERR_INVALID, "sandbox.binds: expected absolute paths, as \"/opt/x\" "
                                        "or {\"src\": \"/a\", \"dest\": \"/b\"}");
        if (!fs_exists(src))
            return err_set(ERR_INVALID, "sandbox.binds: %s: no such file or folder", src);
        strv_push3(a, "--ro-bind",
                   sandbox_drop_stage(drop, src, fs_is_dir(src) ? SANDBOX_STAGE_DIR : 0), dest);
    }
    return 0;
}

/* The environment of the command: PATH, HOME, LANG, TERM, TMPDIR, the
 * names listed in sandbox.env (when set in ours), then spec->env. */
static int build_env(struct strv *env, const struct sandbox_spec *spec, const char *home)
{
    const cJSON *allow = config_json(CFG_SANDBOX_ENV);
    const char *lang = getenv("LANG");
    const char *term = getenv("TERM");
    const cJSON *it;
    strbuf sb = STRBUF_INIT;
    int rc = 0;

    strbuf_init(&sb, 1 << 20);
    if ((rc = strbuf_addf(&sb, "PATH=%s", config_str(CFG_SANDBOX_PATH))) != 0)
        goto out;
    strv_push(env, strbuf_cstr(&sb));
    strbuf_reset(&sb);
    if ((rc = strbuf_addf(&sb, "HOME=%s", home)) != 0)
        goto out;
    strv_push(env, strbuf_cstr(&sb));
    strbuf_reset(&sb);
    if ((rc = strbuf_addf(&sb, "LANG=%s", lang && *lang ? lang : "C.UTF-8")) != 0)
        goto out;
    strv_push(env, strbuf_cstr(&sb));
    strbuf_reset(&sb);
    if ((rc = strbuf_addf(&sb, "TERM=%s", term && *term ? term : "dumb")) != 0)
        goto out;
    strv_push(env, strbuf_cstr(&sb));
    strv_push(env, "TMPDIR=/tmp");
    if (allow && !cJSON_IsArray(allow)) {
        rc = err_set(ERR_INVALID, "sandbox.env: expected a list of variable names");
        goto out;
    }
    cJSON_ArrayForEach(it, allow)
    {
        const char *v;
        if (!cJSON_IsString(it) || !it->valuestring[0] || strchr(it->valuestring, '=')) {
            rc = err_set(ERR_INVALID, "sandbox.env: expected a list of variable names");
            goto out;
        }
        if ((v = getenv(it->valuestring)) == NULL)
            continue;
        strbuf_reset(&sb);
        if ((rc = strbuf_addf(&sb, "%s=%s", it->valuestring, v)) != 0)
            goto out;
        strv_push(env, strbuf_cstr(&sb));
    }
    for (size_t i = 0; spec->env && spec->env[i]; i++) {
        if (!strchr(spec->env[i], '=')) {
            rc = err_set(ERR_INVALID, "sandbox: environment entry \"%s\" lacks '='", spec->env[i]);
            goto out;
        }
        strv_push(env, spec->env[i]);
    }
out:
    strbuf_release(&sb);
    return rc;
}

/* The bubblewrap argument vector (without the command). */
static int build_bwrap(struct strv *a, const struct sandbox_spec *spec, const char *bwrap,
                       const struct strv *env, struct sandbox_drop *drop)
{
    static const char *system[] = {"/usr",   "/bin",   "/sbin",   "/lib",
                                   "/lib32", "/lib64", "/libx32", "/etc"};
    char num[64];
    int rc;

    strv_push(a, bwrap);
    for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++)
        add_system(a, system[i]);
    if (config_bool(CFG_SANDBOX_OPT))
        add_system(a, "/opt");
    add_masks(a);
    strv_push2(a, "--proc", "/proc");
    strv_push2(a, "--dev", "/dev");
    snprintf(num, sizeof(num), "%lld", (long long)config_int(CFG_SANDBOX_TMP_MB) << 20);
    strv_push2(a, "--size", num);
    strv_push2(a, "--tmpfs", "/tmp");
    strv_push2(a, "--perms", "0700");
    strv_push2(a, "--dir", SANDBOX_HOME);
    if ((rc = add_binds(a, drop)) != 0)
        return rc;
    strv_push3(a, "--bind",
               sandbox_drop_stage(drop, spec->root_src ? spec->root_src : spec->root,
                                  SANDBOX_STAGE_DIR | SANDBOX_STAGE_NOFOLLOW),
               spec->root);
    if ((rc = add_git(a, spec, drop)) != 0)
        return rc;
    /* the root folder of the sandbox is a tmpfs without a size cap:
     * read-only, so that writes land only in the capped /tmp and the worktree */
    strv_push2(a, "--remount-ro", "/");
    strv_push2(a, "--chdir", spec->root);
    strv_push(a, "--unshare-user");
    strv_push(a, "--unshare-pid");
    strv_push(a, "--unshare-net");
    strv_push(a, "--unshare-ipc");
    strv_push(a, "--unshare-uts");
    strv_push(a, "--unshare-cgroup-try");
    strv_push(a, "--disable-userns");
    strv_push2(a, "--hostname", "goald-sandbox");
    strv_push(a, "--die-with-parent");
    strv_push(a, "--new-session");
    strv_push2(a, "--cap-drop", "ALL");
    /* No --clearenv/--setenv: arguments are world-readable (ps, /proc/PID/cmdline)
     * and sandbox.env may carry secrets.  bubblewrap is executed with envp =
     * exactly env, and passes its own environment on unchanged to the command. */
    (void)env;
    strv_push(a, "--");
    return 0;
}

static void add_command(struct strv *a, const struct sandbox_spec *spec)
{
    if (spec->command) {
        strv_push3(a, "bash", "-c", spec->command);
    } else {
        for (size_t i = 0; spec->argv[i]; i++)
            strv_push(a, spec->argv[i]);
    }
}

static int check_spec(const struct sandbox_spec *spec)
{
    if (!spec->root || spec->root[0] != '/')
        return err_set(ERR_INVALID, "sandbox: the root must be an absolute path");
    if (!fs_is_dir(spec->root))
        return err_set(ERR_INVALID, "sandbox: %s: not a folder", spec->root);
    if (spec->root_src && (spec->root_src[0] != '/' || !fs_is_dir(spec->root_src)))
        return err_set(ERR_INVALID, "sandbox: %s: not a folder", spec->root_src);
    if (!spec->command && (!spec->argv || !spec->argv[0]))
        return err_set(ERR_INVALID, "sandbox: nothing to run");
    if (!spec->direct) {
        const char *m = config_str(CFG_SANDBOX_MODE);
        if (!m || (strcmp(m, "bwrap") && strcmp(m, "none")))
            return err_set(ERR_INVALID,
                           "sandbox.mode (GOALD_SANDBOX): expected bwrap or none, "
                           "got \"%s\"",
                           m ? m : "");
    }
    return 0;
}

int sandbox_describe(const struct sandbox_spec *spec, char **out)
{
    struct strv env = {0}, a = {0};
    struct sandbox_drop drop;
    char bwrap[PATH_MAX];
    strbuf sb = STRBUF_INIT;
    int rc;

    if ((rc = check_spec(spec)) != 0)
        return rc;
    if ((rc = sandbox_find_bwrap(bwrap, sizeof(bwrap))) != 0)
        return rc;
    if ((rc = sandbox_drop_plan(&drop)) != 0)
        return rc;
    if ((rc = build_env(&env, spec, SANDBOX_HOME)) != 0)
        goto out;
    if ((rc = build_bwrap(&a, spec, bwrap, &env, &drop)) != 0)
        goto out;
    add_command(&a, spec);
    for (size_t i = 0; i < a.n; i++)
        if ((rc = strbuf_addf(&sb, "%s\n", a.v[i])) != 0)
            goto out;
    *out = strbuf_detach(&sb, NULL);
out:
    strbuf_release(&sb);
    strv_free(&a);
    strv_free(&env);
    sandbox_drop_release(&drop);
    return rc;
}

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

    snprintf(home, n, "%s/goald-home-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
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
    if ((rc = build_env(&r->env, r->spec, home)) != 0)
        return rc;
    add_command(&r->args, r->spec);
    if (find_exe(r->exe, sizeof(r->exe), r->args.v[0], config_str(CFG_SANDBOX_PATH)) != 0 &&
        find_exe(r->exe, sizeof(r->exe), r->args.v[0], getenv("PATH")) != 0)
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
    if (r->drop.active)
        snprintf(r->exe, sizeof(r->exe), "%s", real);
    if ((rc = build_env(&r->env, r->spec, SANDBOX_HOME)) != 0)
        return rc;
    if ((rc = build_bwrap(&r->args, r->spec, r->exe, &r->env, &r->drop)) != 0)
        return rc;
    add_command(&r->args, r->spec);
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
    strv_free(&r->args);
    strv_free(&r->env);
}

int sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res)
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
    if ((rc = check_spec(spec)) != 0)
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
            snprintf(detail, n, "%s runs `true` in %lld ms; pids cgroup: %s", bwrap,
                     (long long)res.duration_ms, res.pids_cgroup ? "yes" : "no");
        sandbox_result_release(&res);
    }
    rmdir(dir);
    return rc;
}
