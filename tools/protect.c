/* protect.c - the goal's protected_paths, refused by write and edit. */
#include <fnmatch.h>
#include <string.h>

#include "tools/tool.h"

int tool_protected(const struct tool_ctx *ctx, const char *rel)
{
    for (size_t i = 0; ctx->protected_paths && ctx->protected_paths[i]; i++) {
        const char *p = ctx->protected_paths[i];
        size_t n = strlen(p);
        /* fnmatch without FNM_PATHNAME: '*' crosses '/'; a folder covers
         * what is under it */
        if (fnmatch(p, rel, 0) == 0 || (n && !strncmp(rel, p, n) && rel[n] == '/') ||
            (n && p[n - 1] == '/' && !strncmp(rel, p, n)))
            return 1;
    }
    return 0;
}
