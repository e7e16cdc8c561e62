/*
 * publish.h - stage 7 (see publish.c).
 */
#ifndef GOALD_LIFECYCLE_PUBLISH_H
#define GOALD_LIFECYCLE_PUBLISH_H

#include "store/store.h"
#include "util/strbuf.h"

struct job_ctx;

/* The publish unit of a goal whose items are all done or skipped: push,
 * pull request, goal completed, notify, worktree removed. */
int stage_publish(struct job_ctx *j);

/* The pull request body: success criteria -> evidence, items, gates with
 * their failure classes, review findings, tokens and cost (markdown),
 * cut at sb's cap; with repo (the goal's repository, may be NULL) each
 * accepted change of an existing test shows its diff.  A store error is
 * returned (sb then holds part). */
int publish_body(strbuf *sb, store *st, const char *goal_id, const char *repo);

#endif
