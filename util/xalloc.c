/* xalloc.c - allocation that cannot fail (see xalloc.h). */
#include "util/xalloc.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void xalloc_die(void)
{
    static const char msg[] = "goald: out of memory\n";
    /* no stdio: it may need memory itself */
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to say */
    }
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        xalloc_die();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        xalloc_die();
    return q;
}

char *xstrdup(const char *s)
{
    char *p;
    if (!s)
        return NULL;
    if (!(p = strdup(s)))
        xalloc_die();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        xalloc_die();
    return p;
}

void xalloc_cjson_hooks(void)
{
    /* an allocator other than malloc: cJSON then grows a print buffer by
     * allocate, copy and free rather than realloc(), all through xmalloc() */
    cJSON_Hooks h = {xmalloc, free};

    cJSON_InitHooks(&h);
}
