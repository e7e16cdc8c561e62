/*
 * intake_roots.h - the roots a goal submitted over HTTP may name
 * (intake_roots.c; used by intake.c).
 */
#ifndef GOALD_LIFECYCLE_INTAKE_ROOTS_H
#define GOALD_LIFECYCLE_INTAKE_ROOTS_H

#include <stddef.h>

struct cJSON;

/* The goal root (parsed JSON) from the HTTP API names only what the
 * operator allowed: its repo under http.repos (the resolved path into
 * repo_real, n bytes), publish.remote as a path or URL under
 * http.remotes (a remote's name is the repository's own).  A value that
 * holds a credential, or is not a string, is left to the field checks.
 * 0, or ERR_POLICY naming the setting (fname names the goal). */
int intake_confine(const struct cJSON *root, const char *fname, char *repo_real, size_t n);

#endif
