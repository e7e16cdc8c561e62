/*
 * internal.h - helpers shared by the tool implementations (tools/ only).
 */
#ifndef GOALD_TOOLS_INTERNAL_H
#define GOALD_TOOLS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/tool.h"

struct cJSON;

/* Argument getters (the arguments were checked against the schema). */
const char *targ_str(const struct cJSON *args, const char *name, const char *dflt);
int64_t targ_int(const struct cJSON *args, const char *name, int64_t dflt);
int targ_bool(const struct cJSON *args, const char *name, int dflt);

/* The error class of an err.h code. */
enum tool_class tool_class_of(int err);

/* Fail res with the error slot's message and the class of rc; returns 0. */
int tool_fail_err(struct tool_result *res, int rc);

/* Normalise a tool path argument (NULL or "" = the root) into rel;
 * on failure res is filled and non-zero returned. */
int tool_path(struct tool_ctx *ctx, struct tool_result *res, const char *path, char *rel, size_t n);

/* One read(2) of at most n bytes from fd into buf, EINTR retried: 0 with
 * *got (0 at the end of the file), or ERR_IO naming name (ERR_INVALID
 * "is a folder" for a folder). */
int tool_read_chunk(int fd, char *buf, size_t n, size_t *got, const char *name);

/* Read a whole file opened at fd (at most cap bytes, else ERR_TOOBIG). */
int tool_read_fd(strbuf *out, int fd, size_t cap, const char *name);

/* Fail res with class policy for a FIFO, socket or device at rel (the
 * tools open regular files and folders only, so that nothing blocks);
 * returns 0. */
int tool_fail_special(struct tool_result *res, const char *rel, mode_t mode);

/* Add the meta object when missing and return it. */
struct cJSON *tool_meta(struct tool_result *res);

/* Output limits from the configuration. */
size_t tool_max_lines(void);
size_t tool_max_bytes(void);
/* tools.max_file_mb in bytes: the largest file write and edit make. */
size_t tool_max_file_bytes(void);

/* A listing tool's output into res: list cut to the byte limit, then,
 * when it was cut or limit_note is not NULL (the tool stopped at its
 * limit), a "[...]" notice with limit_note and "showing N <what>".
 * Sets total_bytes and the truncated fields of res. */
int tool_list_report(struct tool_result *res, const strbuf *list, const char *limit_note,
                     const char *what);

/* The folder for spill files (sandbox_spill_prepare() for ctx), into out. */
int tool_spill_dir(struct tool_ctx *ctx, char *out, size_t n);

/* Builtin definitions (one file each). */
extern const struct tool_def tool_def_ls, tool_def_find, tool_def_grep, tool_def_read,
    tool_def_write, tool_def_edit, tool_def_bash, tool_def_run_gates, tool_def_complete,
    tool_def_ask_human, tool_def_run_at_start;

#endif
