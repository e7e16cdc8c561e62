/* The registry, argument validation, tool_call() and its events. */
#include "tools/tool.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/path.h"
#include "sandbox/spill.h"
#include "store/event.h"
#include "tools/internal.h"
#include "util/redact.h"
#include "tools/truncate.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/jsonbig.h"
#include "util/jsonobj.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define TOOL_MAX 32
#define EVENT_ARGS_MAX 2000 /* characters of arguments kept in an event */
#define EVENT_ERROR_MAX 500

static const struct tool_def *registry[TOOL_MAX];
static cJSON *schemas[TOOL_MAX];
static size_t nreg;
static int builtins_done;

static int add(const struct tool_def *def)
{
    cJSON *schema;

    for (size_t i = 0; i < nreg; i++)
        if (!strcmp(registry[i]->name, def->name))
            return err_set(ERR_INVALID, "tool %s: already registered", def->name);
    if (nreg >= TOOL_MAX)
        return err_set(ERR_INVALID, "tool %s: the registry is full", def->name);
    schema = cJSON_Parse(def->parameters ? def->parameters : "{}");
    if (!schema || !cJSON_IsObject(schema)) {
        cJSON_Delete(schema);
        return err_set(ERR_INVALID, "tool %s: its parameters are not a JSON object", def->name);
    }
    registry[nreg] = def;
    schemas[nreg] = schema;
    nreg++;
    return 0;
}

static void builtins(void)
{
    static const struct tool_def *const defs[] = {
        &tool_def_ls,       &tool_def_find,      &tool_def_grep, &tool_def_read,
        &tool_def_write,    &tool_def_edit,      &tool_def_bash, &tool_def_run_gates,
        &tool_def_complete, &tool_def_ask_human, &tool_def_run_at_start,
    };

    if (builtins_done)
        return;
    builtins_done = 1;
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (add(defs[i]) != 0)
            abort(); /* a broken builtin schema is a bug */
}

int tool_register(const struct tool_def *def)
{
    builtins();
    if (!def || !def->name || !*def->name)
        return err_set(ERR_INVALID, "tool: a name is required");
    return add(def);
}

static int find_index(const char *name)
{
    builtins();
    for (size_t i = 0; i < nreg; i++)
        if (!strcmp(registry[i]->name, name))
            return (int)i;
    return -1;
}

const struct tool_def *tool_find(const char *name)
{
    int i = name ? find_index(name) : -1;
    return i < 0 ? NULL : registry[i];
}

size_t tool_count(void)
{
    builtins();
    return nreg;
}

const struct tool_def *tool_at(size_t i)
{
    builtins();
    return i < nreg ? registry[i] : NULL;
}

int tool_allowed(const char *const *allowed, const char *name)
{
    static const char *const readers[] = {"ls", "find", "grep"};

    if (!allowed)
        return 1;
    if (!strcmp(name, "complete") || !strcmp(name, "ask_human"))
        return 1;
    for (size_t i = 0; allowed[i]; i++) {
        if (!strcmp(allowed[i], name))
            return 1;
        /* a command in the sandbox, as bash runs one */
        if (!strcmp(allowed[i], "bash") && !strcmp(name, "run_at_start"))
            return 1;
        if (!strcmp(allowed[i], "read"))
            for (size_t k = 0; k < sizeof(readers) / sizeof(readers[0]); k++)
                if (!strcmp(readers[k], name))
                    return 1;
    }
    return 0;
}

cJSON *tool_schemas(const char *const *allowed)
{
    cJSON *arr = cJSON_CreateArray();

    builtins();
    for (size_t i = 0; i < nreg; i++) {
        cJSON *o;
        if (!tool_allowed(allowed, registry[i]->name))
            continue;
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", registry[i]->name);
        cJSON_AddStringToObject(o, "description", registry[i]->description);
        cJSON_AddItemToObject(o, "parameters", cJSON_Duplicate(schemas[i], 1));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* --- results ------------------------------------------------------------ */

const char *tool_class_name(enum tool_class c)
{
    switch (c) {
    case TOOL_OK:
        return "";
    case TOOL_VALIDATION:
        return "validation";
    case TOOL_POLICY:
        return "policy";
    case TOOL_NOT_FOUND:
        return "not_found";
    case TOOL_TIMEOUT:
        return "timeout";
    case TOOL_IO:
        return "io";
    case TOOL_EXIT:
        return "exit";
    }
    return "io";
}

void tool_result_init(struct tool_result *r)
{
    memset(r, 0, sizeof(*r));
    strbuf_init(&r->output, 0);
    r->ok = 1;
}

void tool_result_release(struct tool_result *r)
{
    if (!r)
        return;
    strbuf_release(&r->output);
    free(r->spill_path);
    cJSON_Delete(r->meta);
    memset(r, 0, sizeof(*r));
}

int tool_fail(struct tool_result *r, enum tool_class c, const char *fmt, ...)
{
    va_list ap;

    r->ok = 0;
    r->error_class = c;
    if (r->exit_code == 0)
        r->exit_code = 1;
    strbuf_reset(&r->output);
    va_start(ap, fmt);
    if (strbuf_vaddf(&r->output, fmt, ap) != 0 &&
        strbuf_adds(&r->output, "[the message is too long to show]") != 0)
        abort(); /* the emptied output holds one short line: impossible */
    va_end(ap);
    return 0;
}

cJSON *tool_meta(struct tool_result *res)
{
    if (!res->meta)
        res->meta = cJSON_CreateObject();
    return res->meta;
}

cJSON *tool_result_json(const struct tool_result *r)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddBoolToObject(o, "ok", r->ok);
    cJSON_AddBoolToObject(o, "is_error", !r->ok);
    cJSON_AddNumberToObject(o, "exit_code", r->exit_code);
    cJSON_AddStringToObject(o, "output", strbuf_cstr(&r->output));
    cJSON_AddBoolToObject(o, "truncated", r->truncated);
    jsonobj_add_str_or_null(o, "truncated_by", r->truncated_by);
    cJSON_AddNumberToObject(o, "total_lines", (double)r->total_lines);
    cJSON_AddNumberToObject(o, "total_bytes", (double)r->total_bytes);
    if (r->next_offset > 0)
        cJSON_AddNumberToObject(o, "next_offset", (double)r->next_offset);
    else
        cJSON_AddNullToObject(o, "next_offset");
    jsonobj_add_str_or_null(o, "spill_path", r->spill_path);
    cJSON_AddItemToObject(o, "meta", r->meta ? cJSON_Duplicate(r->meta, 1) : cJSON_CreateObject());
    if (!r->ok)
        cJSON_AddStringToObject(o, "error_class", tool_class_name(r->error_class));
    return o;
}

/* --- helpers for the tools --------------------------------------------- */

const char *targ_str(const cJSON *args, const char *name, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The schema checks the type and the bounds it names, not the magnitude:
 * clamp to +-1e15 (past any line count or limit, and far from overflowing
 * the arithmetic the tools do on it) before converting, since converting
 * 1e300 is undefined. */
int64_t targ_int(const cJSON *args, const char *name, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    if (!cJSON_IsNumber(v))
        return dflt;
    if (v->valuedouble >= 1e15)
        return (int64_t)1e15;
    if (v->valuedouble <= -1e15)
        return (int64_t)-1e15;
    return (int64_t)v->valuedouble;
}

int targ_bool(const cJSON *args, const char *name, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

enum tool_class tool_class_of(int err)
{
    switch (err) {
    case ERR_INVALID:
    case ERR_TOOBIG:
        return TOOL_VALIDATION;
    case ERR_POLICY:
        return TOOL_POLICY;
    case ERR_NOTFOUND:
        return TOOL_NOT_FOUND;
    case ERR_TIMEOUT:
        return TOOL_TIMEOUT;
    default:
        return TOOL_IO;
    }
}

int tool_fail_err(struct tool_result *res, int rc)
{
    return tool_fail(res, tool_class_of(rc), "%s", err_last()[0] ? err_last() : err_name(rc));
}

int tool_path(struct tool_ctx *ctx, struct tool_result *res, const char *path, char *rel, size_t n)
{
    int rc = path_rel(rel, n, ctx->root, path && *path ? path : ".");

    if (rc)
        tool_fail_err(res, rc);
    return rc;
}

size_t tool_max_lines(void)
{
    return (size_t)config_int(CFG_TOOLS_MAX_LINES);
}

size_t tool_max_bytes(void)
{
    return (size_t)config_int(CFG_TOOLS_MAX_BYTES);
}

size_t tool_max_file_bytes(void)
{
    return (size_t)config_int(CFG_TOOLS_MAX_FILE_MB) << 20;
}

int tool_spill_dir(struct tool_ctx *ctx, char *out, size_t n)
{
    return sandbox_spill_prepare(ctx->st, ctx->spill_dir, 0, out, n);
}

/* --- argument validation against the schema ------------------------------ */

static const char *type_of(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsNumber(v))
        return v->valuedouble == floor(v->valuedouble) ? "integer" : "number";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "array";
    return "object";
}

static int validate(const char *tool, const cJSON *schema, const cJSON *args,
                    struct tool_result *res)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
    const cJSON *it;

    if (!cJSON_IsObject(args)) {
        tool_fail(res, TOOL_VALIDATION, "%s: arguments: expected a JSON object", tool);
        return -1;
    }
    cJSON_ArrayForEach(it, req)
    {
        if (cJSON_IsString(it) && !cJSON_GetObjectItemCaseSensitive(args, it->valuestring)) {
            tool_fail(res, TOOL_VALIDATION, "%s: %s: required", tool, it->valuestring);
            return -1;
        }
    }
    cJSON_ArrayForEach(it, args)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, it->string);
        const cJSON *type, *en, *mn, *mx;
        const char *want, *got;
        if (!p) {
            strbuf known = STRBUF_INIT;
            const cJSON *k;
            cJSON_ArrayForEach(k, props)
            {
                if (strbuf_addf(&known, "%s%s", known.len ? ", " : "", k->string) != 0)
                    break; /* the list is cut at its cap */
            }
            tool_fail(res, TOOL_VALIDATION, "%s: unknown argument \"%s\" (arguments: %s)", tool,
                      it->string, known.len ? strbuf_cstr(&known) : "none");
            strbuf_release(&known);
            return -1;
        }
        type = cJSON_GetObjectItemCaseSensitive(p, "type");
        want = cJSON_IsString(type) ? type->valuestring : NULL;
        got = type_of(it);
        if (want && strcmp(want, got) && !(!strcmp(want, "number") && !strcmp(got, "integer"))) {
            tool_fail(res, TOOL_VALIDATION, "%s: %s: expected %s %s, got %s", tool, it->string,
                      !strcmp(want, "integer") ? "an" : "a", want, got);
            return -1;
        }
        en = cJSON_GetObjectItemCaseSensitive(p, "enum");
        if (en && cJSON_IsString(it)) {
            const cJSON *e;
            int found = 0, cut = 0;
            strbuf opts = STRBUF_INIT;
            cJSON_ArrayForEach(e, en)
            {
                if (cJSON_IsString(e)) {
                    found |= !strcmp(e->valuestring, it->valuestring);
                    if (!cut && strbuf_addf(&opts, "%s%s", opts.len ? ", " : "",
                                            e->valuestring) != 0)
                        cut = 1; /* the list ends at its cap */
                }
            }
            if (!found) {
                tool_fail(res, TOOL_VALIDATION, "%s: %s: expected one of %s, got \"%s\"", tool,
                          it->string, strbuf_cstr(&opts), it->valuestring);
                strbuf_release(&opts);
                return -1;
            }
            strbuf_release(&opts);
        }
        mn = cJSON_GetObjectItemCaseSensitive(p, "minimum");
        mx = cJSON_GetObjectItemCaseSensitive(p, "maximum");
        if (cJSON_IsNumber(it) && ((mn && it->valuedouble < mn->valuedouble) ||
                                   (mx && it->valuedouble > mx->valuedouble))) {
            if (mn && mx)
                tool_fail(res, TOOL_VALIDATION, "%s: %s: expected %.0f to %.0f, got %g", tool,
                          it->string, mn->valuedouble, mx->valuedouble, it->valuedouble);
            else if (mn)
                tool_fail(res, TOOL_VALIDATION, "%s: %s: expected at least %.0f, got %g", tool,
                          it->string, mn->valuedouble, it->valuedouble);
            else
                tool_fail(res, TOOL_VALIDATION, "%s: %s: expected at most %.0f, got %g", tool,
                          it->string, mx->valuedouble, it->valuedouble);
            return -1;
        }
    }
    return 0;
}

/* --- events -------------------------------------------------------------- */

static void event(struct tool_ctx *ctx, const char *type, cJSON *payload)
{
    if (ctx->st &&
        store_event_add(ctx->st, ctx->goal_id, ctx->item_id, ctx->run_id, type, payload, NULL) != 0)
        log_warn("tool: cannot record %s: %s", type, err_last());
    cJSON_Delete(payload);
}

/* The arguments for an event: redacted, cut to EVENT_ARGS_MAX characters.
 * The model's own text when there is one (printing parsed arguments again
 * would copy a whole write's content only to keep 2000 characters of it). */
static void add_args(cJSON *p, const cJSON *args, const char *args_json)
{
    char *text = args && !args_json ? cJSON_PrintUnformatted(args) : NULL;
    const char *src = text ? text : (args_json ? args_json : "{}");
    strbuf red = STRBUF_INIT, clean = STRBUF_INIT;
    size_t cut;
    size_t len = strlen(src);

    /* only the first EVENT_ARGS_MAX characters are kept: redact a generous
     * prefix (not megabytes of write content), then cut */
    if (len > 16 * EVENT_ARGS_MAX)
        len = utf8_floor(src, len, 16 * EVENT_ARGS_MAX);
    if (redact_text(&red, src, len, NULL) != 0 ||
        utf8_sanitize(&clean, strbuf_cstr(&red), red.len, NULL) != 0) {
        strbuf_reset(&clean); /* never the unchecked text */
        src = REDACTED;
    } else {
        src = strbuf_cstr(&clean);
    }
    cut = utf8_prefix_chars(src, strlen(src), EVENT_ARGS_MAX);
    if (src == strbuf_cstr(&clean) && cut < clean.len) {
        strbuf_setlen(&clean, cut);
        if (strbuf_adds(&clean, "…") != 0)
            err_clear(); /* at the cap: cut without the ellipsis */
        src = strbuf_cstr(&clean);
        cJSON_AddBoolToObject(p, "arguments_truncated", 1);
    }
    cJSON_AddStringToObject(p, "arguments", src);
    strbuf_release(&red);
    strbuf_release(&clean);
    cJSON_free(text);
}

/* Redact and clean the output of res in place. */
static void finish_output(struct tool_result *res)
{
    strbuf red = STRBUF_INIT, clean = STRBUF_INIT;
    size_t bad = 0;
    int n = 0;

    if (res->total_bytes == 0 && res->total_lines == 0 && res->output.len) {
        res->total_bytes = (int64_t)res->output.len;
        res->total_lines = (int64_t)text_lines(res->output.buf, res->output.len);
    }
    /* valid UTF-8 with a note saying what was replaced: the output is
     * shown to the model and may be stored (either backend takes it) */
    if (utf8_sanitize(&clean, strbuf_cstr(&res->output), res->output.len, &bad) != 0 ||
        (bad && strbuf_addf(&clean, "%s[goald: %zu invalid UTF-8 byte%s replaced]\n",
                            clean.len && clean.buf[clean.len - 1] != '\n' ? "\n" : "", bad,
                            bad == 1 ? "" : "s") != 0) ||
        redact_text(&red, strbuf_cstr(&clean), clean.len, &n) != 0) {
        strbuf_reset(&red);
        n = 0;
        if (strbuf_addf(&red, "%s (the output could not be checked for secrets: %s)", REDACTED,
                        err_last()) != 0)
            err_clear(); /* an empty output, never the unchecked one */
    }
    /* one line saying so: the model must not take the mask for the text */
    if (n && strbuf_addf(&red,
                         "%s[goald: %d secret%s masked in this output as %s; the files "
                         "hold the real text]",
                         red.len && red.buf[red.len - 1] != '\n' ? "\n" : "", n, n == 1 ? "" : "s",
                         REDACTED) != 0)
        err_clear(); /* at the cap: the meta still says it */
    strbuf_release(&res->output);
    res->output = red;
    res->redactions = n;
    if (n)
        cJSON_AddNumberToObject(tool_meta(res), "redactions", n);
    strbuf_release(&clean);
}

static void started(struct tool_ctx *ctx, const char *name, const cJSON *args,
                    const char *args_json)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "tool", name ? name : "");
    add_args(p, args, args_json);
    event(ctx, "tool_call.started", p);
}

/* Run the tool; the tool_call.started event was recorded by the caller. */
static int call(struct tool_ctx *ctx, const char *name, const cJSON *args, struct tool_result *res)
{
    int64_t start = time_mono_ms();
    int idx = find_index(name ? name : "");
    cJSON *p;
    int rc;

    ctx->root_fd = -1;

    if (idx < 0) {
        strbuf known = STRBUF_INIT;
        for (size_t i = 0; i < nreg; i++)
            if (strbuf_addf(&known, "%s%s", i ? ", " : "", registry[i]->name) != 0)
                break; /* the list is cut at its cap */
        tool_fail(res, TOOL_VALIDATION, "unknown tool \"%s\" (tools: %s)", name ? name : "",
                  strbuf_cstr(&known));
        strbuf_release(&known);
        goto done;
    }
    if (!tool_allowed(ctx->allowed, name)) {
        strbuf list = STRBUF_INIT;
        for (size_t i = 0; ctx->allowed[i]; i++)
            if (strbuf_addf(&list, "%s%s", i ? ", " : "", ctx->allowed[i]) != 0)
                break; /* the list is cut at its cap */
        tool_fail(res, TOOL_POLICY, "%s: not among the goal's allowed actions (%s)", name,
                  list.len ? strbuf_cstr(&list) : "none");
        strbuf_release(&list);
        goto done;
    }
    if (!args) {
        tool_fail(res, TOOL_VALIDATION, "%s: arguments: not valid JSON", name);
        goto done;
    }
    if (validate(name, schemas[idx], args, res) != 0)
        goto done;
    if (!registry[idx]->run) {
        if (!ctx->hook) {
            tool_fail(res, TOOL_VALIDATION, "%s: only available inside a run", name);
            goto done;
        }
        if (ctx->hook(ctx->hook_arg, ctx, name, args, res) != 0 && res->ok)
            tool_fail_err(res, ERR_FAIL);
        goto done;
    }
    if (!ctx->root || ctx->root[0] != '/') {
        tool_fail(res, TOOL_VALIDATION, "%s: the worktree root must be an absolute path", name);
        goto done;
    }
    if ((rc = path_open_root(&ctx->root_fd, ctx->root)) != 0) {
        tool_fail_err(res, rc);
        goto done;
    }
    err_clear();
    if ((rc = registry[idx]->run(ctx, args, res)) != 0 && res->ok)
        tool_fail_err(res, rc);
done:
    if (ctx->root_fd >= 0)
        close(ctx->root_fd);
    ctx->root_fd = -1;
    finish_output(res);
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "tool", name ? name : "");
    cJSON_AddNumberToObject(p, "latency_ms", (double)(time_mono_ms() - start));
    cJSON_AddNumberToObject(p, "exit_code", res->exit_code);
    cJSON_AddBoolToObject(p, "truncated", res->truncated);
    if (res->truncated_by)
        cJSON_AddStringToObject(p, "truncated_by", res->truncated_by);
    cJSON_AddNumberToObject(p, "total_lines", (double)res->total_lines);
    cJSON_AddNumberToObject(p, "total_bytes", (double)res->total_bytes);
    cJSON_AddBoolToObject(p, "redacted", res->redactions > 0);
    if (res->ok) {
        event(ctx, "tool_call.completed", p);
    } else {
        size_t cut = utf8_prefix_chars(strbuf_cstr(&res->output), res->output.len, EVENT_ERROR_MAX);
        char *msg = xstrndup(strbuf_cstr(&res->output), cut);
        cJSON_AddStringToObject(p, "error_class", tool_class_name(res->error_class));
        cJSON_AddStringToObject(p, "error", msg);
        free(msg);
        event(ctx, "tool_call.failed", p);
    }
    return 0;
}

int tool_call(struct tool_ctx *ctx, const char *name, const char *args_json,
              struct tool_result *res)
{
    cJSON *args;
    int rc;

    tool_result_init(res);
    builtins();
    if (!args_json || !*args_json)
        args_json = "{}";
    args = cJSON_Parse(args_json);
    started(ctx, name, args, args_json);
    rc = call(ctx, name, args, res);
    cJSON_Delete(args);
    return rc;
}

/* A string value longer than this is not kept in the compact arguments. */
#define COMPACT_STRING_MAX 4096

int tool_call_take(struct tool_ctx *ctx, const char *name, char **args_json,
                   struct tool_result *res)
{
    struct jsonbig jb;
    cJSON *args;
    char *text = *args_json && **args_json ? *args_json : NULL;
    char *compact = NULL;
    int big = 0;
    int rc;

    tool_result_init(res);
    builtins();
    if (!text) {
        free(*args_json);
        text = xstrdup("{}");
    }
    *args_json = NULL;
    /* the event quotes the model's text: before it is taken apart */
    started(ctx, name, NULL, text);
    /* long strings (a write's content) are decoded inside the text itself:
     * the content is held once, in the text's own memory */
    jsonbig_parse(&jb, &text, strlen(text), 0);
    args = jb.root;
    if (cJSON_IsObject(args)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, args) big |= cJSON_IsString(it) &&
                                            strlen(it->valuestring) > COMPACT_STRING_MAX;
    }
    if (big) {
        /* a compact copy (long strings replaced by their size) for the
         * caller's history */
        cJSON *c = cJSON_CreateObject();
        const cJSON *it;
        cJSON_ArrayForEach(it, args)
        {
            if (cJSON_IsString(it) && strlen(it->valuestring) > COMPACT_STRING_MAX) {
                char note[128];
                /* truncation: ok, a note */
                snprintf(note, sizeof(note), "[%zu bytes, not kept in the conversation]",
                         strlen(it->valuestring));
                cJSON_AddStringToObject(c, it->string, note);
            } else {
                cJSON_AddItemToObject(c, it->string, cJSON_Duplicate(it, 1));
            }
        }
        compact = cJSON_PrintUnformatted(c);
        cJSON_Delete(c);
    }
    rc = call(ctx, name, args, res);
    if (compact) {
        *args_json = xstrdup(compact);
        cJSON_free(compact);
    } else if (jb.nbig == 0) {
        *args_json = jb.buf; /* unchanged (JSON or not): the caller's text back */
        jb.buf = NULL;
    } else {
        *args_json = cJSON_PrintUnformatted(jb.root);
        xcheck(*args_json); /* a variable: xcheck evaluates its argument twice */
    }
    jsonbig_release(&jb);
    return rc;
}

int tool_call_json(struct tool_ctx *ctx, const char *name, const cJSON *args,
                   struct tool_result *res)
{
    cJSON *obj = NULL;
    int rc;

    tool_result_init(res);
    builtins();
    if (!args)
        args = obj = cJSON_CreateObject();
    started(ctx, name, args, NULL);
    rc = call(ctx, name, args, res);
    cJSON_Delete(obj);
    return rc;
}

int tool_list_report(struct tool_result *res, const strbuf *list, const char *limit_note,
                     const char *what)
{
    struct trunc t;
    char sz[32];
    int rc;

    truncate_head(&t, strbuf_cstr(list), list->len, (size_t)-1, tool_max_bytes());
    rc = strbuf_add(&res->output, list->buf,
                    t.len && list->buf[t.len - 1] == '\n' ? t.len - 1 : t.len);
    res->total_bytes = (int64_t)list->len;
    if (!limit_note && !t.truncated)
        return rc;
    res->truncated = 1;
    res->truncated_by = t.truncated ? "bytes" : "limit";
    if (!rc)
        rc = strbuf_adds(&res->output, "\n\n[");
    if (!rc && limit_note)
        rc = strbuf_adds(&res->output, limit_note);
    if (!rc && limit_note && t.truncated)
        rc = strbuf_adds(&res->output, ". ");
    if (!rc && t.truncated)
        rc = strbuf_addf(&res->output, "%s limit reached: showing %zu %s",
                         format_size(sz, sizeof(sz), tool_max_bytes()), t.lines, what);
    return rc ? rc : strbuf_adds(&res->output, "]");
}
