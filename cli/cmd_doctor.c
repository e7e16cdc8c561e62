/*
 * goald doctor [--llm] [--json] : is this machine ready to run goals?
 *
 * The checks are a table of functions; each reports one or more lines
 * (ok, warn or fail) through doctor_report().  Exit 0 when nothing
 * failed, 1 otherwise.  A warning does not fail.  API keys: only the name
 * of the variable and whether it is set are ever shown.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sandbox/sandbox.h"
#include "llm/llm.h"
#include "util/config.h"
#include "util/path.h"

enum doctor_status { DOC_OK, DOC_WARN, DOC_FAIL };

struct doctor {
    struct cli_ctx *c;
    int json, llm_round_trip;
    int failed;
    cJSON *checks; /* array of {"name","status","detail",...} */
};

/* Report one line; extra (may be NULL) is merged into the JSON object and
 * consumed. */
static void doctor_report(struct doctor *d, const char *name, enum doctor_status s, cJSON *extra,
                          const char *fmt, ...) GOALD_PRINTF(5, 6);

static void doctor_report(struct doctor *d, const char *name, enum doctor_status s, cJSON *extra,
                          const char *fmt, ...)
{
    static const char *const words[] = {"ok", "warn", "fail"};
    char detail[1024];
    va_list ap;
    cJSON *o = extra ? extra : cJSON_CreateObject();

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (s == DOC_FAIL)
        d->failed = 1;
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "status", words[s]);
    cJSON_AddStringToObject(o, "detail", detail);
    cJSON_AddItemToArray(d->checks, o);
    if (!d->json)
        printf("%-5s %-10s %s\n", words[s], name, detail);
}

/* The full path of an executable found on PATH into out, or 0. */
static int on_path(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    const char *p = path ? path : "/usr/bin:/bin";

    while (*p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (path_fmt(out, n, "%.*s/%s", (int)len, len ? p : ".", name) == 0 &&
            access(out, X_OK) == 0)
            return 1;
        if (!colon)
            break;
        p = colon + 1;
    }
    return 0;
}

static void check_tool(struct doctor *d, const char *name, const char *const *alts, const char *why)
{
    char path[4096];

    for (int i = 0; alts[i]; i++)
        if (on_path(alts[i], path, sizeof(path))) {
            doctor_report(d, name, DOC_OK, NULL, "%s", path);
            return;
        }
    doctor_report(d, name, DOC_FAIL, NULL, "not found on PATH (%s)", why);
}

static int check_bwrap(struct doctor *d)
{
    static const char *const a[] = {"bwrap", NULL};
    check_tool(d, "bwrap", a, "the sandbox: apt-get install bubblewrap");
    return 0;
}

/* Not only present: a real `true` in the sandbox, as every command runs. */
static int check_sandbox(struct doctor *d)
{
    char detail[512] = "";

    if (sandbox_selftest(detail, sizeof(detail)) != 0)
        doctor_report(d, "sandbox", DOC_FAIL, NULL, "%s", err_last());
    else
        doctor_report(d, "sandbox", DOC_OK, NULL, "`true` ran in the sandbox (%s)", detail);
    return 0;
}

static int check_rg(struct doctor *d)
{
    static const char *const a[] = {"rg", NULL};
    check_tool(d, "rg", a, "the grep tool: apt-get install ripgrep");
    return 0;
}

static int check_fd(struct doctor *d)
{
    static const char *const a[] = {"fdfind", "fd", NULL};
    check_tool(d, "fd", a, "the find tool: apt-get install fd-find");
    return 0;
}

static int check_database(struct doctor *d)
{
    store *st;
    int v = 0;

    if (cli_store(d->c, &st) != 0) {
        doctor_report(d, "database", DOC_FAIL, NULL, "cannot open (see above)");
        return 0;
    }
    if (store_schema_version(st, &v) != 0) {
        doctor_report(d, "database", DOC_FAIL, NULL, "%s: %s", store_path(st), err_last());
        return 0;
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "path", store_path(st));
    cJSON_AddNumberToObject(x, "schema_version", v);
    doctor_report(d, "database", DOC_OK, x, "%s (schema %d of %d)", store_path(st), v,
                  store_schema_latest());
    return 0;
}

/* The identity goald's commits carry: vcs.author_name and
 * vcs.author_email, never the user's git config (goald signs its commits
 * with its own). */
static int check_git(struct doctor *d)
{
    const char *name = config_str(CFG_VCS_AUTHOR_NAME), *email = config_str(CFG_VCS_AUTHOR_EMAIL);
    int dflt = !strcmp(config_source(CFG_VCS_AUTHOR_NAME), "default") &&
               !strcmp(config_source(CFG_VCS_AUTHOR_EMAIL), "default");
    cJSON *x = cJSON_CreateObject();

    cJSON_AddStringToObject(x, "user_name", name);
    cJSON_AddStringToObject(x, "user_email", email);
    cJSON_AddBoolToObject(x, "default", dflt);
    doctor_report(d, "git", DOC_OK, x, "commits as %s <%s> (vcs.author_*%s)", name, email,
                  dflt ? ", the default" : "");
    return 0;
}

/* Whether a model needs a key: the hosted APIs do; a local
 * OpenAI-compatible server usually does not. */
static int key_required(const struct llm_model_info *mi)
{
    if (!strcmp(mi->provider, "script"))
        return 0;
    if (!strcmp(mi->provider, "anthropic"))
        return 1;
    return strstr(mi->base_url, "api.openai.com") != NULL;
}

static void round_trip(struct doctor *d, llm_client *cl, size_t i, const char *label)
{
    struct llm_message m;
    struct llm_request req;
    struct llm_response r;
    struct llm_error e;
    cJSON *x = cJSON_CreateObject();

    llm_message_init(&m, LLM_USER, "Reply with the single word: ok");
    memset(&req, 0, sizeof(req));
    req.stage = "doctor";
    req.messages = &m;
    req.nmessages = 1;
    req.max_output_tokens = 32;
    cJSON_AddNumberToObject(x, "index", (double)i);
    if (llm_chat(cl, (int)i, &req, &r, &e) == 0) {
        cJSON_AddStringToObject(x, "model", r.model);
        cJSON_AddNumberToObject(x, "tokens_in", (double)r.usage.input);
        cJSON_AddNumberToObject(x, "tokens_out", (double)r.usage.output);
        cJSON_AddNumberToObject(x, "latency_ms", (double)r.latency_ms);
        doctor_report(d, label, DOC_OK, x, "round trip: %s, %lld+%lld tokens, %lld ms", r.model,
                      (long long)r.usage.input, (long long)r.usage.output, (long long)r.latency_ms);
    } else {
        cJSON_AddStringToObject(x, "class", llm_error_class_name(e.cls));
        cJSON_AddNumberToObject(x, "status", e.http_status);
        doctor_report(d, label, DOC_FAIL, x, "round trip failed: %s: %s",
                      e.cls ? llm_error_class_name(e.cls) : "error",
                      e.message ? e.message : err_last());
    }
    llm_response_release(&r);
    llm_error_release(&e);
    llm_message_release(&m);
}

static int check_llm(struct doctor *d)
{
    llm_client *cl = NULL;

    /* no store: a round trip leaves no events, no usage, no script cursor */
    if (llm_client_open(&cl, NULL) != 0) {
        doctor_report(d, "llm", DOC_FAIL, NULL, "%s", err_last());
        return 0;
    }
    for (size_t i = 0; i < llm_client_nmodels(cl); i++) {
        struct llm_model_info mi;
        char label[32];
        enum doctor_status s = DOC_OK;
        cJSON *x = cJSON_CreateObject();

        llm_client_model(cl, i, &mi);
        snprintf(label, sizeof(label), "llm[%zu]", i); /* truncation: ok, a label with a number */
        cJSON_AddNumberToObject(x, "index", (double)i);
        cJSON_AddStringToObject(x, "provider", mi.provider);
        cJSON_AddStringToObject(x, "model", mi.model);
        cJSON_AddStringToObject(x, "base_url", mi.base_url);
        cJSON_AddStringToObject(x, "api_key_env", mi.api_key_env);
        cJSON_AddBoolToObject(x, "key_set", mi.key_set);
        cJSON_AddNumberToObject(x, "price_in", mi.price_in);
        cJSON_AddNumberToObject(x, "price_cached_in", mi.price_cached_in);
        cJSON_AddNumberToObject(x, "price_out", mi.price_out);
        if (!strcmp(mi.provider, "script")) {
            cJSON_AddStringToObject(x, "script", mi.script);
            s = access(mi.script, R_OK) == 0 ? DOC_OK : DOC_FAIL;
            doctor_report(d, label, s, x, "script %s%s", mi.script,
                          s == DOC_OK ? "" : " (cannot read it)");
        } else {
            if (!mi.key_set && key_required(&mi))
                s = DOC_FAIL;
            else if (!mi.key_set && *mi.api_key_env)
                s = DOC_WARN;
            doctor_report(d, label, s, x, "%s %s at %s, key %s %s", mi.provider, mi.model,
                          mi.base_url, mi.api_key_env,
                          mi.key_set          ? "set"
                          : key_required(&mi) ? "NOT SET"
                                              : "not set (optional here)");
        }
        if (d->llm_round_trip)
            round_trip(d, cl, i, label);
    }
    llm_client_free(cl);
    return 0;
}

struct doctor_check {
    const char *name;
    int (*run)(struct doctor *d);
};

/* One row per check; a new check is one more row. */
static const struct doctor_check doctor_checks[] = {
    {"llm", check_llm}, {"database", check_database},
    {"git", check_git}, {"bwrap", check_bwrap}, {"sandbox", check_sandbox},
    {"rg", check_rg},   {"fd", check_fd},
};

static int run(struct cli_ctx *c)
{
    struct doctor d;

    memset(&d, 0, sizeof(d));
    d.c = c;
    d.json = cli_flag(c, "json");
    d.llm_round_trip = cli_flag(c, "llm");
    d.checks = cJSON_CreateArray();
    for (size_t i = 0; i < sizeof(doctor_checks) / sizeof(doctor_checks[0]); i++)
        doctor_checks[i].run(&d);
    if (d.json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "ok", !d.failed);
        cJSON_AddItemToObject(o, "checks", d.checks);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("%s\n", d.failed ? "some checks failed" : "all checks passed");
        cJSON_Delete(d.checks);
    }
    return d.failed ? EXIT_FAIL : EXIT_OK;
}

const struct cli_command cmd_doctor = {
    .name = "doctor",
    .args = "",
    .summary = "check bubblewrap, rg, fd, goald's commit identity, the database and the LLM config",
    .details = "Lists the configured models (provider, model, base URL, which key variable and\n"
               "whether it is set - never its value).  Exit 0 when no check failed, 1 otherwise.",
    .opts = (const struct cli_opt[]){{"llm", NULL, "make one round trip to each configured model"},
                                     {"json", NULL, "print JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "{\"ok\", \"checks\": [{\"name\", \"status\": \"ok|warn|fail\", \"detail\", "
                  "...}]}",
};
