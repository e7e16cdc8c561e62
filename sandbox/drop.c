/*
 * drop.c - sandboxed commands never run as root: the sandbox user, the
 * tree given to it, the staged binds (see drop.h).
 */
#include "sandbox/drop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/xalloc.h"

/* Folders deeper than this below the root are not given (each level holds
 * a descriptor); the sandbox user then cannot write there, nothing else. */
#define GIVE_MAX_DEPTH 256

/* Whether this process may make a mount namespace (CAP_SYS_ADMIN in its
 * effective set): root in a container often may not.  Then the binds are
 * not staged, and bubblewrap, as the sandbox user, must reach them itself. */
static int can_stage(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];

    if (syscall(SYS_capget, &h, data) != 0)
        return 0;
    return (data[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

int sandbox_drop_plan(struct sandbox_drop *d)
{
    int64_t uid = config_int(CFG_SANDBOX_UID), gid = config_int(CFG_SANDBOX_GID);

    memset(d, 0, sizeof(*d));
    if (geteuid() != 0)
        return 0;
    /* the table's bounds refuse 0 already; a build without them must too */
    if (uid <= 0 || gid <= 0 || uid >= (int64_t)(uid_t)-1 || gid >= (int64_t)(gid_t)-1)
        return err_set(ERR_INVALID,
                       "sandbox.uid and sandbox.gid: expected an unprivileged user and group "
                       "(not 0), got %lld and %lld",
                       (long long)uid, (long long)gid);
    d->active = 1;
    d->stage = can_stage();
    d->uid = (uid_t)uid;
    d->gid = (gid_t)gid;
    return 0;
}

const char *sandbox_drop_stage(struct sandbox_drop *d, const char *src, int flags)
{
    char at[64];

    if (!d || !d->active || !d->stage)
        return src;
    if (d->n == d->alloc) {
        d->alloc = d->alloc ? d->alloc * 2 : 8;
        d->src = xrealloc(d->src, d->alloc * sizeof(*d->src));
        d->at = xrealloc(d->at, d->alloc * sizeof(*d->at));
        d->flags = xrealloc(d->flags, d->alloc);
    }
    /* truncation: ok, the stage and a size_t always fit 64 bytes */
    snprintf(at, sizeof(at), SANDBOX_STAGE "/%zu", d->n);
    d->src[d->n] = xstrdup(src);
    d->at[d->n] = xstrdup(at);
    d->flags[d->n] = (unsigned char)flags;
    return d->at[d->n++];
}

void sandbox_drop_release(struct sandbox_drop *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->src[i]);
        free(d->at[i]);
    }
    free(d->src);
    free(d->at);
    free(d->flags);
    memset(d, 0, sizeof(*d));
}

/* --- the tree given to the sandbox user ------------------------------------ */

struct give {
    uid_t me, uid;
    gid_t gid;
    dev_t dev;
    int failed; /* entries that could not be given */
    int deep;   /* folders left out below GIVE_MAX_DEPTH */
};

/* One regular file or folder named name in the open folder dfd: opened
 * without following a link (O_PATH), checked again through its descriptor
 * (type, owner, file system, a single link for a file) and given. */
static void give_one(struct give *g, int dfd, const char *name, int is_dir)
{
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
    struct stat st;

    if (fd < 0)
        return; /* gone, or a link now */
    if (fstat(fd, &st) == 0 && st.st_uid == g->me && st.st_dev == g->dev &&
        (is_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) && st.st_nlink == 1) &&
        fchownat(fd, "", g->uid, g->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
        g->failed++;
    close(fd);
}

/* Give what is in the open folder fd (taken over), and below it. */
static void give_dir(struct give *g, int fd, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;

    if (!d) {
        close(fd);
        g->failed++;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        struct stat st;
        int sub;

        if (!strcmp(name, ".") || !strcmp(name, "..") || (depth == 0 && !strcmp(name, ".git")))
            continue;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != g->dev)
            continue;
        if (S_ISREG(st.st_mode)) {
            if (st.st_uid == g->me)
                give_one(g, dirfd(d), name, 0);
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue; /* links stay as they are, and are never followed */
        if (st.st_uid == g->me)
            give_one(g, dirfd(d), name, 1);
        if (depth + 1 >= GIVE_MAX_DEPTH) {
            g->deep++;
            continue;
        }
        sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
            give_dir(g, sub, depth + 1);
    }
    closedir(d);
}

/* Whether path is a folder whose files must never change owners: "/",
 * the shared top-level folders (/home, /tmp, /var, ...), or one beneath
 * the system's own folders.  A worktree lies deeper, in goald's folders. */
static int system_folder(const char *path)
{
    static const char *const tops[] = {"/home", "/root", "/tmp",   "/var", "/opt",
                                       "/srv",  "/mnt",  "/media", "/snap"};
    static const char *const sys[] = {"/usr",   "/etc",   "/bin",    "/sbin", "/lib",
                                      "/lib32", "/lib64", "/libx32", "/boot", "/dev",
                                      "/proc",  "/sys",   "/run"};
    char real[PATH_MAX];

    if (!realpath(path, real))
        return 0; /* the open that follows says why */
    if (!strcmp(real, "/"))
        return 1;
    for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
        if (!strcmp(real, tops[i]))
            return 1;
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
        size_t n = strlen(sys[i]);
        if (!strncmp(real, sys[i], n) && (real[n] == '/' || !real[n]))
            return 1;
    }
    return 0;
}

int sandbox_drop_give(const char *root, uid_t uid, gid_t gid)
{
    struct give g = {.me = geteuid(), .uid = uid, .gid = gid};
    struct stat st;
    int fd;

    if (system_folder(root))
        return err_set(ERR_POLICY,
                       "sandbox: %s: as root, commands run as uid %u and the folder they write "
                       "is given to it; refused for /, /home, /tmp, /var and the like, and "
                       "the system's folders",
                       root, (unsigned)uid);
    fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int rc = err_set(ERR_IO, "sandbox: %s: cannot open: %s", root, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    g.dev = st.st_dev;
    /* the top folder stays ours (libgit2 checks its owner); the sandbox
     * group may write it */
    if (st.st_uid == g.me &&
        ((st.st_gid != gid && fchown(fd, (uid_t)-1, gid) != 0) ||
         ((st.st_mode & 0070) != 0070 && fchmod(fd, (st.st_mode & 07777) | 0070) != 0))) {
        int rc = err_set(ERR_IO, "sandbox: %s: cannot give it to the sandbox group %u: %s", root,
                         (unsigned)gid, strerror(errno));
        close(fd);
        return rc;
    }
    give_dir(&g, fd, 0);
    if (g.failed)
        log_warn("sandbox: %s: %d entries could not be given to the sandbox user %u", root,
                 g.failed, (unsigned)uid);
    if (g.deep)
        log_warn("sandbox: %s: %d folders deeper than %d levels were not given to the sandbox "
                 "user %u",
                 root, g.deep, GIVE_MAX_DEPTH, (unsigned)uid);
    return 0;
}

int sandbox_drop_prepare(const struct sandbox_drop *d, const char *root)
{
    struct stat st;

    if (!d->active)
        return 0;
    if (mkdir(SANDBOX_STAGE, 0755) != 0 && errno != EEXIST)
        return err_set(ERR_IO, "sandbox: %s: %s", SANDBOX_STAGE, strerror(errno));
    /* /tmp is everyone's: a folder someone else made there is not used */
    if (lstat(SANDBOX_STAGE, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & 022))
        return err_set(ERR_POLICY,
                       "sandbox: %s: expected a folder of root's that only root may write; "
                       "remove it",
                       SANDBOX_STAGE);
    return sandbox_drop_give(root, d->uid, d->gid);
}

/* --- the child ---------------------------------------------------------- */

/* "goald: sandbox: WHAT PATH: errno N" on fd 2, with write(2) only. */
static int child_fail(const char *what, const char *path)
{
    char num[16];
    int e = errno, k = (int)sizeof(num);
    const char *parts[] = {
        "goald: sandbox: ", what, path ? " " : "", path ? path : "", ": errno ", NULL, "\n"};

    num[--k] = '\0';
    do {
        num[--k] = (char)('0' + e % 10);
        e /= 10;
    } while (e && k > 0);
    parts[5] = num + k;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        ssize_t w = write(2, parts[i], strlen(parts[i]));
        (void)w;
    }
    return -1;
}

/* Bind d's source i at its stage path: opened first (without following a
 * link when the worktree shaped it), its type checked, then bound through
 * the descriptor, so what is bound is what was checked. */
static int child_stage(const struct sandbox_drop *d, size_t i)
{
    int dir = d->flags[i] & SANDBOX_STAGE_DIR;
    int oflags = O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0) |
                 (d->flags[i] & SANDBOX_STAGE_NOFOLLOW ? O_NOFOLLOW : 0);
    char proc[48] = "/proc/self/fd/";
    char num[16];
    int fd, k = (int)sizeof(num), mp;
    struct stat st;

    if ((fd = open(d->src[i], oflags)) < 0)
        return child_fail("cannot open", d->src[i]);
    if (fstat(fd, &st) != 0 || (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
        errno = EINVAL;
        return child_fail("not what was checked", d->src[i]);
    }
    if (dir) {
        if (mkdir(d->at[i], 0755) != 0)
            return child_fail("cannot create", d->at[i]);
    } else {
        if ((mp = open(d->at[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444)) < 0)
            return child_fail("cannot create", d->at[i]);
        close(mp);
    }
    num[--k] = '\0';
    for (int v = fd; k > 0;) {
        num[--k] = (char)('0' + v % 10);
        if ((v /= 10) == 0)
            break;
    }
    memcpy(proc + strlen(proc), num + k, sizeof(num) - (size_t)k);
    if (mount(proc, d->at[i], NULL, MS_BIND | MS_REC, NULL) != 0)
        return child_fail("cannot bind", d->src[i]);
    close(fd);
    return 0;
}

int sandbox_drop_child(const struct sandbox_drop *d)
{
    if (!d || !d->active)
        return 0;
    if (d->n > 0) {
        if (unshare(CLONE_NEWNS) != 0)
            return child_fail("cannot make a mount namespace", NULL);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            return child_fail("cannot make the mounts private", NULL);
        if (mount("tmpfs", SANDBOX_STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0755,size=64k") != 0)
            return child_fail("cannot mount a tmpfs on", SANDBOX_STAGE);
        for (size_t i = 0; i < d->n; i++)
            if (child_stage(d, i) != 0)
                return -1;
    }
    if (setgroups(0, NULL) != 0)
        return child_fail("setgroups", NULL);
    if (setresgid(d->gid, d->gid, d->gid) != 0)
        return child_fail("setresgid", NULL);
    if (setresuid(d->uid, d->uid, d->uid) != 0)
        return child_fail("setresuid", NULL);
    return 0;
}
