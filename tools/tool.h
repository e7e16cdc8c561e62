/*
 * tool.h - the agent's tools: registry, call, result envelope.
 *
 * Every tool is one `struct tool_def` (name, description, JSON Schema of
 * its arguments, run function) in the registry; tool_schemas() exports
 * them for the LLM `tools` list.  tool_call() is the one entry point: it
 * checks the name (unknown: `validation`), the goal's allowed actions
 * (outside them: `policy`), the arguments against the schema
 * (`validation`), runs the tool beneath the worktree, redacts secrets in
 * the output, records tool_call.* events when a store is given, and always
 * fills the envelope: errors are results with ok = 0 and an error class,
 * never a crash.
 *
 * run_gates, run_at_start, complete and ask_human are registered (their
 * schemas are exported) but executed by the caller (the ReAct loop)
 * through ctx->hook;
 * without a hook they are a `validation` error "only available inside a
 * run".  docs/tools.md describes each tool.
 */
#ifndef GOALD_TOOLS_TOOL_H
#define GOALD_TOOLS_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/strbuf.h"

struct cJSON;

enum tool_class {
    TOOL_OK = 0,
    TOOL_VALIDATION, /* bad arguments, unknown tool */
    TOOL_POLICY,     /* outside the worktree, not an allowed action, no sandbox */
    TOOL_NOT_FOUND,  /* no such file; edit: old_text not found */
    TOOL_TIMEOUT,    /* the command ran past its timeout */
    TOOL_IO,         /* the file system or the process machinery failed */
    TOOL_EXIT,       /* the command exited non-zero */
};

/* "validation", "policy", ...; "" for TOOL_OK. */
const char *tool_class_name(enum tool_class c);

/* The envelope.  Owned by the caller: tool_result_release() frees it. */
struct tool_result {
    int ok;
    int exit_code; /* the command's; else 0 ok, 1 failed */
    strbuf output; /* what the model sees, notices included */
    int truncated;
    const char *truncated_by; /* "lines", "bytes", "limit" or NULL (static) */
    int64_t total_lines;      /* of the whole output before truncation */
    int64_t total_bytes;
    int64_t next_offset; /* read: the offset= to continue; 0 none */
    char *spill_path;    /* bash: the full output; NULL none */
    struct cJSON *meta;  /* an object: per-tool details (owned) */
    enum tool_class error_class;
    int redactions; /* secrets replaced in output */
};

void tool_result_init(struct tool_result *r);
void tool_result_release(struct tool_result *r);

/* Make r a failure of class c with the message as output; returns 0 so
 * that run functions can `return tool_fail(...)`. */
int tool_fail(struct tool_result *r, enum tool_class c, const char *fmt, ...) GOALD_PRINTF(3, 4);

/* The envelope as JSON: {ok, is_error, exit_code, output, truncated,
 * truncated_by, total_lines, total_bytes, next_offset, spill_path, meta,
 * error_class}.  Free with cJSON_Delete(). */
struct cJSON *tool_result_json(const struct tool_result *r);

struct tool_ctx;

/* Executes the caller's tools (run_gates, run_at_start, complete,
 * ask_human): fill res and return 0. */
typedef int (*tool_hook_fn)(void *arg, struct tool_ctx *ctx, const char *name,
                            const struct cJSON *args, struct tool_result *res);

struct tool_ctx {
    const char *root;           /* the worktree (absolute); required */
    /* git folders bound read-only into bash's sandbox, from goald's records
     * (struct sandbox_spec); NULL for a folder that is not a goal's worktree */
    const char *git_common, *git_dir;
    const char *const *allowed; /* the goal's allowed_actions, NULL-terminated; NULL: all */
    const char *spill_dir;      /* NULL: see sandbox_spill_prepare() */
    store *st;                  /* events; may be NULL */
    const char *goal_id, *item_id, *run_id;
    tool_hook_fn hook; /* run_gates, complete, ask_human */
    void *hook_arg;
    /* tests: called by write and edit after the path is resolved and
     * before the file is written */
    void (*after_resolve)(void *arg, const char *rel);
    void *after_resolve_arg;
    int root_fd; /* set by tool_call for the run functions */
    /* the goal's protected_paths (globs, NULL-terminated; NULL: none):
     * write and edit refuse them with class policy */
    const char *const *protected_paths;
};

/* 1 when rel (relative to the worktree) matches ctx's protected_paths. */
int tool_protected(const struct tool_ctx *ctx, const char *rel);

struct tool_def {
    const char *name;
    const char *description;
    const char *parameters; /* JSON Schema (an object) as text */
    /* NULL: executed by ctx->hook */
    int (*run)(struct tool_ctx *ctx, const struct cJSON *args, struct tool_result *res);
};

/* Add a tool.  ERR_INVALID when the name is taken or the schema is not a
 * JSON object.  def must outlive the process (static). */
int tool_register(const struct tool_def *def);

/* NULL when unknown. */
const struct tool_def *tool_find(const char *name);
size_t tool_count(void);
const struct tool_def *tool_at(size_t i);

/* Whether name is allowed by the list (NULL: everything).  "read" also
 * grants ls, find and grep, "bash" run_at_start; complete and ask_human
 * are always allowed. */
int tool_allowed(const char *const *allowed, const char *name);

/* [{"name", "description", "parameters"}] of the tools allowed (NULL:
 * all).  Free with cJSON_Delete(). */
struct cJSON *tool_schemas(const char *const *allowed);

/* Run tool name with args (JSON text of an object; NULL or "" = {}).
 * Always fills res (tool_result_init is done here); returns 0 when an
 * envelope was produced, which is always. */
int tool_call(struct tool_ctx *ctx, const char *name, const char *args_json,
              struct tool_result *res);

/* For `goald doctor`: rg and fd (fdfind) are installed and run.  0 with
 * their versions in detail ("ripgrep 13.0.0; fdfind 8.6.0"), or
 * ERR_NOTFOUND naming the package to install. */
int tool_check_programs(char *detail, size_t n);

/* tool_call() for arguments the caller owns (malloc'd text in *args_json,
 * taken): long strings are decoded inside the text itself (util/jsonbig.h),
 * and when a string argument was longer than 4 KiB (a write's content)
 * *args_json comes back as a compact copy in which such strings give their
 * size only, for the caller's conversation history; else as the text it
 * was.  Memory for a big write: the text it came from, not also a parsed
 * copy of the content. */
int tool_call_take(struct tool_ctx *ctx, const char *name, char **args_json,
                   struct tool_result *res);

/* The same with parsed arguments (borrowed). */
int tool_call_json(struct tool_ctx *ctx, const char *name, const struct cJSON *args,
                   struct tool_result *res);

#endif
