/*
 * forge.h - pull requests through a forge's REST API, and webhooks
 * (libcurl).
 *
 * The API is GitHub's shape, which GitHub Enterprise (base
 * https://HOST/api/v3), Gitea and Forgejo (base https://HOST/api/v1, told
 * by that suffix) also serve:
 *   GET  {base}/repos/{owner}/{repo}/pulls?state=open&head={owner}:{branch}
 *        &base={base}&per_page=100&page=N          (GitHub)
 *   GET  {base}/repos/{owner}/{repo}/pulls/{base}/{head}   (Gitea/Forgejo;
 *        after a 409 "already exists" it did not find, the open pull
 *        requests page by page: ?state=open&page=N&limit=50)
 *   POST {base}/repos/{owner}/{repo}/pulls  {"title","head","base","body"}
 * For a fork (the push remote's owner is not forge.owner), head is
 * "FORKOWNER:branch" in the query, the Gitea path and the POST.
 * A rate limit (429; 403 with x-ratelimit-remaining 0, Retry-After, or a
 * body naming a rate limit, as GitHub's secondary limit) waits the
 * server's time, else a minute.
 * GitHub gets "Accept: application/vnd.github+json" and
 * "X-GitHub-Api-Version: 2022-11-28".  Requests follow util/retry.h: see
 * docs/publishing.md.
 * The token is read from the environment variable NAMED by
 * forge.token_env when a request is made and sent as
 * "Authorization: token T" (forge.auth_scheme "token") or "Bearer T"
 * ("bearer"); it is never stored, logged nor put in a message.  Without
 * the variable, requests go without Authorization.
 */
#ifndef GOALD_VCS_FORGE_H
#define GOALD_VCS_FORGE_H

#include <stddef.h>
#include <stdint.h>

struct vcs_forge {
    char *base_url; /* no final '/' */
    char *owner;
    char *repo;
    char *head_owner; /* a fork's owner, whose branch the pull request comes
                       * from; NULL: the branch is in owner/repo */
    char *token_env;  /* the NAME of the token's variable; NULL: forge.token_env */
    int no_wait;      /* 1: one attempt, never a wait in line: a rate limit or
                       * an outage fails at once (failure.wait_ms: the
                       * forge's wait) for a caller that tries again later */
};

/* Fill f from the configuration: forge.base_url, and forge.owner /
 * forge.repo when set (then a network remote_url of another owner is a
 * fork: f->head_owner), else owner and repository name taken from
 * remote_url (https://host/OWNER/REPO(.git), git@host:OWNER/REPO.git,
 * ssh://git@host/OWNER/REPO.git, any path ending in OWNER/REPO(.git)).
 * remote_url may be NULL when both are configured.  ERR_INVALID when no
 * owner/repo can be found.  Free with vcs_forge_release(). */
int vcs_forge_from_config(struct vcs_forge *f, const char *remote_url);

/* Split a remote URL into owner and repo (".git" dropped).  0 or
 * ERR_INVALID. */
int vcs_forge_parse_remote(char *owner, size_t on, char *repo, size_t rn, const char *url);

void vcs_forge_release(struct vcs_forge *f);

/* Can a pull request be opened for the remote remote_name at remote_url
 * with the configuration?  0 when forge.owner and forge.repo name the
 * forge's repository, or the remote is a network URL whose owner/repo can
 * be read and whose host has a forge (forge.base_url set, or left at its
 * default and the host is github.com); else ERR_INVALID saying why (a
 * local path or file:// remote, no forge for its host). */
int vcs_forge_can_pr(const char *remote_name, const char *remote_url);

/* Why a forge request failed, for the caller's recovery. */
struct forge_failure {
    char cls[16];    /* "auth" (401/403, never retried), "forge" (the rest); "" */
    int64_t wait_ms; /* > 0: the forge's rate limit resets in this many ms
                      * (unscaled), beyond forge.retry_max_wait_s */
};

struct vcs_pr {
    long number;
    char *url;   /* html_url, for people; free with vcs_pr_release() */
    int created; /* 1: opened by this call; 0: an open one already existed */
    struct forge_failure failure; /* after an error */
};

void vcs_pr_release(struct vcs_pr *pr);

/* Make sure an open pull request from branch head into branch base
 * exists, and describe it in out.  An open pull request from our owner's
 * branch head (not a fork's branch of the same name) into base is looked
 * for first and returned (created = 0) without changing it; only when there is none is one opened with title and body
 * (created = 1).  So calling this twice opens one pull request.
 * out is zeroed first; release it with vcs_pr_release() (also after an
 * error).  Errors name the URL and the HTTP status and the forge's reason
 * (a 422's errors[0].message); out->failure says its class. */
int vcs_forge_pr_ensure(struct vcs_pr *out, const struct vcs_forge *f, const char *title,
                        const char *head, const char *base, const char *body);

/* Only the look-up half: ERR_NOTFOUND when no open pull request goes
 * from f->owner's branch head into base (Gitea/Forgejo: within
 * forge.max_pages pages of open pull requests). */
int vcs_forge_pr_find(struct vcs_pr *out, const struct vcs_forge *f, const char *head,
                      const char *base);

struct http_response;

/* One request to forge f's API at url (body NULL: none) with the policy
 * of the pull-request calls: the token, the media type, the retries of a
 * network error, a 5xx or a rate limit (waiting the forge's time, capped
 * at forge.retry_max_wait_s), 401/403 never retried (class "auth").
 * extra is one more header line ("If-None-Match: ...") or NULL.  Any
 * other status (304 and 404 among them) is returned in *res for the
 * caller to judge; release *res with http_response_release(), also after
 * an error.  fl (may be NULL) says why it failed. */
int vcs_forge_request(struct http_response *res, struct forge_failure *fl,
                      const struct vcs_forge *f, const char *method, const char *url,
                      const char *body, const char *extra);

/* Is f's base URL a Gitea or Forgejo API (".../api/v1")? */
int vcs_forge_is_gitea(const struct vcs_forge *f);

/* POST json (a complete JSON document) to url with Content-Type
 * application/json, within notify.webhook_timeout_s.  url NULL means
 * notify.webhook_url; when that is unset nothing is sent and *sent_out = 0.
 * A 2xx answer is success (*sent_out = 1); anything else is an error the
 * caller logs and goes on (a webhook is never fatal).  Messages show only
 * the URL's scheme and host (webhook paths often hold a secret).
 * sent_out may be NULL. */
int vcs_webhook_post(int *sent_out, const char *url, const char *json);

#endif
