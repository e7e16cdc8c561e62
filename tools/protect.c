/* protect.c - the goal's protected_paths, refused by write and edit. */
#include "sandbox/path.h"
#include "tools/tool.h"

int tool_protected(const struct tool_ctx *ctx, const char *rel)
{
    for (size_t i = 0; ctx->protected_paths && ctx->protected_paths[i]; i++)
        if (path_glob_covers(ctx->protected_paths[i], rel))
            return 1;
    return 0;
}
