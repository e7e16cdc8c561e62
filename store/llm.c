/*
 * llm.c - the tables of the model client: llm_endpoint_quirks,
 * llm_script_cursors, llm_scripts (store/llm.h).
 */
#include "store/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static void quirks_fill(store_stmt *s, void *ctx)
{
    struct store_llm_quirks *out = ctx;

    out->use_max_completion = store_col_int(s, 0) != 0;
    out->no_response_format = store_col_int(s, 1) != 0;
    out->context_window = store_col_i64(s, 2);
}

int store_llm_quirks_get(store *st, const char *base_url, const char *model,
                         struct store_llm_quirks *out)
{
    memset(out, 0, sizeof(*out));
    return store_get_one(st, "endpoint quirks", quirks_fill, out,
                         "SELECT use_max_completion, no_response_format, context_window "
                         "FROM llm_endpoint_quirks WHERE base_url = ? AND model = ?",
                         STORE_ARGS(STORE_TEXT(base_url), STORE_TEXT(model)));
}

int store_llm_quirks_put(store *st, const char *base_url, const char *model,
                         const struct store_llm_quirks *q)
{
    return store_exec_args(
        st, "endpoint quirks", NULL,
        "INSERT INTO llm_endpoint_quirks (base_url, model, use_max_completion, "
        "no_response_format, context_window, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (base_url, model) DO UPDATE SET use_max_completion = "
        "excluded.use_max_completion, no_response_format = excluded.no_response_format, "
        "context_window = excluded.context_window, updated_at = excluded.updated_at",
        STORE_ARGS(STORE_TEXT(base_url), STORE_TEXT(model), STORE_I64(q->use_max_completion),
                   STORE_I64(q->no_response_format), STORE_I64(q->context_window),
                   STORE_I64(time_now_ms())));
}

int store_llm_script_cursor_get(store *st, const char *path, const char *sha256, const char *stage,
                                int64_t *next_out)
{
    int found;

    *next_out = 0;
    return store_get_int64(st, "script cursor", next_out, &found,
                           "SELECT next_line FROM llm_script_cursors WHERE path = ? AND "
                           "sha256 = ? AND stage = ?",
                           STORE_ARGS(STORE_TEXT(path), STORE_TEXT(sha256), STORE_TEXT(stage)));
}

int store_llm_script_cursor_set(store *st, const char *path, const char *sha256, const char *stage,
                                int64_t next)
{
    return store_exec_args(st, "script cursor", NULL,
                           "INSERT INTO llm_script_cursors (path, sha256, stage, next_line, "
                           "updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (path, sha256, "
                           "stage) DO UPDATE SET next_line = excluded.next_line, updated_at "
                           "= excluded.updated_at",
                           STORE_ARGS(STORE_TEXT(path), STORE_TEXT(sha256), STORE_TEXT(stage),
                                      STORE_I64(next), STORE_I64(time_now_ms())));
}

int store_llm_script_get(store *st, const char *path, const char *stamp,
                         struct store_llm_script *out, int *found)
{
    static const char sql[] = "SELECT sha256, lines, last_unstaged FROM llm_scripts"
                              " WHERE path = ? AND stamp = ?";
    store_stmt *s;
    int rc = store_prepare_args(st, &s, sql, STORE_ARGS(STORE_TEXT(path), STORE_TEXT(stamp)));

    memset(out, 0, sizeof(*out));
    *found = 0;
    if (rc)
        return rc;
    if (store_next_row(st, s, "script", &rc)) {
        store_col_copy(out->sha256, sizeof(out->sha256), s, 0);
        out->lines = store_col_i64(s, 1);
        out->last_unstaged = store_col_i64(s, 2);
        *found = 1;
    }
    store_done(s);
    return rc;
}

int store_llm_script_put(store *st, const char *path, const char *stamp,
                         const struct store_llm_script *f)
{
    return store_exec_args(st, "script", NULL,
                           "INSERT INTO llm_scripts (path, stamp, sha256, lines, last_unstaged,"
                           " checked_at) VALUES (?, ?, ?, ?, ?, ?)"
                           " ON CONFLICT (path, stamp) DO NOTHING",
                           STORE_ARGS(STORE_TEXT(path), STORE_TEXT(stamp), STORE_TEXT(f->sha256),
                                      STORE_I64(f->lines), STORE_I64(f->last_unstaged),
                                      STORE_I64(time_now_ms())));
}

/* ---- the model's output limit (the max_tokens column) -------------------- */

int store_llm_output_limit_get(store *st, const char *base_url, const char *model,
                               int64_t *limit_out)
{
    int found;

    *limit_out = 0;
    return store_get_int64(st, "output limit", limit_out, &found,
                           "SELECT max_tokens FROM llm_endpoint_quirks WHERE base_url = ? AND "
                           "model = ?",
                           STORE_ARGS(STORE_TEXT(base_url), STORE_TEXT(model)));
}

int store_llm_output_limit_put(store *st, const char *base_url, const char *model, int64_t limit)
{
    return store_exec_args(st, "output limit", NULL,
                           "INSERT INTO llm_endpoint_quirks (base_url, model, max_tokens, "
                           "updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (base_url, model) DO "
                           "UPDATE SET max_tokens = excluded.max_tokens, updated_at = "
                           "excluded.updated_at",
                           STORE_ARGS(STORE_TEXT(base_url), STORE_TEXT(model), STORE_I64(limit),
                                      STORE_I64(time_now_ms())));
}

/* ---- what the Ollama window probe learned (a row of its own key) -------- */

#define PROBE_KEY "ollama-probe:"

struct probe_row {
    int64_t *window, *at;
};

static void probe_fill(store_stmt *s, void *ctx)
{
    struct probe_row *r = ctx;

    *r->window = store_col_i64(s, 0);
    *r->at = store_col_i64(s, 1);
}

/* The probe's key of base_url: "ollama-probe:" + base_url (malloc'd). */
static char *probe_key(const char *base_url)
{
    size_t n = strlen(PROBE_KEY) + strlen(base_url) + 1;
    char *k = xmalloc(n);

    snprintf(k, n, "%s%s", PROBE_KEY, base_url); /* truncation: ok, sized for it */
    return k;
}

int store_llm_probe_get(store *st, const char *base_url, const char *model, int64_t *window_out,
                        int64_t *at_ms, int *found)
{
    struct probe_row r = {window_out, at_ms};
    char *key = probe_key(base_url);
    int rc;

    *window_out = *at_ms = 0;
    rc = store_get_row(st, "window probe", probe_fill, &r, found,
                       "SELECT context_window, updated_at FROM llm_endpoint_quirks WHERE "
                       "base_url = ? AND model = ?",
                       STORE_ARGS(STORE_TEXT(key), STORE_TEXT(model)));
    free(key);
    return rc;
}

int store_llm_probe_put(store *st, const char *base_url, const char *model, int64_t window)
{
    char *key = probe_key(base_url);
    int rc = store_exec_args(st, "window probe", NULL,
                             "INSERT INTO llm_endpoint_quirks (base_url, model, context_window, "
                             "updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (base_url, model) DO "
                             "UPDATE SET context_window = excluded.context_window, updated_at = "
                             "excluded.updated_at",
                             STORE_ARGS(STORE_TEXT(key), STORE_TEXT(model), STORE_I64(window),
                                        STORE_I64(time_now_ms())));

    free(key);
    return rc;
}
