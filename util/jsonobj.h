/*
 * jsonobj.h - small additions to a cJSON object that goald's JSON views
 * repeat.  What they add belongs to o (freed with it, cJSON_Delete).
 */
#ifndef GOALD_UTIL_JSONOBJ_H
#define GOALD_UTIL_JSONOBJ_H

struct cJSON;

/* key: the string v (copied), or JSON null when v is NULL. */
void jsonobj_add_str_or_null(struct cJSON *o, const char *key, const char *v);

#endif
