/*
 * filelock.h - an exclusive lock between processes on a file of goald's
 * own (flock()): freed by filelock_release() and by the kernel when the
 * process dies, so a killed holder never wedges the others.
 */
#ifndef GOALD_UTIL_FILELOCK_H
#define GOALD_UTIL_FILELOCK_H

#include <stdint.h>

/* Take the lock of path (created 0600 with its parent folders; never
 * through a link), waiting up to wait_ms; tick(ctx), when not NULL, is
 * called about every second while it waits (a job renews its lease
 * there).  0 with *fd set; ERR_BUSY when the wait ran out; ERR_IO. */
int filelock_take(int *fd, const char *path, int64_t wait_ms, void (*tick)(void *), void *ctx);

/* Release a lock filelock_take() gave (fd < 0: nothing). */
void filelock_release(int fd);

#endif
