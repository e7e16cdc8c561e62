/*
 * llm.h - what the model client keeps across jobs: llm_endpoint_quirks
 * (what an endpoint taught about itself, keyed by base_url + model, with
 * the context window it stated), llm_script_cursors (how far each
 * stage has read a script, keyed by path + SHA-256 + stage) and
 * llm_scripts (what a script file holds, keyed by path + stamp).
 *
 * Nothing here allocates: results come back in caller-owned structs and
 * integers.
 */
#ifndef GOALD_STORE_LLM_H
#define GOALD_STORE_LLM_H

#include <stdint.h>

#include "store/store.h"

/* What an endpoint taught: it wants max_completion_tokens, it refuses
 * response_format, its context window (tokens, 0: none stated). */
struct store_llm_quirks {
    int use_max_completion;
    int no_response_format;
    int64_t context_window;
};

/* The quirks learned for base_url + model: 0 with *out filled,
 * ERR_NOTFOUND when none were learned (*out zeroed), else a store error. */
int store_llm_quirks_get(store *st, const char *base_url, const char *model,
                         struct store_llm_quirks *out);

/* Record (insert or replace) the quirks of base_url + model, stamped now. */
int store_llm_quirks_put(store *st, const char *base_url, const char *model,
                         const struct store_llm_quirks *q);

/* The model's output limit an endpoint stated (its error for a max_tokens
 * over it), kept in the max_tokens column apart from the other quirks:
 * *limit_out is 0 when none was learned.  _put records it (insert or
 * replace that column only), stamped now. */
int store_llm_output_limit_get(store *st, const char *base_url, const char *model,
                               int64_t *limit_out);
int store_llm_output_limit_put(store *st, const char *base_url, const char *model, int64_t limit);

/* What the Ollama window probe (llm/ollama.c) learned of base_url +
 * model, kept in llm_endpoint_quirks under the key "ollama-probe:" +
 * base_url (never a URL, so never an endpoint's own row): its
 * context_window is the window the server applies, 0 when the server
 * answered but not as Ollama does.  _get: *found 0 when never probed,
 * else *window_out and *at_ms (when it was learned).  _put records it
 * (insert or replace), stamped now. */
int store_llm_probe_get(store *st, const char *base_url, const char *model, int64_t *window_out,
                        int64_t *at_ms, int *found);
int store_llm_probe_put(store *st, const char *base_url, const char *model, int64_t window);

/* The next line index of a script cursor (path, sha256, stage): *next_out
 * is 0 when the cursor was never moved. */
int store_llm_script_cursor_get(store *st, const char *path, const char *sha256,
                                const char *stage, int64_t *next_out);

/* Move a script cursor to next (insert or replace), stamped now. */
int store_llm_script_cursor_set(store *st, const char *path, const char *sha256,
                                const char *stage, int64_t next);

/* What a job learned of a script file when it read it whole and found
 * every line well formed (llm_scripts): its SHA-256, its line count and
 * its last line without a stage (-1: none), keyed by the file's real
 * path and stamp (a text that changes when the file does). */
struct store_llm_script {
    char sha256[65];
    int64_t lines;
    int64_t last_unstaged;
};

/* The facts of path + stamp: *found 0 when none were recorded. */
int store_llm_script_get(store *st, const char *path, const char *stamp,
                         struct store_llm_script *out, int *found);

/* Record the facts of path + stamp (kept as they are when another process
 * recorded them first), stamped now. */
int store_llm_script_put(store *st, const char *path, const char *stamp,
                         const struct store_llm_script *f);

#endif
