/*
 * bwrap.c - bubblewrap's argument vector and the command's environment.
 *
 * Top to bottom: finding bubblewrap; the system folders bound read-only
 * (a symbolic link kept as one), the masks over what must stay hidden,
 * the configured binds, the worktree bound read-write and its git folders
 * read-only; the environment the command gets (never bubblewrap's
 * arguments: they are world-readable); the namespaces (user, pid, net,
 * ipc, uts, cgroup), capabilities dropped; and sandbox_describe(), the
 * vector as text.  As root, the sources are staged by drop.c.
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

#define INSTALL_HINT                                                                               \
    "install it with `apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`, "   \
    "or set GOALD_SANDBOX=none to run commands unconfined (not recommended)"

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

void sandbox_strv_free(struct strv *sv)
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
int sandbox_find_exe(char *out, size_t n, const char *name, const char *path_list)
{
    char dir[4096];
    const char *p = path_list;

    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return -1;
        return path_fmt(out, n, "%s", name);
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
    if (sandbox_find_exe(out, n, b, path && *path ? path : "/usr/local/bin:/usr/bin:/bin") != 0)
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
    if (path_fmt(cfg, sizeof(cfg), "%s/config", common) != 0)
        return err_wrap(ERR_INVALID, "sandbox: the git config");
    if (lstat(cfg, &st) == 0 && S_ISREG(st.st_mode))
        strv_push3(a, "--dev-bind", "/dev/null", cfg);
    if (path_fmt(cfg, sizeof(cfg), "%s/config.worktree", admin) != 0)
        return err_wrap(ERR_INVALID, "sandbox: the worktree's git config");
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
int sandbox_build_env(struct strv *env, const struct sandbox_spec *spec, const char *home)
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
int sandbox_build_bwrap(struct strv *a, const struct sandbox_spec *spec, const char *bwrap,
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
    /* truncation: ok, 64 bytes hold any long long */
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

void sandbox_add_command(struct strv *a, const struct sandbox_spec *spec)
{
    if (spec->command) {
        strv_push3(a, "bash", "-c", spec->command);
    } else {
        for (size_t i = 0; spec->argv[i]; i++)
            strv_push(a, spec->argv[i]);
    }
}

int sandbox_check_spec(const struct sandbox_spec *spec)
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

    if ((rc = sandbox_check_spec(spec)) != 0)
        return rc;
    if ((rc = sandbox_find_bwrap(bwrap, sizeof(bwrap))) != 0)
        return rc;
    if ((rc = sandbox_drop_plan(&drop)) != 0)
        return rc;
    if ((rc = sandbox_build_env(&env, spec, SANDBOX_HOME)) != 0)
        goto out;
    if ((rc = sandbox_build_bwrap(&a, spec, bwrap, &env, &drop)) != 0)
        goto out;
    sandbox_add_command(&a, spec);
    for (size_t i = 0; i < a.n; i++)
        if ((rc = strbuf_addf(&sb, "%s\n", a.v[i])) != 0)
            goto out;
    *out = strbuf_detach(&sb, NULL);
out:
    strbuf_release(&sb);
    sandbox_strv_free(&a);
    sandbox_strv_free(&env);
    sandbox_drop_release(&drop);
    return rc;
}
