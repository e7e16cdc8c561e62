/*
 * lock.c - one daemon per database: the instance lock, the files of a
 * node (beside the SQLite database, or in the node's state folder), and
 * the wake socket a submit or a resolve pokes.
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
#include "store/store.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

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
            snprintf(who, sizeof(who), "%ld", pid); /* truncation: ok, a number fits */
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
