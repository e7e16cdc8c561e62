/*
 * script.c - the script provider: answers read from a JSONL file, one
 * line per request (docs/llm.md, "Script format").
 *
 * A line without "stage" is served to the next request of any stage, a
 * line with "stage" only to a request of that stage; a request gets the
 * first unserved line it may have.  That is two kinds of cursor: one per
 * stage for keyed lines, one ("*") for the others.  The work of one goal
 * spans many processes, so with a store the cursors live in the table
 * llm_script_cursors, keyed by the script's path and the SHA-256 of its
 * contents (an edited script starts over); without one, in memory.
 *
 * A script is read whole, hashed and every line parsed and checked the
 * first time a process sees it; with a store, what that found (the hash,
 * the line count, the last line without a stage) is kept in llm_scripts
 * under the file's stamp (device, inode, size, modification and change
 * times), and a process that finds the same stamp parses only the lines
 * it looks at, from the cursors on: a job's cost does not grow with the
 * lines of a long script it does not serve.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "llm/llm_internal.h"
#include "store/llm.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define SCRIPT_MAX_BYTES ((size_t)64 << 20)
#define STAGE_MAX 32
#define STAMP_MAX 160

struct mem_cursor {
    char stage[STAGE_MAX];
    size_t next;
};

struct llm_script {
    char *path; /* as configured; the key uses the real path */
    char *realpath;
    char sha[HASH_HEX_SIZE];
    strbuf text;   /* the file */
    size_t len;    /* its lines: the file up to its first NUL */
    size_t *start; /* the offset of each line found so far */
    size_t nstart;
    cJSON **lines;  /* parsed lines; NULL for a blank or comment line */
    char *parsed;   /* 1 where lines[i] is known */
    size_t nlines;
    int64_t last_unstaged; /* the last line without a stage, -1: none */
    char *load_error; /* the file did not load: every request fails with it */
    struct mem_cursor *cursors;
    size_t ncursors;
    struct llm_script *next;
};

void llm_scripts_free(struct llm_script *s)
{
    while (s) {
        struct llm_script *n = s->next;
        for (size_t i = 0; s->lines && i < s->nlines; i++)
            cJSON_Delete(s->lines[i]);
        free(s->lines);
        free(s->parsed);
        free(s->start);
        strbuf_release(&s->text);
        free(s->path);
        free(s->realpath);
        free(s->load_error);
        free(s->cursors);
        free(s);
        s = n;
    }
}

static const char *const line_keys[] = {"stage",         "content", "tool_calls",     "usage",
                                        "error",         "status",  "message",        "sleep_ms",
                                        "finish_reason", "model",   "retry_after_ms", NULL};

/* Check one parsed line; a message naming the problem, or NULL. */
static const char *line_check(const cJSON *l, char *buf, size_t n)
{
    const cJSON *f, *v;

    if (!cJSON_IsObject(l))
        return "expected a JSON object";
    cJSON_ArrayForEach(f, l)
    {
        int ok = 0;
        for (int k = 0; line_keys[k]; k++)
            ok |= !strcmp(f->string, line_keys[k]);
        if (!ok) {
            snprintf(buf, n, "unknown key \"%s\"", f->string); /* truncation: ok, a message */
            return buf;
        }
    }
    v = cJSON_GetObjectItemCaseSensitive(l, "error");
    if (v && (!cJSON_IsString(v) || llm_error_class_parse(v->valuestring) < 0))
        return "error: expected an error class (rate_limit, provider_api, timeout, auth, "
               "context_length, invalid_response, budget)";
    v = cJSON_GetObjectItemCaseSensitive(l, "stage");
    if (v && (!cJSON_IsString(v) || strlen(v->valuestring) >= STAGE_MAX || !*v->valuestring))
        return "stage: expected a stage name";
    v = cJSON_GetObjectItemCaseSensitive(l, "sleep_ms");
    if (v && (!cJSON_IsNumber(v) || v->valuedouble < 0))
        return "sleep_ms: expected a number >= 0";
    v = cJSON_GetObjectItemCaseSensitive(l, "tool_calls");
    if (v && !cJSON_IsArray(v))
        return "tool_calls: expected an array";
    for (const cJSON *call = v ? v->child : NULL; call; call = call->next)
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(call, "name")))
            return "tool_calls: each needs a \"name\"";
    v = cJSON_GetObjectItemCaseSensitive(l, "usage");
    if (v && !cJSON_IsObject(v))
        return "usage: expected an object";
    if (!cJSON_GetObjectItemCaseSensitive(l, "error") &&
        !cJSON_GetObjectItemCaseSensitive(l, "content") &&
        !cJSON_GetObjectItemCaseSensitive(l, "tool_calls") &&
        !cJSON_GetObjectItemCaseSensitive(l, "sleep_ms"))
        return "expected content, tool_calls, error or sleep_ms";
    return NULL;
}

/* The stamp of path: what an edit of the file changes.  0 or ERR_IO. */
static int script_stamp(const char *path, char out[STAMP_MAX])
{
    struct stat sb;

    if (stat(path, &sb) != 0)
        return ERR_IO;
    /* truncation: ok, six numbers fit 160 bytes */
    snprintf(out, STAMP_MAX, "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld", (uintmax_t)sb.st_dev,
             (uintmax_t)sb.st_ino, (intmax_t)sb.st_size, (intmax_t)sb.st_mtim.tv_sec,
             sb.st_mtim.tv_nsec, (intmax_t)sb.st_ctim.tv_sec, sb.st_ctim.tv_nsec);
    return 0;
}

/* Find the start of line i (< nlines once known); 0, or ERR_NOTFOUND past
 * the last line. */
static int line_find(struct llm_script *s, size_t i)
{
    while (s->nstart <= i) {
        size_t at = 0;
        if (s->nstart > 0) {
            const char *p = s->text.buf + s->start[s->nstart - 1];
            const char *nl = memchr(p, '\n', s->len - s->start[s->nstart - 1]);
            if (!nl)
                return ERR_NOTFOUND;
            at = (size_t)(nl + 1 - s->text.buf);
        }
        if (at >= s->len)
            return ERR_NOTFOUND;
        if (s->nstart % 1024 == 0)
            s->start = xrealloc(s->start, (s->nstart + 1024) * sizeof(*s->start));
        s->start[s->nstart++] = at;
    }
    return 0;
}

/* Parse line i into s->lines[i] (NULL for a blank or comment line): 0, or
 * ERR_INVALID with the reason in why. */
static int line_parse(struct llm_script *s, size_t i, char *why, size_t n)
{
    const char *p, *end, *nl;
    cJSON *j;

    if (s->parsed[i])
        return 0;
    if (line_find(s, i) != 0) {
        /* truncation: ok, a message */
        snprintf(why, n, "%s:%zu: the file is shorter than it was", s->path, i + 1);
        return ERR_INVALID;
    }
    p = s->text.buf + s->start[i];
    nl = memchr(p, '\n', s->len - s->start[i]);
    end = nl ? nl : s->text.buf + s->len;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    s->parsed[i] = 1;
    if (p == end || *p == '#')
        return 0;
    if (!(j = cJSON_ParseWithLength(p, (size_t)(end - p)))) {
        snprintf(why, n, "%s:%zu: not valid JSON", s->path, i + 1); /* truncation: ok, a message */
        return ERR_INVALID;
    }
    s->lines[i] = j;
    return 0;
}

static const char *line_stage(const cJSON *l)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(l, "stage");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Read every line of s: its hash, each line parsed and checked, its line
 * count and last line without a stage; the first fault into load_error. */
static void script_check(struct llm_script *s)
{
    char why[512], bad_key[128];
    const char *bad;

    hash_sha256_hex(s->sha, s->text.buf ? s->text.buf : "", s->text.len);
    for (s->nlines = 0; line_find(s, s->nlines) == 0; s->nlines++)
        ;
    s->lines = xcalloc(s->nlines ? s->nlines : 1, sizeof(*s->lines));
    s->parsed = xcalloc(s->nlines ? s->nlines : 1, 1);
    s->last_unstaged = -1;
    for (size_t i = 0; i < s->nlines; i++) {
        if (line_parse(s, i, why, sizeof(why)) != 0) {
            s->load_error = xstrdup(why);
            return;
        }
        if (!s->lines[i])
            continue;
        if ((bad = line_check(s->lines[i], bad_key, sizeof(bad_key)))) {
            /* truncation: ok, a message */
            snprintf(why, sizeof(why), "%s:%zu: %s", s->path, i + 1, bad);
            s->load_error = xstrdup(why);
            return;
        }
        if (!line_stage(s->lines[i]))
            s->last_unstaged = (int64_t)i;
    }
}

/* What a process before this one found in the file of this stamp: 1 when
 * s took it (its lines are then parsed as they are looked at). */
static int script_recall(llm_client *c, struct llm_script *s, const char *stamp)
{
    struct store_llm_script f;
    int found = 0;

    if (!c->st || !*stamp || store_llm_script_get(c->st, s->realpath, stamp, &f, &found) != 0 ||
        !found || f.lines < 0 || f.last_unstaged >= f.lines || strlen(f.sha256) != 64)
        return 0;
    memcpy(s->sha, f.sha256, sizeof(f.sha256));
    s->nlines = (size_t)f.lines;
    s->last_unstaged = f.last_unstaged;
    s->lines = xcalloc(s->nlines ? s->nlines : 1, sizeof(*s->lines));
    s->parsed = xcalloc(s->nlines ? s->nlines : 1, 1);
    return 1;
}

static struct llm_script *script_load(llm_client *c, const char *path)
{
    struct llm_script *s;
    char real[PATH_MAX], stamp[STAMP_MAX] = "", after[STAMP_MAX] = "";

    for (s = c->scripts; s; s = s->next)
        if (!strcmp(s->path, path))
            return s;
    s = xcalloc(1, sizeof(*s));
    s->path = xstrdup(path);
    s->realpath = xstrdup(realpath(path, real) ? real : path);
    s->next = c->scripts;
    c->scripts = s;
    strbuf_init(&s->text, SCRIPT_MAX_BYTES);
    if (script_stamp(path, stamp) != 0)
        stamp[0] = '\0';
    if (fs_read_file(&s->text, path, SCRIPT_MAX_BYTES) != 0) {
        s->load_error = xstrdup(err_last());
        return s;
    }
    s->len = s->text.buf ? strlen(s->text.buf) : 0;
    /* a file that changed while it was read has no stamp to trust */
    if (script_stamp(path, after) != 0 || strcmp(stamp, after) != 0)
        stamp[0] = '\0';
    if (script_recall(c, s, stamp))
        return s;
    script_check(s);
    if (!s->load_error && c->st && *stamp) {
        struct store_llm_script f = {.lines = (int64_t)s->nlines,
                                     .last_unstaged = s->last_unstaged};
        memcpy(f.sha256, s->sha, sizeof(f.sha256));
        (void)store_llm_script_put(c->st, s->realpath, stamp, &f);
    }
    return s;
}

/* The cursor (the first line index not yet looked at) of a key. */
static int cursor_get(llm_client *c, struct llm_script *s, const char *key, size_t *out)
{
    int64_t next = 0;
    int rc;

    *out = 0;
    if (!c->st) {
        for (size_t i = 0; i < s->ncursors; i++)
            if (!strcmp(s->cursors[i].stage, key))
                *out = s->cursors[i].next;
        return 0;
    }
    rc = store_llm_script_cursor_get(c->st, s->realpath, s->sha, key, &next);
    if (rc == 0)
        *out = (size_t)next;
    return rc;
}

static int cursor_set(llm_client *c, struct llm_script *s, const char *key, size_t next)
{
    if (!c->st) {
        for (size_t i = 0; i < s->ncursors; i++)
            if (!strcmp(s->cursors[i].stage, key)) {
                s->cursors[i].next = next;
                return 0;
            }
        s->cursors = xrealloc(s->cursors, (s->ncursors + 1) * sizeof(*s->cursors));
        /* truncation: ok, stages are checked under STAGE_MAX */
        snprintf(s->cursors[s->ncursors].stage, STAGE_MAX, "%s", key);
        s->cursors[s->ncursors++].next = next;
        return 0;
    }
    return store_llm_script_cursor_set(c->st, s->realpath, s->sha, key, (int64_t)next);
}

/* Take the next line for stage: *idx receives its index, or SIZE_MAX when
 * the script has none left.  Reading and moving the cursor happen in one
 * transaction, so two processes never get the same line. */
static int line_take(llm_client *c, struct llm_script *s, const char *stage, size_t *idx)
{
    size_t keyed = 0, any = 0, i;
    int any_left, rc;
    char why[512];

    *idx = SIZE_MAX;
    if (c->st && (rc = store_tx_begin(c->st)) != 0)
        return rc;
    if ((rc = cursor_get(c, s, stage, &keyed)) != 0 || (rc = cursor_get(c, s, "*", &any)) != 0)
        goto out;
    /* the first line at or past its cursor that either kind may have:
     * a line of this stage, or one without a stage (none past the last) */
    any_left = s->last_unstaged >= 0 && any <= (size_t)s->last_unstaged;
    for (i = any_left && any < keyed ? any : keyed; i < s->nlines; i++) {
        const char *ls;
        if ((rc = line_parse(s, i, why, sizeof(why))) != 0) {
            rc = err_set(rc, "%s", why);
            goto out;
        }
        if (!s->lines[i])
            continue;
        ls = line_stage(s->lines[i]);
        if (ls && i >= keyed && !strcmp(ls, stage)) {
            *idx = i;
            rc = cursor_set(c, s, stage, i + 1);
            break;
        }
        if (!ls && any_left && i >= any) {
            *idx = i;
            rc = cursor_set(c, s, "*", i + 1);
            break;
        }
    }
out:
    if (c->st) {
        if (rc)
            store_tx_rollback(c->st);
        else
            rc = store_tx_commit(c->st);
    }
    return rc;
}

static int reply(llm_client *c, struct llm_model *m, const struct llm_request *req, const cJSON *l,
                 size_t lineno, struct llm_response *resp, struct llm_error *err)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(l, "content");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(l, "tool_calls");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(l, "usage");
    const cJSON *v, *call;
    size_t i = 0;

    llm_message_init(&resp->message, LLM_ASSISTANT, NULL);
    if (cJSON_IsString(content)) {
        resp->message.content = xstrdup(content->valuestring);
    } else if (content && !cJSON_IsNull(content)) { /* an object: the JSON answer itself */
        char *t = cJSON_PrintUnformatted(content);
        resp->message.content = xstrdup(t);
        if (req->response_schema && cJSON_IsObject(content))
            resp->json = xstrdup(t);
        cJSON_free(t);
    }
    cJSON_ArrayForEach(call, calls)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(call, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "arguments");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
        char idbuf[48];
        char *a = NULL;
        cJSON *parsed;

        if (cJSON_IsString(args)) {
            a = xstrdup(args->valuestring);
        } else if (args) {
            char *t = cJSON_PrintUnformatted(args);
            a = xstrdup(t ? t : "{}");
            cJSON_free(t);
        } else {
            a = xstrdup("{}");
        }
        parsed = cJSON_Parse(a);
        if (!cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            free(a);
            llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 0,
                           "%s:%zu: tool_calls[%zu] (%s): arguments are not a JSON object",
                           m->script, lineno, i, name->valuestring);
            llm_response_release(resp);
            return ERR_FAIL;
        }
        cJSON_Delete(parsed);
        /* truncation: ok, two numbers fit 48 bytes */
        snprintf(idbuf, sizeof(idbuf), "call_%zu_%zu", lineno, i);
        llm_message_add_call(&resp->message, cJSON_IsString(id) ? id->valuestring : idbuf,
                             name->valuestring, a);
        free(a);
        i++;
    }
    resp->usage.input = llm_token_count(usage, "input");
    resp->usage.cached_input = llm_token_count(usage, "cached_input");
    resp->usage.output = llm_token_count(usage, "output");
    v = cJSON_GetObjectItemCaseSensitive(l, "finish_reason");
    if (cJSON_IsString(v))
        resp->finish_reason = xstrdup(v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(l, "model");
    resp->model = xstrdup(cJSON_IsString(v) ? v->valuestring : m->model);
    return 0;
}

int llm_script_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                    struct llm_response *resp, struct llm_error *err)
{
    struct llm_script *s = script_load(c, m->script);
    const char *stage = req->stage && *req->stage ? req->stage : "execute";
    int64_t t0 = time_mono_ms();

    if (s->load_error) {
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 0, "script: %s", s->load_error);
        return ERR_NOTFOUND;
    }
    for (;;) {
        const cJSON *l, *v;
        size_t idx;
        int rc = line_take(c, s, stage, &idx);

        if (rc) {
            llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 0, "script: %s", err_last());
            return ERR_FAIL;
        }
        if (idx == SIZE_MAX) {
            llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 0,
                           "script exhausted: %s has no line left for stage %s", m->script, stage);
            return ERR_NOTFOUND; /* final: another try cannot help */
        }
        l = s->lines[idx];
        v = cJSON_GetObjectItemCaseSensitive(l, "sleep_ms");
        if (cJSON_IsNumber(v)) {
            int64_t want = (int64_t)v->valuedouble;
            int64_t left = c->timeout_ms - (time_mono_ms() - t0);
            time_sleep_ms(want < left ? want : (left > 0 ? left : 0));
            if (want >= left) {
                llm_error_setf(c, err, LLM_ERR_TIMEOUT, 0,
                               "%s:%zu: no answer within %lld ms (llm.timeout_ms)", m->script,
                               idx + 1, (long long)c->timeout_ms);
                return ERR_FAIL;
            }
            if (!cJSON_GetObjectItemCaseSensitive(l, "content") &&
                !cJSON_GetObjectItemCaseSensitive(l, "tool_calls") &&
                !cJSON_GetObjectItemCaseSensitive(l, "error"))
                continue; /* a pause before the next line */
        }
        v = cJSON_GetObjectItemCaseSensitive(l, "error");
        if (cJSON_IsString(v)) {
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(l, "message");
            const cJSON *ra = cJSON_GetObjectItemCaseSensitive(l, "retry_after_ms");
            llm_error_setf(c, err, (enum llm_error_class)llm_error_class_parse(v->valuestring),
                           (int)llm_token_count(l, "status"), "%s:%zu: scripted %s%s%s", m->script, idx + 1,
                           v->valuestring, cJSON_IsString(msg) ? ": " : "",
                           cJSON_IsString(msg) ? msg->valuestring : "");
            err->retry_after_ms = cJSON_IsNumber(ra) ? (int64_t)ra->valuedouble : -1;
            return ERR_FAIL;
        }
        return reply(c, m, req, l, idx + 1, resp, err);
    }
}
