/*
 * clone.h - a node's own clone of a goal's repository (clone mode,
 * docs/scaling.md "Code state: repositories every node can reach").
 *
 * A goal whose repo is a git URL or a bare repository is in clone mode:
 * no node works in it directly.  Each node keeps one clone of it in its
 * own folder, <node dir>/repos/<first 16 hex of sha256(repo)> (the name
 * never comes from the URL's text), a repository without a checkout whose
 * remote "origin" is the goal's repo; the goal's worktree is a linked
 * worktree of that clone.  Before a run the node fetches the base branch
 * (into the clone's branch of the same name: the clone is goald's, its
 * base branches mirror the remote's) and refs/goald/<goal-id>; after an
 * item's commit it pushes that commit to refs/goald/<goal-id>
 * (vcs_push_commit()).  What the remote holds is never trusted to be the
 * goal's head: the caller starts from the head its database records.
 */
#ifndef GOALD_VCS_CLONE_H
#define GOALD_VCS_CLONE_H

#include <stddef.h>

/* 1 when repo is a git URL: scheme://rest (scheme: a letter, then
 * letters, digits, '+', '-', '.'), or scp-like user@host:path (no '/'
 * before the ':'); no spaces nor control characters, no leading '-'.
 * Syntax only. */
int vcs_repo_is_url(const char *repo);

/* 1 when a goal on repo works in clone mode: repo is a URL
 * (vcs_repo_is_url) or the path of a bare repository.  A path that is
 * not a repository is not (the worktree mode then says what is wrong). */
int vcs_repo_is_shared(const char *repo);

/* The node's clone folder of repo: "<dir>/repos/<first 16 hex of the
 * SHA-256 of repo, as given>".  0 or ERR_INVALID (too long). */
int vcs_clone_path(char *out, size_t n, const char *dir, const char *repo);

/* Call fn with the folder of each of the node's clones under
 * "<dir>/repos" (vcs_clone_path()'s names; links and anything else there
 * are left out) until it returns non-zero (returned).  No such folder:
 * 0. */
int vcs_clones_each(const char *dir, int (*fn)(const char *clone, void *ctx), void *ctx);

/* Make sure the clone at path exists (made when absent: a repository
 * without a checkout, remote "origin" = url, built beside path and renamed
 * into place, so a killed process never leaves a half-made one; a folder
 * there that is not such a repository is removed without following links
 * and made again), then fetch from origin refs/heads/<base_branch> and,
 * when the remote has it, ref, each into the same name in the clone
 * (forced: the remote decides what they hold, the caller
 * decides what to trust).  Runs under an exclusive lock of "<path>.lock",
 * so jobs of one node on one repository take turns.  Errors: ERR_INVALID
 * (bad names), ERR_NOTFOUND (the remote has no base_branch), ERR_FAIL
 * "fetch from URL: ..." (unreachable, refused, credentials). */
int vcs_clone_fetch(const char *path, const char *url, const char *base_branch, const char *ref);

/* Point refs/heads/<branch> of the repository at repo_path at commit sha,
 * whatever it held (forced; the branch may be checked out in a worktree,
 * whose files the caller then resets).  ERR_NOTFOUND when the repository
 * has no such commit. */
int vcs_branch_set(const char *repo_path, const char *branch, const char *sha);

#endif
