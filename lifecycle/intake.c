/*
 * intake.c - stage 1: a goal's JSON becomes a queued goal.
 *
 * Read top to bottom: the checking helpers (each error is collected in a
 * struct ctx with its JSON path, so one pass reports them all), then
 * intake_parse_all(): parse_text() (one JSON object, nothing after it),
 * the unknown keys, then each field in the order of fields[] (title and
 * description, priority, budget, deadline, base branch, repository,
 * criteria and verification, protected paths, allowed actions, schedule,
 * publish).  intake_submit() (intake_submit.c) stores the goal; the
 * elaborate stage (elaborate.c) takes it next.
 */
#include "lifecycle/intake.h"
#include "lifecycle/intake_roots.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "llm/llm.h"
#include "store/event.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/err.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/url.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/clone.h"
#include "vcs/forge.h"
#include "vcs/push.h"
#include "vcs/repo.h"

const char *const intake_actions[] = {"ls",    "find", "grep",      "read",     "write",
                                      "edit",  "bash", "run_gates", "complete", "ask_human",
                                      NULL};

static const char *const top_keys[] = {
    "title",         "description", "priority", "budget",   "deadline",
    "repo",          "base_branch", "success_criteria",     "verification",
    "allowed_actions", "schedule",  "publish",  "protected_paths", "schedule_branch", NULL};
static const char *const budget_keys[] = {"max_tokens", "max_hours", "max_cost_usd", NULL};
static const char *const gate_keys[] = {"name", "type",   "command",    "must_pass",
                                        "timeout_s", "report", "build_dirs", NULL};
static const char *const gate_types[] = {"test", "build", "lint", "typecheck", "custom", NULL};
static const char *const publish_keys[] = {"push", "remote", "pull_request", NULL};

/* Errors are collected: every field is checked and every message kept
 * (errs, one a line, may be NULL); the slot ends with the first one. */
struct ctx {
    const char *fname;
    strbuf *errs;
    int nerr;
    char first[ERR_MSG_MAX];
    /* a goal from the HTTP API: its repo path as resolved under http.repos
     * (intake_parse_api), probed and stored instead of the text given */
    char repo_real[PATH_MAX];
};

/* The message of a URL holding a credential: the URL shown masked. */
#define CREDENTIAL_MSG                                                                             \
    "holds a credential (%s): give it to goald in the environment variable vcs.push_token_env "  \
    "or forge.token_env names (docs/publishing.md), not in the URL"

/* Describe a JSON value for "got ..." in messages, capped. */
static void describe(char *out, size_t n, const cJSON *v)
{
    if (cJSON_IsString(v)) {
        /* truncation: ok, a value shown in a message */
        snprintf(out, n, "\"%.60s%s\"", v->valuestring,
                 strlen(v->valuestring) > 60 ? "..." : "");
    } else if (cJSON_IsNumber(v)) {
        snprintf(out, n, "%.17g", v->valuedouble); /* truncation: ok, a value shown in a message */
    } else if (cJSON_IsBool(v)) {
        snprintf(out, n, "%s", cJSON_IsTrue(v) ? "true" : "false"); /* truncation: ok, a message */
    } else if (cJSON_IsNull(v)) {
        snprintf(out, n, "null"); /* truncation: ok, a value shown in a message */
    } else if (cJSON_IsArray(v)) {
        snprintf(out, n, "an array"); /* truncation: ok, a value shown in a message */
    } else {
        snprintf(out, n, "an object"); /* truncation: ok, a value shown in a message */
    }
}

/* Keep the message in the slot as one of c's errors; ERR_INVALID. */
static int collect(struct ctx *c)
{
    if (c->nerr++ == 0)
        snprintf(c->first, sizeof(c->first), "%s", err_last()); /* truncation: ok, a message */
    if (c->errs) {
        strbuf_addf_cut(c->errs, "%s\n", err_last()); /* shown to the user: cut at its cap */
    }
    return ERR_INVALID;
}

static int fail(const struct ctx *c, const char *path, const cJSON *got, const char *fmt, ...)
    GOALD_PRINTF(4, 5);

static int fail(const struct ctx *c, const char *path, const cJSON *got, const char *fmt, ...)
{
    char msg[512];
    char g[128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (got) {
        describe(g, sizeof(g), got);
        err_set(ERR_INVALID, "%s: %s: %s, got %s", c->fname, path, msg, g);
    } else {
        err_set(ERR_INVALID, "%s: %s: %s", c->fname, path, msg);
    }
    return collect((struct ctx *)c);
}

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return 1;
    return 0;
}

/* Refuse unknown and duplicate keys of an object at path (prefix). */
static int check_keys(const struct ctx *c, const cJSON *obj, const char *prefix,
                      const char *const *allowed)
{
    const cJSON *it;
    char path[256];
    int rc = 0;

    cJSON_ArrayForEach(it, obj)
    {
        /* truncation: ok, a field named in a message */
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", it->string);
        if (!in_list(it->string, allowed)) {
            rc = fail(c, path, NULL, "unknown key");
            continue;
        }
        for (const cJSON *o = obj->child; o != it; o = o->next)
            if (!strcmp(o->string, it->string)) {
                rc = fail(c, path, NULL, "duplicate key");
                break;
            }
    }
    return rc;
}

static size_t utf8_len(const char *s)
{
    return utf8_count(s, strlen(s));
}

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return 0;
    return 1;
}

static char *print_json(const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);
    char *p;

    xcheck(t);
    p = xstrdup(t);
    cJSON_free(t);
    return p;
}

static int get_string(const struct ctx *c, const cJSON *root, const char *key, int nonempty,
                      const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

    *out = NULL;
    if (!v)
        return 0;
    if (!cJSON_IsString(v))
        return fail(c, key, v, "expected a string");
    if (nonempty && is_blank(v->valuestring))
        return fail(c, key, NULL, "must not be empty");
    *out = v->valuestring;
    return 0;
}

static int positive_number(const struct ctx *c, const cJSON *b, const char *key,
                           const char *path, int integer, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, key);

    *out = -1;
    if (!v)
        return 0;
    if (integer) {
        if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || v->valuedouble != floor(v->valuedouble) ||
            v->valuedouble > (double)INT64_MAX / 2)
            return fail(c, path, v, "expected a positive integer");
    } else if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble)) {
        return fail(c, path, v, "expected a positive number");
    }
    *out = v->valuedouble;
    return 0;
}

static int check_string_array(const struct ctx *c, const cJSON *v, const char *key,
                              const char *const *allowed)
{
    const cJSON *it;
    char path[128];
    int i = 0;

    if (!cJSON_IsArray(v))
        return fail(c, key, v, "expected an array of strings");
    cJSON_ArrayForEach(it, v)
    {
        snprintf(path, sizeof(path), "%s[%d]", key, i); /* truncation: ok, a message */
        if (!cJSON_IsString(it) || is_blank(it->valuestring))
            return fail(c, path, it, "expected a non-empty string");
        if (allowed && !in_list(it->valuestring, allowed))
            return fail(c, path, it,
                        "unknown action (expected one of ls, find, grep, read, write, edit, "
                        "bash, run_gates, complete, ask_human)");
        i++;
    }
    return 0;
}

static int check_gate(const struct ctx *c, const cJSON *g, int i);

/* A gate's build folders (gates_build_dirs_check), the bad one named. */
static int check_build_dirs(const struct ctx *c, const cJSON *v, int i)
{
    char path[128], why[512];
    int bad = -1;

    if (gates_build_dirs_check(v, why, sizeof(why), &bad) == 0)
        return 0;
    if (bad < 0) {
        snprintf(path, sizeof(path), "verification[%d].build_dirs", i); /* truncation: ok, fits */
        return fail(c, path, v, "%s", why);
    }
    snprintf(path, sizeof(path), "verification[%d].build_dirs[%d]", i, bad); /* truncation: ok, fits */
    /* why starts with "[bad]: " */
    return fail(c, path, cJSON_GetArrayItem(v, bad), "%s",
                strstr(why, "]: ") ? strstr(why, "]: ") + 3 : why);
}

/* Every gate is checked (the first problem of each is reported). */
static int check_verification(const struct ctx *c, const cJSON *v)
{
    const cJSON *g;
    int i = 0, rc = 0;

    if (!cJSON_IsArray(v))
        return fail(c, "verification", v, "expected an array of gates");
    cJSON_ArrayForEach(g, v)
    {
        if (check_gate(c, g, i++) != 0)
            rc = ERR_INVALID;
    }
    return rc;
}

static int check_gate(const struct ctx *c, const cJSON *g, int i)
{
    char path[128];

    {
        const cJSON *f;
        int rc;
        snprintf(path, sizeof(path), "verification[%d]", i); /* truncation: ok, a message */
        if (!cJSON_IsObject(g))
            return fail(c, path, g, "expected an object");
        if ((rc = check_keys(c, g, path, gate_keys)) != 0)
            return rc;
        f = cJSON_GetObjectItemCaseSensitive(g, "name");
        snprintf(path, sizeof(path), "verification[%d].name", i); /* truncation: ok, a message */
        if (!f)
            return fail(c, path, NULL, "required");
        if (!cJSON_IsString(f) || is_blank(f->valuestring))
            return fail(c, path, f, "expected a non-empty string");
        if (strlen(f->valuestring) >= 128)
            return fail(c, path, NULL, "at most 127 bytes");
        f = cJSON_GetObjectItemCaseSensitive(g, "command");
        snprintf(path, sizeof(path), "verification[%d].command", i); /* truncation: ok, a message */
        if (!f)
            return fail(c, path, NULL, "required");
        if (!cJSON_IsString(f) || is_blank(f->valuestring))
            return fail(c, path, f, "expected a non-empty string");
        f = cJSON_GetObjectItemCaseSensitive(g, "type");
        snprintf(path, sizeof(path), "verification[%d].type", i); /* truncation: ok, a message */
        if (f && (!cJSON_IsString(f) || !in_list(f->valuestring, gate_types)))
            return fail(c, path, f, "expected one of test, build, lint, typecheck, custom");
        f = cJSON_GetObjectItemCaseSensitive(g, "must_pass");
        /* truncation: ok, a field named in a message */
        snprintf(path, sizeof(path), "verification[%d].must_pass", i);
        if (f && !cJSON_IsBool(f))
            return fail(c, path, f, "expected true or false");
        f = cJSON_GetObjectItemCaseSensitive(g, "timeout_s");
        /* truncation: ok, a field named in a message */
        snprintf(path, sizeof(path), "verification[%d].timeout_s", i);
        if (f && (!cJSON_IsNumber(f) || f->valuedouble < 1 || f->valuedouble > 86400 ||
                  f->valuedouble != floor(f->valuedouble)))
            return fail(c, path, f, "expected an integer from 1 to 86400");
        f = cJSON_GetObjectItemCaseSensitive(g, "report");
        snprintf(path, sizeof(path), "verification[%d].report", i); /* truncation: ok, a message */
        if (f && (!cJSON_IsString(f) || is_blank(f->valuestring)))
            return fail(c, path, f, "expected a non-empty string");
        f = cJSON_GetObjectItemCaseSensitive(g, "build_dirs");
        if (f && check_build_dirs(c, f, i) != 0)
            return ERR_INVALID;
    }
    return 0;
}

static int check_publish(const struct ctx *c, const cJSON *v)
{
    const cJSON *f;
    int rc;

    if (!cJSON_IsObject(v))
        return fail(c, "publish", v, "expected an object");
    if ((rc = check_keys(c, v, "publish", publish_keys)) != 0)
        return rc;
    if ((f = cJSON_GetObjectItemCaseSensitive(v, "push")) && !cJSON_IsBool(f))
        return fail(c, "publish.push", f, "expected true or false");
    if ((f = cJSON_GetObjectItemCaseSensitive(v, "pull_request")) && !cJSON_IsBool(f))
        return fail(c, "publish.pull_request", f, "expected true or false");
    if ((f = cJSON_GetObjectItemCaseSensitive(v, "remote")) &&
        (!cJSON_IsString(f) || is_blank(f->valuestring)))
        return fail(c, "publish.remote", f, "expected a non-empty string");
    if (f && url_has_credential(f->valuestring)) {
        char shown[256];
        return fail(c, "publish.remote", NULL, CREDENTIAL_MSG,
                    url_mask(shown, sizeof(shown), f->valuestring));
    }
    return 0;
}

/* A pull request needs a forge that can take it: refuse at submit what
 * could only escalate at publish time (a plain path remote, a host
 * without a forge). */
static int check_publish_forge(const struct ctx *c, const struct goal *g, const cJSON *pub)
{
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(pub, "pull_request");
    const char *remote = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pub, "remote"));
    char url[2048];

    if (!cJSON_IsTrue(pr))
        return 0;
    if (!g->repo)
        return fail(c, "publish.pull_request", NULL, "needs \"repo\"");
    if (!remote)
        remote = "origin";
    if (vcs_repo_is_shared(g->repo)) {
        /* clone mode: "origin" is the goal's repo itself; another name is
         * not a remote of the node's clone, a URL stands for itself */
        if (path_fmt(url, sizeof(url), "%s", !strcmp(remote, "origin") ? g->repo : remote) != 0)
            return fail(c, "publish.pull_request", NULL, "the remote: %s", err_last());
    } else if (vcs_remote_url(url, sizeof(url), g->repo, remote) != 0) {
        /* no such remote (yet): the push will say so; nothing to judge here */
        return 0;
    }
    if (vcs_forge_can_pr(remote, url) != 0)
        return fail(c, "publish.pull_request", NULL, "%s", err_last());
    return 0;
}

/* Line and column of byte offset off in text, for parse errors. */
static void line_col(const char *text, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int intake_parse(struct goal **out, const char *text, size_t len, const char *fname)
{
    return intake_parse_all(out, text, len, fname, NULL, NULL);
}

/* The JSON of the file: one object and nothing after it but whitespace.
 * *out is freed with cJSON_Delete(). */
static int parse_text(cJSON **out, const char *text, size_t len, const char *fname)
{
    const char *endp = NULL;
    cJSON *root;

    *out = NULL;
    if (len > INTAKE_MAX_BYTES)
        return err_set(ERR_INVALID, "%s: larger than %d bytes", fname, INTAKE_MAX_BYTES);
    if (memchr(text, '\0', len))
        return err_set(ERR_INVALID, "%s: contains a NUL byte", fname);
    root = cJSON_ParseWithLengthOpts(text, len, &endp, 0);
    if (!root) {
        int line, col;
        size_t off = endp ? (size_t)(endp - text) : 0;
        line_col(text, off, &line, &col);
        return err_set(ERR_INVALID, "%s: not valid JSON (line %d, column %d)", fname, line,
                       col);
    }
    /* only whitespace may follow the object */
    for (const char *p = endp; p && p < text + len; p++) {
        if (!isspace((unsigned char)*p)) {
            int line, col;
            line_col(text, (size_t)(p - text), &line, &col);
            cJSON_Delete(root);
            return err_set(ERR_INVALID, "%s: unexpected text after the goal (line %d, column %d)",
                           fname, line, col);
        }
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return err_set(ERR_INVALID, "%s: expected a JSON object", fname);
    }
    *out = root;
    return 0;
}

/* The field parsers, in the order the fields are checked (base_branch
 * before repo, schedule before schedule_branch).  Each collects its errors
 * in c and fills g. */
static void field_title(struct ctx *c, const cJSON *root, struct goal *g)
{
    const char *s;

    if (!cJSON_GetObjectItemCaseSensitive(root, "title")) {
        fail(c, "title", NULL, "required");
    } else if (get_string(c, root, "title", 1, &s) == 0) {
        if (utf8_len(s) > (size_t)config_int(CFG_INTAKE_MAX_TITLE))
            fail(c, "title", NULL, "expected at most %lld characters, got %zu",
                 (long long)config_int(CFG_INTAKE_MAX_TITLE), utf8_len(s));
        else
            g->title = xstrdup(s);
    }
    if (get_string(c, root, "description", 0, &s) == 0)
        g->description = xstrdup(s ? s : "");
}

static void field_priority(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "priority");

    if (!v)
        return;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 100)
        fail(c, "priority", v, "expected an integer from 0 to 100");
    else
        g->priority = (int)v->valuedouble;
}

/* A USD cap needs a price for every model the chain may use (a model
 * without one would count as $0 against it).  Checked here when this
 * process can read a chain; else when a stage starts (job.c). */
static void cost_cap_prices(struct ctx *c, const cJSON *v)
{
    llm_client *cl = NULL;

    if (llm_client_open(&cl, NULL) != 0) {
        err_clear();
        return;
    }
    if (llm_client_prices_check(cl) != 0)
        fail(c, "budget.max_cost_usd", v, "%s", err_last());
    llm_client_free(cl);
}

static void field_budget(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "budget");
    double num;

    if (!v)
        return;
    if (!cJSON_IsObject(v)) {
        fail(c, "budget", v, "expected an object");
        return;
    }
    check_keys(c, v, "budget", budget_keys);
    if (positive_number(c, v, "max_tokens", "budget.max_tokens", 1, &num) == 0)
        g->budget_max_tokens = num > 0 ? (int64_t)num : -1;
    if (positive_number(c, v, "max_hours", "budget.max_hours", 0, &num) == 0)
        g->budget_max_hours = num;
    if (positive_number(c, v, "max_cost_usd", "budget.max_cost_usd", 0, &num) == 0)
        g->budget_max_cost_usd = num;
    if (g->budget_max_cost_usd > 0)
        cost_cap_prices(c, cJSON_GetObjectItemCaseSensitive(v, "max_cost_usd"));
}

static void field_deadline(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "deadline");

    if (v && (!cJSON_IsString(v) || time_parse_rfc3339(&g->deadline_at, v->valuestring) != 0)) {
        g->deadline_at = -1;
        fail(c, "deadline", v, "expected an RFC 3339 date-time such as 2026-12-01T18:00:00Z");
    }
}

static void field_base_branch(struct ctx *c, const cJSON *root, struct goal *g)
{
    const char *s;

    if (get_string(c, root, "base_branch", 1, &s) == 0 && s) {
        if (!vcs_branch_name_valid(s))
            fail(c, "base_branch", cJSON_GetObjectItemCaseSensitive(root, "base_branch"),
                 "expected a valid branch name");
        else
            g->base_branch = xstrdup(s);
    }
}

/* A repo path written "~" or "~/..." as a shell would read it: under
 * $HOME, into buf (n bytes).  NULL after a field error when it cannot be
 * (another user's "~name", no HOME, too long): no shell expands it for
 * goald, and a folder named "~" is never what was meant. */
static const char *expand_home(char *buf, size_t n, struct ctx *c, const char *s)
{
    const char *home = getenv("HOME");
    int w;

    if (s[1] != '\0' && s[1] != '/') {
        fail(c, "repo", NULL,
             "\"%s\": \"~name\" is not expanded; write the repository's absolute path", s);
        return NULL;
    }
    if (!home || home[0] != '/') {
        fail(c, "repo", NULL,
             "\"%s\": HOME is not set to an absolute path to expand \"~\"; "
             "write the repository's absolute path",
             s);
        return NULL;
    }
    w = snprintf(buf, n, "%s%s", home, s + 1);
    if (w < 0 || (size_t)w >= n) {
        fail(c, "repo", NULL, "\"%s\": too long once \"~\" is expanded", s);
        return NULL;
    }
    return buf;
}

/* The repository: probed (it exists, the base branch is in it); its head
 * is the base branch when none is given.  A git URL (clone mode,
 * docs/scaling.md) is checked for its syntax only, and needs a base
 * branch: what the remote holds shows at the first run. */
static void field_repo(struct ctx *c, const cJSON *root, struct goal *g)
{
    char abs[4096], head[256], tilde[PATH_MAX];
    const char *s;
    int prc;

    if (get_string(c, root, "repo", 1, &s) != 0)
        return;
    if (!s) {
        if (g->base_branch)
            fail(c, "base_branch", NULL, "needs \"repo\"");
        return;
    }
    if (url_has_credential(s)) {
        char shown[256];
        fail(c, "repo", NULL, CREDENTIAL_MSG, url_mask(shown, sizeof(shown), s));
        return;
    }
    if (c->repo_real[0])
        s = c->repo_real; /* what http.repos admitted, symbolic links resolved */
    else if (s[0] == '~' && (s = expand_home(tilde, sizeof(tilde), c, s)) == NULL)
        return;
    if (vcs_repo_is_url(s)) {
        if (!g->base_branch && !cJSON_GetObjectItemCaseSensitive(root, "base_branch"))
            fail(c, "base_branch", NULL, "required with a git URL as \"repo\"");
        g->repo = xstrdup(s);
        return;
    }
    prc = vcs_repo_probe(s, g->base_branch, abs, sizeof(abs), head, sizeof(head));
    if (prc == ERR_NOTFOUND && g->base_branch && vcs_repo_probe(s, NULL, NULL, 0, NULL, 0) == 0) {
        fail(c, "base_branch", NULL, "%s", err_last());
    } else if (prc) {
        fail(c, "repo", NULL, "%s", err_last());
    } else {
        g->repo = xstrdup(abs);
        if (!g->base_branch && head[0])
            g->base_branch = xstrdup(head);
    }
}

static void field_criteria(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "success_criteria");

    if (v) {
        if (check_string_array(c, v, "success_criteria", NULL) == 0)
            g->success_criteria = print_json(v);
    } else {
        g->success_criteria = xstrdup("[]");
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "verification")) &&
        check_verification(c, v) == 0)
        g->verification = print_json(v);
}

static void field_protected_paths(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "protected_paths"), *it;
    char path[128];
    int i = 0;

    (void)g;
    if (!v || check_string_array(c, v, "protected_paths", NULL) != 0)
        return;
    cJSON_ArrayForEach(it, v)
    {
        snprintf(path, sizeof(path), "protected_paths[%d]", i++); /* truncation: ok, a message */
        if (it->valuestring[0] == '/' || !strncmp(it->valuestring, "../", 3) ||
            strstr(it->valuestring, "/../"))
            fail(c, path, it, "expected a glob relative to the repository (as "
                              "\"tests/**\" or \"test.sh\")");
    }
}

static void field_actions(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "allowed_actions");

    if (v && check_string_array(c, v, "allowed_actions", intake_actions) == 0)
        g->allowed_actions = print_json(v);
}

static void field_schedule(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v;
    const char *s;

    if (get_string(c, root, "schedule", 1, &s) == 0 && s) {
        struct cron_expr ce;
        if (cron_parse(&ce, s) != 0) {
            fail(c, "schedule", NULL, "%s", err_last());
        } else {
            g->schedule = xstrdup(s);
            g->is_template = 1;
        }
    }
    /* where a template's instances work: one branch for all (default) */
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "schedule_branch"))) {
        /* collected like every other field's error: the pass goes on */
        if (!cJSON_IsString(v) || (strcmp(v->valuestring, "per_template") != 0 &&
                                   strcmp(v->valuestring, "per_run") != 0))
            fail(c, "schedule_branch", v, "expected \"per_template\" or \"per_run\"");
        else if (!g->schedule)
            fail(c, "schedule_branch", NULL, "needs \"schedule\"");
    }
}

/* Clone mode publishes from the node's clone, whose only remote is
 * "origin" (the goal's repo): another name is refused, a URL or a path
 * stands for itself. */
static int check_publish_clone(const struct ctx *c, const struct goal *g, const cJSON *pub)
{
    const char *remote = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pub, "remote"));

    if (!remote || !g->repo || !strcmp(remote, "origin") || strchr(remote, '/') ||
        strchr(remote, ':') || !vcs_repo_is_shared(g->repo))
        return 0;
    return fail(c, "publish.remote", NULL,
                "a goal whose repo is a git URL or a bare repository publishes to \"origin\" "
                "(that repo) or to a URL or path, not to the remote \"%s\"",
                remote);
}

static void field_publish(struct ctx *c, const cJSON *root, struct goal *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "publish");

    if (v && check_publish(c, v) == 0 && check_publish_clone(c, g, v) == 0) {
        check_publish_forge(c, g, v);
        g->publish = print_json(v);
    }
}

static void (*const fields[])(struct ctx *c, const cJSON *root, struct goal *g) = {
    field_title,       field_priority, field_budget,          field_deadline,
    field_base_branch, field_repo,     field_criteria,        field_protected_paths,
    field_actions,     field_schedule, field_publish,
};

/* Parse and check a goal (intake_parse_all); api: it came over the HTTP
 * API, confined to http.repos and http.remotes before any field is
 * looked at (no repository outside them is even opened). */
static int parse_goal(struct goal **out, const char *text, size_t len, const char *fname,
                      strbuf *errors, strbuf *warnings, int api)
{
    struct ctx c = {fname, errors, 0, "", ""};
    cJSON *root = NULL;
    struct goal *g = NULL;
    int rc;

    if (api && cJSON_GetArraySize(config_json(CFG_HTTP_REPOS)) == 0)
        return err_set(ERR_POLICY, "submitting goals over HTTP is off: http.repos is empty (the "
                                   "operator sets it to the folders and URL prefixes goals "
                                   "submitted over HTTP may name)");
    if ((rc = parse_text(&root, text, len, fname)) != 0)
        return rc;
    if (api && (rc = intake_confine(root, c.fname, c.repo_real, sizeof(c.repo_real))) != 0) {
        cJSON_Delete(root);
        return rc;
    }
    /* every field is checked; the errors are collected (struct ctx) */
    check_keys(&c, root, "", top_keys);

    g = xcalloc(1, sizeof(*g));
    g->deadline_at = g->budget_max_tokens = -1;
    g->budget_max_cost_usd = g->budget_max_hours = -1;
    g->started_at = g->ended_at = -1;
    g->priority = 50;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        fields[i](&c, root, g);
    if (c.nerr) {
        rc = err_set(ERR_INVALID, "%s", c.first);
        goto out;
    }
    /* A deadline already past is accepted (the monitor escalates
     * it at once, as for any goal past its deadline) and warned about */
    if (warnings && g->deadline_at >= 0 && g->deadline_at < time_now_ms()) {
        char t[TIME_RFC3339_MAX];
        strbuf_addf_cut(warnings,
                        "%s: deadline: %s is in the past: the goal will be escalated "
                        "as overdue at once\n",
                        fname, time_format_rfc3339(t, sizeof(t), g->deadline_at));
    }
    g->spec = print_json(root);
    g->status = xstrdup("queued");
    *out = g;
    g = NULL;
out:
    store_goal_free(g);
    cJSON_Delete(root);
    return rc;
}

int intake_parse_all(struct goal **out, const char *text, size_t len, const char *fname,
                     strbuf *errors, strbuf *warnings)
{
    return parse_goal(out, text, len, fname, errors, warnings, 0);
}

int intake_parse_api(struct goal **out, const char *text, size_t len, const char *fname,
                     strbuf *errors, strbuf *warnings)
{
    return parse_goal(out, text, len, fname, errors, warnings, 1);
}
