#include "util/filelock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define POLL_MS 50

int filelock_take(int *fd, const char *path, int64_t wait_ms, void (*tick)(void *), void *ctx)
{
    struct timespec nap = {0, POLL_MS * 1000 * 1000};
    char dir[4096];
    int64_t start = time_mono_ms(), last_tick = start;
    int f, rc;

    *fd = -1;
    if ((rc = fs_dirname(dir, sizeof(dir), path)) != 0 || (rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (f < 0)
        return err_set(ERR_IO, "lock %s: %s", path, strerror(errno));
    while (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int64_t now = time_mono_ms();
        if (errno != EWOULDBLOCK && errno != EINTR) {
            rc = err_set(ERR_IO, "lock %s: %s", path, strerror(errno));
            close(f);
            return rc;
        }
        if (now - start >= wait_ms) {
            close(f);
            return err_set(ERR_BUSY, "lock %s: still held by another process after %lld s", path,
                           (long long)(wait_ms / 1000));
        }
        if (tick && now - last_tick >= 1000) {
            tick(ctx);
            last_tick = now;
        }
        nanosleep(&nap, NULL);
    }
    *fd = f;
    return 0;
}

void filelock_release(int fd)
{
    if (fd >= 0)
        close(fd); /* the lock goes with the descriptor */
}
