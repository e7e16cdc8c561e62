/*
 * path.h - the path policy: every tool path stays beneath the worktree.
 *
 * A path from a model is first normalised lexically (path_rel): relative
 * to the root, or absolute and beneath it; a ".." component is refused.
 * Files are then opened beneath an fd of the root with openat2(2)
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so a symlink that leads out of
 * the root is refused by the kernel, and every later operation is done on
 * the fds obtained (a symlink swapped in after the check cannot redirect
 * it).  Where the kernel lacks openat2 (ENOSYS) an O_NOFOLLOW walk, one
 * component at a time, is used instead; it refuses every symlink.
 *
 * Git metadata is not the tools' business: a path with a component equal
 * to ".git" in any case (".GIT", "sub/.git/config") is refused by
 * path_rel, and path_open / path_follow refuse what resolves into one
 * through a symlink (x -> .git).
 *
 * Refusals are ERR_POLICY with a message naming the path; a missing file
 * is ERR_NOTFOUND; other failures ERR_IO.  Returned fds are O_CLOEXEC and
 * owned by the caller (close(2)).
 */
#ifndef GOALD_SANDBOX_PATH_H
#define GOALD_SANDBOX_PATH_H

#include <stddef.h>
#include <sys/types.h>

/* Normalise path (relative to root, or absolute) into rel: no "." or
 * empty components, no trailing slash, "." for the root itself. */
int path_rel(char *rel, size_t n, const char *root, const char *path);

/* 1 when p (a relative path) has a component equal to ".git", any case. */
int path_has_git(const char *p);

/* 1 when the glob (a goal's protected_paths entry) covers rel: fnmatch
 * without FNM_PATHNAME ('*' crosses '/'), and a glob naming a folder
 * ("tests" or "tests/") covers everything under it. */
int path_glob_covers(const char *glob, const char *rel);

/* Open the root folder (O_RDONLY | O_DIRECTORY). */
int path_open_root(int *out, const char *root);

/* Open rel beneath root_fd with open(2) flags and mode (O_CLOEXEC added).
 * A final symlink is followed only while it stays beneath the root
 * (O_NOFOLLOW in flags refuses it). */
int path_open(int *out, int root_fd, const char *rel, int flags, mode_t mode);

/* Open the folder that holds rel (O_RDONLY | O_DIRECTORY) beneath root_fd,
 * creating missing folders (mode 0755) when mkdirs; the last component
 * goes into leaf.  rel must not be ".". */
int path_open_parent(int *dir_out, char *leaf, size_t n, int root_fd, const char *rel, int mkdirs);

/* When rel names a symlink, the path (relative to the root) it leads to,
 * after checking that it stays beneath the root; else rel itself.  Into
 * out.  A symlink to a missing file is refused (ERR_POLICY). */
int path_follow(char *out, size_t n, int root_fd, const char *rel);

/* Test hook: force the O_NOFOLLOW walk (1) or back to openat2 (0). */
void path_force_fallback(int on);

/* 1 when openat2 is in use (not forced off, and the kernel has it). */
int path_have_openat2(void);

#endif
