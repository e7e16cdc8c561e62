/*
 * xalloc.h - allocation that cannot fail, as git's wrapper.c: on out of
 * memory the process says so on stderr and aborts (a job is a separate
 * process; the daemon records it as crashed and recovery takes over).
 *
 * What x*() returns is owned by the caller (free() it); never NULL.
 * xcheck(p) is for libraries that allocate for us (cJSON, libgit2 buffers):
 * it returns p, or dies the same way when p is NULL.  Use it only where
 * NULL can mean nothing but out of memory.
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

/* A function, not a macro that names p twice: xcheck(cJSON_CreateObject())
 * must call it once. */
static inline void *xcheck(void *p)
{
    if (!p)
        xalloc_die();
    return p;
}

#endif
