/* bash: a shell command in the sandbox; tail truncation, full output spilled. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "sandbox/spill.h"
#include "tools/internal.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"
#include "util/path.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* The notice when the output was cut: which part is shown, where the
 * whole is.  start is where the shown text begins in sres's tail. */
static int bash_notice(struct tool_result *res, const struct sandbox_result *sres,
                       const struct trunc *t, size_t start, const char *spill)
{
    const char *what = sres->spilled ? "Full output" : "Output (first tools.spill_mb)";
    const char *text = sres->out.data;
    size_t len = sres->out.len, kept_lines = text_lines(text + start, len - start);
    size_t end_line = (size_t)sres->out.total_lines;
    size_t start_line = end_line >= kept_lines ? end_line - kept_lines + 1 : 1;
    char sz[32], sz2[32];

    if (t->partial_line) {
        /* the line's length is known when it began inside the kept tail,
         * or when it is the only line */
        const char *nl = len > 1 ? memrchr(text, '\n', len - 1) : NULL;
        int exact = nl || sres->out.total_lines == 1;
        size_t line_len = nl ? len - (size_t)(nl - text) - 1
                             : (sres->out.total_lines == 1 ? (size_t)sres->out.total_bytes : len);
        if (line_len && text[len - 1] == '\n')
            line_len--;
        return strbuf_addf(&res->output,
                           "\n\n[Showing the last %s of line %zu (the line is %s%s). "
                           "%s: %s]",
                           format_size(sz, sizeof(sz), len - start), end_line,
                           exact ? "" : "at least ", format_size(sz2, sizeof(sz2), line_len),
                           what, spill);
    }
    if (!strcmp(res->truncated_by, "lines"))
        return strbuf_addf(&res->output, "\n\n[Showing lines %zu-%zu of %zu. %s: %s]",
                           start_line, end_line, end_line, what, spill);
    return strbuf_addf(&res->output, "\n\n[Showing lines %zu-%zu of %zu (%s limit). %s: %s]",
                       start_line, end_line, end_line,
                       format_size(sz, sizeof(sz), tool_max_bytes()), what, spill);
}

/* The tail of the output (the last lines within the limits) into res;
 * when it was cut, the notice, and the spill file is kept (else removed). */
static int bash_output(struct tool_result *res, const struct sandbox_result *sres,
                       const char *spill)
{
    const char *text = sres->out.data;
    size_t len = sres->out.len, start;
    struct trunc t;
    int rc;

    truncate_tail(&t, text, len, tool_max_lines(), tool_max_bytes());
    start = t.start;
    if (sres->out.truncated && start == 0 && !t.partial_line) {
        /* the kept tail begins inside a line: drop that piece */
        const char *nl = memchr(text, '\n', len);
        if (nl && (size_t)(nl - text) + 1 < len)
            start = (size_t)(nl - text) + 1;
    }
    if (len - start == 0)
        rc = strbuf_adds(&res->output, "(no output)");
    else
        rc = strbuf_add(&res->output, text + start,
                        text[len - 1] == '\n' ? len - start - 1 : len - start);
    res->total_lines = (int64_t)sres->out.total_lines;
    res->total_bytes = (int64_t)sres->out.total_bytes;
    res->exit_code = sres->exit_code;
    if (!sres->out.truncated && !t.truncated) {
        unlink(spill);
        return rc;
    }
    res->truncated = 1;
    res->truncated_by = t.partial_line || (t.by && !strcmp(t.by, "bytes")) ? "bytes" : "lines";
    res->spill_path = xstrdup(spill);
    return rc ? rc : bash_notice(res, sres, &t, start, spill);
}

/* The meta of a finished command, and its failure: a timeout or a
 * non-zero exit. */
static int bash_status(struct tool_result *res, const struct sandbox_result *sres,
                       int64_t timeout_s)
{
    cJSON_AddNumberToObject(tool_meta(res), "duration_ms", (double)sres->duration_ms);
    cJSON_AddNumberToObject(tool_meta(res), "timeout_s", (double)timeout_s);
    cJSON_AddBoolToObject(tool_meta(res), "timed_out", sres->timed_out);
    cJSON_AddBoolToObject(tool_meta(res), "unconfined", sres->unconfined);
    cJSON_AddBoolToObject(tool_meta(res), "pids_cgroup", sres->pids_cgroup);
    cJSON_AddBoolToObject(tool_meta(res), "memory_cgroup", sres->memory_cgroup);
    if (sres->term_signal)
        cJSON_AddNumberToObject(tool_meta(res), "signal", sres->term_signal);
    if (sres->timed_out) {
        res->ok = 0;
        res->error_class = TOOL_TIMEOUT;
        return strbuf_addf(&res->output,
                           "\n\nCommand timed out after %lld seconds (the whole process "
                           "group was killed)",
                           (long long)timeout_s);
    }
    if (sres->exit_code != 0) {
        res->ok = 0;
        res->error_class = TOOL_EXIT;
        return strbuf_addf(&res->output, "\n\nCommand exited with code %d", sres->exit_code);
    }
    return 0;
}

static int run(struct tool_ctx *ctx, const cJSON *args, struct tool_result *res)
{
    static unsigned counter;
    const char *command = targ_str(args, "command", "");
    int64_t timeout_s = targ_int(args, "timeout_s", config_int(CFG_TOOLS_BASH_TIMEOUT_S));
    int64_t max_timeout = config_int(CFG_SANDBOX_TIMEOUT_S);
    char spill_dir[PATH_MAX], spill[PATH_MAX + 64];
    struct sandbox_spec spec = {0};
    struct sandbox_result sres;
    uint64_t spill_max;
    int rc, rc2;

    if (!*command)
        return tool_fail(res, TOOL_VALIDATION, "bash: command: must not be empty");
    if (timeout_s > max_timeout)
        timeout_s = max_timeout; /* sandbox.timeout_s is the ceiling */
    spill_max = (uint64_t)config_int(CFG_TOOLS_SPILL_MB) << 20;
    if (spill_max > (uint64_t)config_int(CFG_TOOLS_SPILL_TOTAL_MB) << 20)
        spill_max = (uint64_t)config_int(CFG_TOOLS_SPILL_TOTAL_MB) << 20;
    if ((rc = sandbox_spill_prepare(ctx->st, ctx->spill_dir, spill_max, spill_dir,
                                 sizeof(spill_dir))) != 0)
        return rc;
    if ((rc = path_fmt(spill, sizeof(spill), "%s/bash-%lld-%ld-%u.log", spill_dir,
                       (long long)time_now_ms(), (long)getpid(), counter++)) != 0)
        return rc;
    spec.root = ctx->root;
    spec.git_common = ctx->git_common;
    spec.git_dir = ctx->git_dir;
    spec.command = command;
    spec.timeout_ms = (int)(timeout_s * 1000);
    spec.merge_stderr = 1;
    spec.spill_path = spill;
    spec.spill_max = (size_t)spill_max;
    spec.tail_cap = tool_max_bytes() * 2 + 4096;
    spec.st = ctx->st;
    spec.goal_id = ctx->goal_id;
    spec.item_id = ctx->item_id;
    spec.run_id = ctx->run_id;
    if ((rc = sandbox_run(&spec, &sres)) != 0) {
        unlink(spill);
        return rc;
    }
    rc = bash_output(res, &sres, spill);
    rc2 = bash_status(res, &sres, timeout_s);
    sandbox_result_release(&sres);
    if (!rc)
        rc = rc2;
    return rc;
}

const struct tool_def tool_def_bash = {
    .name = "bash",
    .description = "Run bash -c COMMAND in a sandbox, in the worktree. Only the worktree keeps "
                   "files: /tmp is emptied after every call (build in the worktree, or in one "
                   "command). No network. Git metadata is read-only: git commit, git stash, git "
                   "checkout -- FILE fail (index.lock: Read-only file system); compare with the "
                   "item's start with git diff or git show HEAD:PATH (restore a file: git show "
                   "HEAD:PATH > PATH). Shows the exit code and the last 2000 lines or 50KB of "
                   "stdout+stderr; the full output's file is named in the notice.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},"
                  "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,"
                  "\"description\":\"default 120\"}},\"required\":[\"command\"]}",
    .run = run,
};
