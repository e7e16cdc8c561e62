/*
 * push.h - pushing a goal's branch, and a commit to a ref (clone mode's
 * refs/goald/<goal-id>, vcs/clone.h) (libgit2, no git CLI).
 *
 * Authentication, asked for by the remote through libgit2's credential
 * callback:
 *   - file:// URLs and local paths: none.
 *   - ssh (ssh://, user@host:path): the running ssh-agent
 *     ($SSH_AUTH_SOCK), user from the URL, else "git".
 *   - https/http: user name from the URL, else vcs.push_username; the
 *     password is the token in the environment variable NAMED by
 *     vcs.push_token_env (unset: forge.token_env).  The token is read when
 *     asked for and never stored, logged nor put in a message.
 * A credential the remote rejects is not offered twice: the push fails
 * with the remote's name and libgit2's message.
 */
#ifndef GOALD_VCS_PUSH_H
#define GOALD_VCS_PUSH_H

#include <stddef.h>

/* Push refs/heads/<branch> of the repository (or worktree) at repo_path
 * to the same name on remote.  remote is the name of a configured remote
 * ("origin"), or a URL or path (used anonymously).  Pushing a branch the
 * remote already has at the same commit succeeds and changes nothing; a
 * non-fast-forward is refused (no force).  Errors: ERR_NOTFOUND (no such
 * remote or branch), ERR_FAIL with "push to REMOTE: ..." otherwise. */
int vcs_push(const char *repo_path, const char *remote, const char *branch);

/* Point ref (a full name under refs/, e.g. "refs/goald/<goal-id>") of the
 * repository at repo_path at commit sha, then push it to the same name on
 * remote (as for vcs_push()).  force 1 replaces whatever the remote's ref
 * holds (a "+" refspec); 0 refuses a non-fast-forward.  Errors:
 * ERR_INVALID (bad arguments), ERR_NOTFOUND (no such commit or remote),
 * ERR_FAIL "push to REMOTE: ..." (the remote refused or failed). */
int vcs_push_commit(const char *repo_path, const char *remote, const char *sha, const char *ref,
                    int force);

/* The (push) URL of the named remote of the repository at repo_path into
 * out.  ERR_NOTFOUND when there is no such remote. */
int vcs_remote_url(char *out, size_t n, const char *repo_path, const char *remote);

#endif
