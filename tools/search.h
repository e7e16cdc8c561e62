/*
 * search.h - rg and fd for the grep and find tools (tools/ only).
 *
 * They run directly (not under bubblewrap: goald starts them with fixed
 * arguments and a folder fd already resolved beneath the worktree as their
 * working directory), with the sandbox's rlimits, timeout and capture.
 */
#ifndef GOALD_TOOLS_SEARCH_H
#define GOALD_TOOLS_SEARCH_H

#include "sandbox/sandbox.h"
#include "tools/tool.h"

/* Run the first of names (NULL-terminated: "fdfind", "fd") that exists
 * with argv_tail in the folder cwd_fd.  On 0 release sres with
 * sandbox_result_release().  ERR_NOTFOUND names the package to install. */
int tool_search_run(struct tool_ctx *ctx, const char *const *names, const char *const *argv_tail,
                    int cwd_fd, int stdin_fd, sandbox_data_fn on_stdout, void *arg,
                    struct sandbox_result *sres);

#endif
