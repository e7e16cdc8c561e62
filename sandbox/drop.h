/*
 * drop.h - sandboxed commands never run as root (internal to sandbox/).
 *
 * bubblewrap's user namespace maps the command's uid to the uid that
 * started bubblewrap; when goald runs as root that is host root, and a
 * file only root may read (a 0600 key under /etc) would be readable
 * inside.  So when goald's effective uid is 0, the child that execs
 * bubblewrap first gives up root for sandbox.uid / sandbox.gid (default
 * 65534, nobody; 0 is refused).  What that needs, in order:
 *
 * - the folder the command writes (the worktree, or a gate's copy) is
 *   given to that user before each command (sandbox_drop_give()): every
 *   folder and regular file beneath it that goald's user owns becomes the
 *   sandbox user's; the top folder stays goald's (libgit2 opens a worktree
 *   only when its folder, `.git` and git folder are the opening user's)
 *   with the sandbox group and group rwx added; `.git` in it is left alone;
 * - the sources bubblewrap binds (the worktree, the git folders,
 *   sandbox.binds) may lie in folders that user cannot enter (/root, a
 *   0700 state folder): the child, still root, makes a private mount
 *   namespace, mounts a tmpfs on a stage folder (/tmp/goald-stage, a root
 *   folder) and binds each source there, opened without following a link
 *   where the worktree shaped it; bubblewrap is given the staged paths.
 *   Nothing of this is visible outside the child.  Without CAP_SYS_ADMIN
 *   (root in many containers) nothing is staged: bubblewrap must reach the
 *   sources as the sandbox user, or it fails and says which.
 *
 * Without root (the usual case) none of this happens.
 */
#ifndef GOALD_SANDBOX_DROP_H
#define GOALD_SANDBOX_DROP_H

#include <stddef.h>
#include <sys/types.h>

#define SANDBOX_STAGE "/tmp/goald-stage"

/* What the child does before exec: set up by sandbox_drop_plan(), the
 * sources by sandbox_drop_stage(); freed with sandbox_drop_release(). */
struct sandbox_drop {
    int active; /* goald is root: the command runs as uid/gid */
    int stage;  /* binds are staged (CAP_SYS_ADMIN: a mount namespace can be made) */
    uid_t uid;
    gid_t gid;
    size_t n, alloc;
    char **src;           /* what to bind, as goald knows it */
    char **at;            /* where, beneath SANDBOX_STAGE */
    unsigned char *flags; /* SANDBOX_STAGE_* */
};

#define SANDBOX_STAGE_DIR 1      /* a folder (else a regular file) */
#define SANDBOX_STAGE_NOFOLLOW 2 /* the last component may not be a link */

/* Decide whether commands drop root (geteuid() == 0) and to whom
 * (sandbox.uid, sandbox.gid).  0, or ERR_INVALID when a setting is 0. */
int sandbox_drop_plan(struct sandbox_drop *d);

/* The path bubblewrap is to bind for src: src itself when d is not
 * active, else a staged path (owned by d).  type: SANDBOX_STAGE_* flags. */
const char *sandbox_drop_stage(struct sandbox_drop *d, const char *src, int flags);

/* Before a command, as root: the stage folder exists and is root's (a
 * folder, not a link, writable only by root), and the folder root is
 * given to d->uid as described above.  0, or ERR_IO / ERR_POLICY with the
 * reason. */
int sandbox_drop_prepare(const struct sandbox_drop *d, const char *root);

/* Give the tree at root to uid/gid (see above).  Never follows a link,
 * never leaves root's file system, skips `.git` at its top, files with
 * more than one link, and what goald's user does not own.  0, ERR_IO, or
 * ERR_POLICY for "/", a shared top-level folder (/home, /tmp, /var, ...)
 * or one beneath the system's folders (/usr, /etc, ...). */
int sandbox_drop_give(const char *root, uid_t uid, gid_t gid);

/* In the forked child, before exec (async-signal-safe): the private mount
 * namespace with the staged binds, then setgroups, setresgid, setresuid.
 * 0, or -1 with a message already written to fd 2. */
int sandbox_drop_child(const struct sandbox_drop *d);

void sandbox_drop_release(struct sandbox_drop *d);

#endif
