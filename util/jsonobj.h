/*
 * jsonobj.h - small additions to a cJSON object that goald's JSON views
 * repeat.  What they add belongs to o (freed with it, cJSON_Delete).
 */
#ifndef GOALD_UTIL_JSONOBJ_H
#define GOALD_UTIL_JSONOBJ_H

#include <stddef.h>

struct cJSON;

/* key: the string v (copied), or JSON null when v is NULL. */
void jsonobj_add_str_or_null(struct cJSON *o, const char *key, const char *v);

/* 1 when v or any value inside it is a string longer than max bytes. */
int jsonobj_has_long_string(const struct cJSON *v, size_t max);

/* Every string value in v (and inside it) longer than max bytes replaced
 * by its capped copy (utf8_cap_dup: cut on a character boundary, with a
 * note saying it was cut).  Returns how many were cut.  A string held by
 * reference (cJSON_CreateStringReference) is replaced by a copy. */
size_t jsonobj_cap_strings(struct cJSON *v, size_t max);

#endif
