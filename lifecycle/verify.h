/*
 * verify.h - verification and evaluation of a completed work item (see
 * verify.c): gates in the sandbox, baseline classification of failures,
 * the advisory review, evidence per success criterion, the item's commit,
 * and `done` — or a failure of class `gate` / `no_artifact` whose reason
 * (the failing output) goes into the next attempt.
 */
#ifndef GOALD_LIFECYCLE_VERIFY_H
#define GOALD_LIFECYCLE_VERIFY_H

struct job_ctx;
struct workspace;
struct cJSON;

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary);

/* Record an artifact of j's goal (and item, when j has one) once: a second
 * call with the same type, item, hash and path changes nothing. */
int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta);

#endif
