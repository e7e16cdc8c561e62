/*
 * run_env.c - what decides a gate's run besides the tree it runs on, as
 * one digest (gates_run_env): two runs with the same digest on the same
 * tree are the same run, so a first-run pass may stand for a later one
 * (lifecycle/verify_run.c).
 *
 * It covers the gate as configured (name, type, command, report, its
 * build folders, the timeout it runs under), what goald adds to its command (instrument.c),
 * and the sandbox settings a command runs under: mode, rlimits, memory,
 * binds, PATH, the names and host values of the variables passed in, the
 * user.  Anything that can make a run pass or fail on the same tree is
 * here; a setting left out would let a pass under one setting stand for
 * a run under another.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "util/config.h"
#include "util/hash.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* s into sb as its length and its bytes: no two lists of strings add up
 * to the same text. */
static void add_field(strbuf *sb, const char *s)
{
    s = s ? s : "";
    if (strbuf_addf(sb, "%zu:", strlen(s)) != 0 || strbuf_adds(sb, s) != 0)
        abort(); /* an unbounded strbuf: only out of memory */
}

static void add_int(strbuf *sb, int64_t v)
{
    if (strbuf_addf(sb, "%lld;", (long long)v) != 0)
        abort();
}

static void add_json(strbuf *sb, const cJSON *v)
{
    char *t = v ? cJSON_PrintUnformatted(v) : NULL;

    add_field(sb, t);
    cJSON_free(t);
}

/* The variables sandbox.env passes in: each name with its value here. */
static void add_passed_env(strbuf *sb)
{
    const cJSON *names = config_json(CFG_SANDBOX_ENV), *n;

    cJSON_ArrayForEach(n, names)
    {
        const char *name = cJSON_GetStringValue(n);
        add_field(sb, name);
        add_field(sb, name ? getenv(name) : NULL);
    }
}

static const enum cfg_key int_keys[] = {
    CFG_SANDBOX_TIMEOUT_S, CFG_SANDBOX_CPU_S,  CFG_SANDBOX_AS_MB,  CFG_SANDBOX_NPROC,
    CFG_SANDBOX_FSIZE_MB,  CFG_SANDBOX_NOFILE, CFG_SANDBOX_TMP_MB, CFG_SANDBOX_OUTPUT_KB,
    CFG_SANDBOX_MEMORY_MB, CFG_SANDBOX_UID,    CFG_SANDBOX_GID,
};

void gates_run_env(char out[HASH_HEX_SIZE], const struct gate_spec *g)
{
    const char *env[8] = {0};
    char *cmd = gates_instrument(g, env, sizeof(env) / sizeof(env[0]));
    strbuf sb;

    strbuf_init(&sb, STRBUF_DEFAULT_CAP);
    add_field(&sb, "goald gate run 1");
    add_field(&sb, g->name);
    add_field(&sb, g->type);
    add_field(&sb, g->command);
    add_field(&sb, g->report);
    if (g->n_build_dirs) { /* none: the digest gates had before they could declare them */
        add_field(&sb, "build_dirs");
        add_int(&sb, (int64_t)g->n_build_dirs);
    }
    for (size_t i = 0; i < g->n_build_dirs; i++)
        add_field(&sb, g->build_dirs[i]);
    add_int(&sb, g->timeout_s > 0 ? g->timeout_s : config_int(CFG_LANE_WORK_TIMEOUT_S));
    add_field(&sb, cmd ? cmd : g->command);
    for (size_t i = 0; env[i]; i++)
        add_field(&sb, env[i]);
    add_field(&sb, config_str(CFG_SANDBOX_MODE));
    add_field(&sb, config_str(CFG_SANDBOX_BWRAP));
    add_field(&sb, config_str(CFG_SANDBOX_PATH));
    add_int(&sb, config_bool(CFG_SANDBOX_OPT));
    add_int(&sb, config_bool(CFG_SANDBOX_CGROUP));
    for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++)
        add_int(&sb, config_int(int_keys[i]));
    add_json(&sb, config_json(CFG_SANDBOX_BINDS));
    add_json(&sb, config_json(CFG_SANDBOX_ENV));
    add_passed_env(&sb);
    hash_sha256_hex(out, strbuf_cstr(&sb), sb.len);
    strbuf_release(&sb);
    free(cmd);
}
