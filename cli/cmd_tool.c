/* goald tool NAME --root DIR --args JSON [--allow LIST] : run one agent tool. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tools/tool.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "vcs/worktree.h"

#define MAX_ALLOW 32

static int run(struct cli_ctx *c)
{
    const char *root = cli_opt(c, "root");
    const char *args = cli_opt(c, "args");
    const char *allow = cli_opt(c, "allow");
    const char *allowed[MAX_ALLOW + 1];
    char allow_buf[1024];
    char real[PATH_MAX], common[PATH_MAX], admin[PATH_MAX];
    struct tool_ctx tc;
    struct tool_result res;
    cJSON *parsed, *env;
    int code = EXIT_OK;

    memset(&tc, 0, sizeof(tc));
    if (allow) {
        size_t n = 0;
        char *save = NULL;
        if (strlen(allow) >= sizeof(allow_buf))
            return cli_fail(EXIT_USAGE, "tool: --allow: too long");
        /* truncation: ok, its length is checked above */
        snprintf(allow_buf, sizeof(allow_buf), "%s", allow);
        for (char *w = strtok_r(allow_buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            if (n >= MAX_ALLOW)
                return cli_fail(EXIT_USAGE, "tool: --allow: more than %d actions", MAX_ALLOW);
            allowed[n++] = w;
        }
        allowed[n] = NULL;
        tc.allowed = allowed;
    }
    if (cli_flag(c, "schemas")) {
        cJSON *s = tool_schemas(tc.allowed);
        cli_print_json(s);
        cJSON_Delete(s);
        return EXIT_OK;
    }
    if (c->npos < 1)
        return cli_fail(EXIT_USAGE, "tool: missing NAME (usage: goald tool NAME --root DIR "
                                    "--args JSON)");
    if (!root)
        return cli_fail(EXIT_USAGE, "tool: --root DIR is required");
    if (!fs_is_dir(root) || !realpath(root, real))
        return cli_fail(EXIT_USAGE, "tool: --root: %s: not a folder", root);
    if (args) {
        parsed = cJSON_Parse(args);
        if (!parsed || !cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            return cli_fail(EXIT_USAGE, "tool: --args: expected a JSON object");
        }
        cJSON_Delete(parsed);
    }
    /* events go to the database only when one was named (--db, GOALD_DB) */
    if (c->db_path && cli_store(c, &tc.st) != 0)
        return EXIT_FAIL;
    tc.root = real;
    /* a person's own folder: its git folders as git finds them, bound
     * read-only for bash (goals bind what goald's records say instead) */
    if (vcs_folder_git_dirs(real, common, sizeof(common), admin, sizeof(admin)) == 0) {
        tc.git_common = common;
        tc.git_dir = admin;
    } else {
        err_clear();
    }
    tool_call(&tc, c->pos[0], args, &res);
    env = tool_result_json(&res);
    cli_print_json(env);
    cJSON_Delete(env);
    if (!tool_find(c->pos[0]))
        code = EXIT_USAGE;
    tool_result_release(&res);
    return code;
}

const struct cli_command cmd_tool = {
    .name = "tool",
    .args = "NAME",
    .summary = "run one agent tool on a folder and print its result envelope (JSON)",
    .details = "NAME is ls, find, grep, read, write, edit or bash (see docs/tools.md); --args "
               "holds its arguments as a JSON object. The envelope is printed whenever the tool "
               "ran, with exit 0 even when it reports ok=false (a refused path, a failing "
               "command): read .ok and .error_class. Exit 2 for bad usage (no --root, --args not "
               "a JSON object, an unknown tool, whose validation envelope is still printed).\n"
               "Events (tool_call.*) are recorded when a database is named with --db or GOALD_DB.",
    .opts = (const struct cli_opt[]){{"root", "DIR", "the worktree: every path stays beneath it"},
                                     {"args", "JSON", "the arguments (default {})"},
                                     {"allow", "LIST",
                                      "allowed actions, comma-separated "
                                      "(default: all)"},
                                     {"schemas", NULL, "print the tools' JSON schemas instead"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 1,
    .run = run,
};
