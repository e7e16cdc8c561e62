/*
 * lock.c - worktree operations on one repository take turns, across
 * processes (vcs/internal.h: vcs_wt_lock).
 *
 * The lock is an flock() on a file of goald's own, in the folder ".locks"
 * of the worktree root, named by a hash of the repository's common git
 * folder: never in the repository's git folders, which the sandbox binds
 * read-only (a command of the model could flock a file there and stall
 * every job of the repository), nor in a worktree.  A killed process
 * loses its lock with its descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/path.h"
#include "vcs/internal.h"
#include "vcs/worktree.h"

/* How long a worktree operation waits for another process's (ms). */
#define WT_LOCK_WAIT_MS 60000

void (*vcs_test_pause)(const char *point);

int vcs_wt_lock(git_repository *main)
{
    char common[PATH_MAX], root[PATH_MAX], dir[PATH_MAX + 8], lock[PATH_MAX + 32];
    char hex[HASH_HEX_SIZE];
    struct timespec tick = {0, 20 * 1000 * 1000};
    struct stat sb;
    int fd, rc;

    if (!realpath(git_repository_commondir(main), common))
        return err_set(ERR_IO, "%s: %s", git_repository_commondir(main), strerror(errno));
    if ((rc = vcs_worktree_root(root, sizeof(root))) != 0)
        return rc;
    if ((rc = path_fmt(dir, sizeof(dir), "%s/.locks", root)) != 0)
        return err_wrap(rc, "the worktree locks' folder");
    if ((rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    hash_sha256_hex(hex, common, strlen(common));
    if ((rc = path_fmt(lock, sizeof(lock), "%s/%.16s.lock", dir, hex)) != 0)
        return err_wrap(rc, "a worktree lock");
    /* O_NONBLOCK: a FIFO planted there never blocks the open */
    fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(ERR_IO, "%s: %s", lock, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return err_set(ERR_INVALID, "%s: not a lock file goald made", lock);
    }
    /* the operations take a second or so; a process that holds the lock
     * for a minute is stopped (a dead one has lost it): give up rather
     * than hang a daemon's tick behind it */
    for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; waited += 20) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            rc = err_set(ERR_IO, "%s: lock: %s", lock, strerror(errno));
            close(fd);
            return rc;
        }
        if (waited >= WT_LOCK_WAIT_MS) {
            close(fd);
            return err_set(ERR_BUSY, "%s: the worktrees of %s stay locked by another process", lock,
                           common);
        }
        nanosleep(&tick, NULL);
    }
    return fd;
}

void vcs_wt_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* the lock goes with the descriptor */
}

int vcs_lock_clear_stale(const char *common, const char *lock)
{
    char dir[PATH_MAX], rdir[PATH_MAX];
    size_t n = strlen(common);
    struct stat sb;

    if (lstat(lock, &sb) != 0)
        return 0;
    if (fs_dirname(dir, sizeof(dir), lock) != 0 || !realpath(dir, rdir) ||
        strncmp(rdir, common, n) != 0 || (rdir[n] != '\0' && rdir[n] != '/') ||
        !S_ISREG(sb.st_mode))
        return err_set(ERR_INVALID, "%s: not a lock file goald can clear", lock);
    if (unlink(lock) != 0 && errno != ENOENT)
        return err_set(ERR_IO, "%s: %s", lock, strerror(errno));
    return 0;
}
