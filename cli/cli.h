/*
 * cli.h - the command table and what every command shares.
 *
 * Each command lives in its own cmd_*.c file as one `struct cli_command`
 * (name, synopsis, summary, option table, handler); cli/commands.c lists
 * them.  Parsing, `--help` and the command list all come from that table.
 * Exit codes: 0 ok, 1 failure, 2 bad input or usage.
 */
#ifndef GOALD_CLI_CLI_H
#define GOALD_CLI_CLI_H

#include <stdio.h>

#include "store/goal.h"
#include "store/store.h"
#include "util/err.h"
#include "util/id.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

#define CLI_MAX_OPTS 16
#define CLI_MAX_POS 8

struct cli_opt {
    const char *name; /* long name without dashes: "json" is --json */
    const char *arg;  /* metavariable for a value ("S"), NULL for a flag */
    const char *help;
};

struct cli_ctx;

struct cli_command {
    const char *name;           /* "submit", "goal show" */
    const char *args;           /* positional synopsis, e.g. "FILE|-" */
    const char *summary;        /* one line */
    const char *details;        /* more help text, may be NULL */
    const struct cli_opt *opts; /* ends with {NULL} */
    int min_pos, max_pos;
    int (*run)(struct cli_ctx *c);
    int hidden;             /* left out of `goald --help` (tools for tests); its own --help works */
    int readonly;           /* only reads the database: never creates one (cli_store) */
    const char *json_shape; /* what --json prints, for docs/cli.md; NULL: no --json */
};

struct cli_ctx {
    const char *db_path;     /* --db / GOALD_DB, NULL: the default */
    const char *config_path; /* --config / GOALD_CONFIG, may be NULL */
    const char *argv0;
    const struct cli_command *cmd;
    const char *val[CLI_MAX_OPTS]; /* per option: its value, "" for a set flag, NULL */
    const char *pos[CLI_MAX_POS];
    int npos;
    store *st; /* opened by cli_store(); closed by the dispatcher */
};

extern const struct cli_command *const cli_commands[];

/* Dispatch argv (after the global options) to a command. */
int cli_dispatch(struct cli_ctx *c, int argc, char **argv);
void cli_print_usage(FILE *f);

/* Option lookup by name: cli_flag() is 1 when given; cli_opt() the value
 * or NULL. */
int cli_flag(const struct cli_ctx *c, const char *name);
const char *cli_opt(const struct cli_ctx *c, const char *name);

/* Open the database once (migrating it); a readonly command opens only an
 * existing one ("no database at PATH").  On failure prints the message and
 * returns the exit code (EXIT_FAIL); 0 on success. */
int cli_store(struct cli_ctx *c, store **out);

/* "goald: warning: " and the message on stderr, wrapped like cli_fail(). */
void cli_warn(const char *fmt, ...) GOALD_PRINTF(1, 2);
/* Print "goald: MESSAGE" on stderr, wrapped at 80 columns (continuation
 * lines indented by 7); returns code. */
int cli_fail(int code, const char *fmt, ...) GOALD_PRINTF(2, 3);

/* Print the error slot and map its code to an exit code. */
int cli_fail_err(int rc);

/* Resolve an id prefix of a row of kind; prints the error and returns
 * EXIT_USAGE on failure, 0 on success. */
int cli_resolve(struct cli_ctx *c, enum store_kind kind, const char *prefix, char out[ID_SIZE]);

/* Print a cJSON value (pretty, newline) to stdout; frees nothing. */
struct cJSON;
int cli_print_json(const struct cJSON *v);

/* A list a command prints as text rows, or with --json as one JSON array
 * of its rows (token list, escalations, goals, config show). */
struct cli_list {
    int json;          /* --json was given */
    struct cJSON *arr; /* with --json: the array the rows go into; cli_list_end() frees it */
    int n;             /* rows shown, for the caller to count */
};

/* Start a list by --json: an empty array, or none (the caller prints its
 * text header).  Returns l->json. */
int cli_list_begin(struct cli_list *l, const struct cli_ctx *c);

/* The body of a list command: cli_store(), cli_list_begin(l), then
 * rows(c, st, arg) to print the text header (when !l->json) and add the
 * rows, and cli_list_end() with its result.  Returns cli_store()'s exit
 * code (l not begun, rows not called) or cli_list_end()'s; after the rows,
 * l->n and l->json stay readable (the array is freed). */
int cli_list_run(struct cli_list *l, struct cli_ctx *c,
                 int (*rows)(struct cli_ctx *c, store *st, void *arg), void *arg);

/* End a list whose rows were read with result rc: on failure prints the
 * error (cli_fail_err) and prints no array; with --json prints the array.
 * Frees the array either way; returns the exit code. */
int cli_list_end(struct cli_list *l, int rc);

#endif
