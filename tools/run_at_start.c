/* run_at_start: a command on the item's starting tree with chosen files of
 * the worktree laid over it.  Executed by the ReAct loop (ctx->hook): it
 * needs the item's start and a throw-away copy (lifecycle/run_at_start.c). */
#include "tools/internal.h"

const struct tool_def tool_def_run_at_start = {
    .name = "run_at_start",
    .description = "Run a bash command in the sandbox on the item's starting tree (the commit "
                   "it started from) with the listed files of your worktree laid over it, e.g. "
                   "your new tests against the old code, which they should fail. Runs in a "
                   "throw-away copy: your worktree is not touched.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},"
                  "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                  "\"description\":\"worktree paths, relative, at most 20\"},"
                  "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600}},"
                  "\"required\":[\"command\",\"files\"]}",
    .run = NULL,
};
