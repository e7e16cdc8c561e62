/*
 * fsutil.h - small file-system helpers.
 */
#ifndef GOALD_UTIL_FSUTIL_H
#define GOALD_UTIL_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "util/strbuf.h"

/* mkdir -p with mode for each created component.  0 or ERR_IO. */
int fs_mkdir_p(const char *path, mode_t mode);

/* Append the whole file (at most cap bytes, else ERR_TOOBIG) to out. */
int fs_read_file(strbuf *out, const char *path, size_t cap);

/* Write data to path atomically: a temp file in the same folder, fsync,
 * rename.  On failure the old file is untouched and the temp removed. */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* The same for name in the open folder dfd (the tools' path policy opens
 * folders beneath the worktree and writes through their fds): the temp
 * file is created in dfd with O_EXCL | O_NOFOLLOW and renamed over name,
 * which replaces a symlink found there instead of following it. */
int fs_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

/* The same, with the content written by fill(arg, fd, label) into the
 * temporary file (streamed: no buffer of the whole file needed); a
 * non-zero return from fill leaves the old file as it was. */
typedef int (*fs_fill_fn)(void *arg, int fd, const char *label);
int fs_write_atomic_fill_at(int dfd, const char *name, fs_fill_fn fill, void *arg, mode_t mode);

/* write(2) all of data to fd (EINTR retried); ERR_IO naming label. */
int fs_write_all(int fd, const void *data, size_t len, const char *label);

/* Remove a tree (like rm -rf) without ever following a symbolic link:
 * folders are opened relative to their parent with O_NOFOLLOW, a link is
 * removed as a link and what it names is never entered nor touched.  A
 * path that is itself a link is refused (ERR_INVALID); a file is removed;
 * a missing path is fine.  0, ERR_INVALID or ERR_IO. */
int fs_remove_tree(const char *path);

int fs_is_dir(const char *path);
int fs_exists(const char *path);

/* The folder part of path into out ("." when none).  0 or ERR_TOOBIG. */
int fs_dirname(char *out, size_t n, const char *path);

#endif
