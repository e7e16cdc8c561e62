/*
 * forge_issues.h - a forge's issues, comments and collaborators through
 * its REST API (GitHub's shape; Gitea and Forgejo where theirs differs),
 * with the request policy of vcs/forge.h (token, retries, rate limits).
 *
 *   GET   {base}/repos/{o}/{r}/issues?state=open&labels=L&per_page=100
 *         (Gitea: &type=issues&limit=50), If-None-Match: the last ETag
 *   GET   {base}/repos/{o}/{r}                        default_branch
 *   GET   {base}/repos/{o}/{r}/issues/{n}/events      GitHub: "labeled"
 *   GET   {base}/repos/{o}/{r}/issues/{n}/timeline    Gitea: "label"
 *   GET   {base}/repos/{o}/{r}/collaborators/{user}/permission
 *   GET   {base}/repos/{o}/{r}/issues/{n}/comments
 *   POST  {base}/repos/{o}/{r}/issues/{n}/comments    {"body"}
 *   PATCH {base}/repos/{o}/{r}/issues/comments/{id}   {"body"}
 *   GET   {base}/repos/{o}/{r}/pulls/{n}/reviews
 *   GET   {base}/repos/{o}/{r}/pulls/{n}/reviews/{id}/comments
 *
 * Everything read from the forge is data: titles, bodies and logins are
 * copied, never interpreted here.
 */
#ifndef GOALD_VCS_FORGE_ISSUES_H
#define GOALD_VCS_FORGE_ISSUES_H

#include <stddef.h>
#include <stdint.h>

#include "vcs/forge.h"

struct vcs_issue {
    int64_t number;
    char *title;  /* free with vcs_issues_free() */
    char *body;   /* "" when none */
    char *author; /* the opener's login */
};

/* The open issues of f labelled label (pull requests left out), at most
 * one page (100; Gitea 50).  etag (etag_n bytes) holds the last answer's
 * ETag ("" for none) and is sent as If-None-Match; on 304 *not_modified
 * is 1 and nothing else changes, else it receives the new ETag.  *out
 * (free with vcs_issues_free(*out, *n)) is NULL when none. */
int vcs_forge_issues_list(struct vcs_issue **out, int *n, int *not_modified, char *etag,
                          size_t etag_n, struct forge_failure *fl, const struct vcs_forge *f,
                          const char *label);

void vcs_issues_free(struct vcs_issue *v, int n);

/* The repository's default branch into out (n bytes). */
int vcs_forge_default_branch(char *out, size_t n, const struct vcs_forge *f);

/* Who last put label on issue number, from its events (GitHub) or
 * timeline (Gitea): login into out (n bytes), "" when no such event. */
int vcs_forge_labeler(char *out, size_t n, const struct vcs_forge *f, int64_t number,
                      const char *label);

/* May login push to f's repository?  *allowed 1 when the forge says its
 * permission is admin, maintain, write or owner; 0 for read, none, a
 * stranger (404) or an empty login. */
int vcs_forge_can_push(int *allowed, const struct vcs_forge *f, const char *login);

/* Write body as goald's comment on issue number: a new comment when
 * *comment_id is 0 (or the old one is gone: 404), else the comment
 * edited in place.  *comment_id receives the comment's id. */
int vcs_forge_comment_put(int64_t *comment_id, struct forge_failure *fl, const struct vcs_forge *f,
                          int64_t number, const char *body);

struct vcs_comment {
    int64_t id;
    char *author; /* free with vcs_comments_free() */
    char *body;
};

/* The comments of issue number with an id above after, oldest first, at
 * most one page (100; Gitea 50).  etag as vcs_forge_issues_list(): sent
 * as If-None-Match, *not_modified 1 on 304, else the new ETag. */
int vcs_forge_comments_list(struct vcs_comment **out, int *n, int *not_modified, char *etag,
                            size_t etag_n, const struct vcs_forge *f, int64_t number,
                            int64_t after);

void vcs_comments_free(struct vcs_comment *v, int n);

struct vcs_review {
    int64_t id;
    char *author; /* free with vcs_reviews_free() */
    char *state;  /* GitHub: CHANGES_REQUESTED, COMMENTED, APPROVED, ...;
                   * Gitea: REQUEST_CHANGES, COMMENT, APPROVED, ... */
    char *body;
};

/* The reviews of pull request number, oldest first (one page: 100;
 * Gitea 50); etag as vcs_forge_issues_list(). */
int vcs_forge_reviews_list(struct vcs_review **out, int *n, int *not_modified, char *etag,
                           size_t etag_n, const struct vcs_forge *f, int64_t number);

void vcs_reviews_free(struct vcs_review *v, int n);

struct vcs_review_comment {
    char *path;   /* free with vcs_review_comments_free() */
    int64_t line; /* 0: none (a comment on the file) */
    char *body;
};

/* The comments of review review_id of pull request number (one page). */
int vcs_forge_review_comments(struct vcs_review_comment **out, int *n, const struct vcs_forge *f,
                              int64_t number, int64_t review_id);

void vcs_review_comments_free(struct vcs_review_comment *v, int n);

#endif
