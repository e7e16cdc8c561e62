/*
 * forge.h - what goald keeps of a forge's issues (migrations 0017):
 * the issue-goal links, goald's own comments by kind (edited in place),
 * and small named values (a poll's ETag, the last comment read).
 *
 * Rows are copied into the caller's fixed-size buffers; nothing is
 * allocated.  Writes run in the caller's transaction, if any.
 */
#ifndef GOALD_STORE_FORGE_H
#define GOALD_STORE_FORGE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct store_forge_link {
    char forge[512]; /* the API base URL */
    char repo[256];  /* OWNER/NAME */
    int64_t number;  /* the (or pull request's) number */
    char source[64]; /* "issue", or "review:ID" */
    char goal_id[ID_SIZE];
    char trigger[128];
    int64_t pr_number; /* store_forge_links_with_pr(): its pull request's */
};

/* Link l->goal_id to (forge, repo, number, source) unless that key is
 * linked already: *inserted 1 when this call linked it, 0 when another
 * goal holds the key (nothing written). */
int store_forge_link_insert(store *st, const struct store_forge_link *l, int64_t now_ms,
                            int *inserted);

/* The goal linked to (forge, repo, number, source): *found 0 when none. */
int store_forge_link_goal(store *st, const char *forge, const char *repo, int64_t number,
                          const char *source, char goal_id[ID_SIZE], int *found);

/* The link of goal_id into *out: *found 0 when the goal came from no
 * forge. */
int store_forge_link_of_goal(store *st, const char *goal_id, struct store_forge_link *out,
                             int *found);

/* The issue links of trigger whose goal may have news for the issue (at
 * most max, oldest first): no status comment yet, the goal not ended,
 * or changed since the comment. */
int store_forge_links_to_tell(store *st, const char *trigger, struct store_forge_link *rows,
                              int max, int *n);

/* The issue links of trigger whose goal completed with a pull request
 * (at most max, newest first), pr_number set. */
int store_forge_links_with_pr(store *st, const char *trigger, struct store_forge_link *rows,
                              int max, int *n);

/* *busy 1 when a goal of repo works on branch (queued, active or
 * blocked). */
int store_forge_branch_busy(store *st, const char *repo, const char *branch, int *busy);

/* goald's comment of kind on an issue: its id and the SHA-256 (hex) of
 * the body it last wrote; *found 0 when none yet. */
int store_forge_comment_get(store *st, const char *forge, const char *repo, int64_t number,
                            const char *kind, int64_t *comment_id, char sha[65], int *found);

/* Record (insert or replace) goald's comment of kind on an issue; told_at
 * is the goal's updated_at the comment tells of (a later change of the
 * goal makes store_forge_links_to_tell() list it again). */
int store_forge_comment_set(store *st, const char *forge, const char *repo, int64_t number,
                            const char *kind, int64_t comment_id, const char *sha,
                            int64_t told_at);

/* A named value into out (n bytes, cut): *found 0 and out "" when unset. */
int store_forge_state_get(store *st, const char *key, char *out, size_t n, int *found);

/* Set (insert or replace) a named value. */
int store_forge_state_set(store *st, const char *key, const char *value, int64_t now_ms);

#endif
