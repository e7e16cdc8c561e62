/*
 * build_dirs.c - the build folders a gate declares ("build_dirs"): the
 * rules one must follow (relative, no "..", no git metadata, a few at
 * most, none inside another), checked at intake and again whenever a
 * plan is parsed, since a plan may come from the model.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gates/gates.h"
#include "util/err.h"

/* why (n bytes) formatted; ERR_INVALID. */
static int refuse(char *why, size_t n, const char *fmt, ...) GOALD_PRINTF(3, 4);

static int refuse(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return ERR_INVALID;
}

/* The component c (len bytes) is empty, ".", ".." or ".git" in any case. */
static const char *bad_component(const char *c, size_t len)
{
    if (len == 0)
        return "an empty component";
    if (len == 1 && c[0] == '.')
        return "a \".\" component";
    if (len == 2 && c[0] == '.' && c[1] == '.')
        return "a \"..\" component";
    if (len == 4 && strncasecmp(c, ".git", 4) == 0)
        return "a \".git\" component";
    return NULL;
}

int gates_build_dir_check(const char *rel, char *why, size_t n)
{
    size_t len = rel ? strlen(rel) : 0;
    const char *p;

    if (len == 0)
        return refuse(why, n, "expected a non-empty relative path");
    if (len > GATES_BUILD_DIR_LEN)
        return refuse(why, n, "longer than %d bytes", GATES_BUILD_DIR_LEN);
    if (rel[0] == '/')
        return refuse(why, n, "an absolute path; expected one relative to the worktree");
    for (p = rel; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return refuse(why, n, "a control character");
    for (p = rel;;) {
        const char *slash = strchr(p, '/');
        size_t clen = slash ? (size_t)(slash - p) : strlen(p);
        const char *bad = bad_component(p, clen);
        if (bad)
            return refuse(why, n, "%s (no \"..\", \".git\", \".\" or empty component)", bad);
        if (!slash)
            break;
        p = slash + 1;
    }
    return 0;
}

/* a is b, or a folder above it. */
static int covers(const char *a, const char *b)
{
    size_t la = strlen(a);

    return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '/');
}

int gates_build_dirs_check(const cJSON *v, char *why, size_t n, int *bad)
{
    const cJSON *it;
    char sub[256];
    int i = 0;

    if (bad)
        *bad = -1;
    if (!v)
        return 0;
    if (!cJSON_IsArray(v))
        return refuse(why, n, "expected an array of relative paths");
    if (cJSON_GetArraySize(v) > GATES_BUILD_DIRS_MAX)
        return refuse(why, n, "at most %d build folders", GATES_BUILD_DIRS_MAX);
    cJSON_ArrayForEach(it, v)
    {
        if (bad)
            *bad = i;
        if (!cJSON_IsString(it))
            return refuse(why, n, "[%d]: expected a string", i);
        if (gates_build_dir_check(it->valuestring, sub, sizeof(sub)) != 0)
            return refuse(why, n, "[%d]: %s", i, sub);
        for (const cJSON *o = v->child; o != it; o = o->next)
            if (covers(o->valuestring, it->valuestring) || covers(it->valuestring, o->valuestring))
                return refuse(why, n, "[%d]: the same as or inside another build folder", i);
        i++;
    }
    if (bad)
        *bad = -1;
    return 0;
}
