/*
 * xalloc.h - allocation that cannot fail, as git's wrapper.c: on out of
 * memory the process says so on stderr and aborts (a job is a separate
 * process; the daemon records it as crashed and recovery takes over).
 *
 * What x*() returns is owned by the caller (free() it); never NULL.
 * xcheck(p) is for libraries that allocate for us with an allocator of
 * their own (libgit2 buffers, PCRE2, curl lists): it returns p (evaluated
 * once), or dies the same way when p is NULL.  Use it only where NULL can
 * mean nothing but out of memory.
 *
 * cJSON allocates through xmalloc() too, once xalloc_cjson_hooks() has run
 * (every main() calls it first): building a tree (cJSON_Create*(),
 * cJSON_Add*ToObject(), cJSON_Duplicate()) or printing one
 * (cJSON_Print*()) never returns NULL for lack of memory, and needs no
 * xcheck().  What NULL still means there is a caller's mistake, never
 * memory: a NULL object, array or key, or a NULL string
 * (cJSON_CreateString(NULL) and cJSON_AddStringToObject(o, k, NULL) add
 * nothing; util/jsonobj.h's jsonobj_add_str_or_null() writes JSON null
 * instead).
 */
#ifndef GOALD_UTIL_XALLOC_H
#define GOALD_UTIL_XALLOC_H

#include <stddef.h>

_Noreturn void xalloc_die(void);

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);          /* s may be NULL: returns NULL */
char *xstrndup(const char *s, size_t n); /* at most n bytes, NUL-terminated */

/* Make cJSON allocate with xmalloc() and free with free() (so that
 * cJSON_free() and free() are the same).  cJSON's hooks are global: call
 * it once at the start of main(), before any cJSON call, in every program
 * (the goald binary, the unit tests, the fuzz targets). */
void xalloc_cjson_hooks(void);

static inline void *xcheck(void *p)
{
    if (!p)
        xalloc_die();
    return p;
}

#endif
