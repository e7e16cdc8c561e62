/*
 * llm_internal.h - what the pieces of llm/ share: the client, the model
 * entries, the HTTP boundary and the provider entry points.  Not for use
 * outside llm/ (the unit tests include it to reach the parsers).
 */
#ifndef GOALD_LLM_LLM_INTERNAL_H
#define GOALD_LLM_LLM_INTERNAL_H

#include <stdint.h>

#include "llm/llm.h"
#include "util/http.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

struct cJSON;
struct jsonbig;

enum llm_kind { LLM_KIND_OPENAI, LLM_KIND_ANTHROPIC, LLM_KIND_SCRIPT };

/* One chain entry; every string owned by the client. */
struct llm_model {
    enum llm_kind kind;
    char *provider, *model, *base_url, *api_key_env, *script;
    double price_in, price_cached_in, price_out;
    int price_known;        /* the prices come from the table or the configuration */
    int64_t context_window; /* tokens: configured, or the default for the model's name */
    int window_set;         /* context_window is configured: no probe replaces it */
    int64_t window_learned; /* a window an error of the endpoint stated (quirks), or 0 */
    int no_response_format; /* learned: the endpoint refused response_format */
    int use_max_completion; /* learned: the endpoint wants max_completion_tokens */
    int max_output;         /* learned: the most output tokens the model takes, 0: unknown */
    int max_output_loaded;  /* max_output was read from llm_endpoint_quirks */
};

struct llm_script; /* llm/script.c */

struct llm_client {
    store *st; /* borrowed, may be NULL */
    struct llm_model *models;
    size_t nmodels;
    http_conn *http;            /* kept between calls for connection reuse; NULL until the first */
    struct llm_script *scripts; /* loaded script files (a list) */
    int64_t connect_timeout_ms, timeout_ms;
    size_t max_body;
    int max_output_tokens;
    char *anthropic_version;
    int from_chain; /* the models come from llm.models, not the shortcut */
};

/* What came back over HTTP.  body is capped at the client's max_body. */
struct llm_http_result {
    int status;
    strbuf body;
    char content_type[128];
    int64_t retry_after_ms; /* -1: none */
};

void llm_http_result_release(struct llm_http_result *r);

/* POST body to url (util/http.h) with the standard headers (Content-Type,
 * Accept, X-Goald-Stage, X-Goald-Run) plus extra ("Name: value" lines,
 * NULL-terminated, at most 8; may be NULL; borrowed).  0 when an HTTP
 * answer arrived (whatever its status) with *res filled; ERR_FAIL with
 * *err classified (timeout, provider_api, invalid_response for an
 * oversized body) otherwise.  The transport error is classified here. */
int llm_http_post(llm_client *c, const char *url, const struct llm_request *req,
                  const char *const *extra, const char *body, struct llm_http_result *res,
                  struct llm_error *err);

/* Fill err from an HTTP answer that is not a success: the class from the
 * error body's type/code fields first, then the status.  kind selects the
 * body shape.  The message quotes the body's message, redacted. */
/* After llm_http_post(): a non-2xx status is classified (llm_classify_http)
 * and a body that is not JSON is an invalid_response.  0 when the answer
 * may be parsed, else ERR_FAIL with err filled. */
int llm_http_check(llm_client *c, enum llm_kind kind, const char *url,
                   const struct llm_http_result *res, struct llm_error *err);

void llm_classify_http(llm_client *c, enum llm_kind kind, int status, const char *body,
                       int64_t retry_after_ms, struct llm_error *err);

/* A JSON schema the request carries (a tool's parameters, the response
 * schema), parsed: text, or for NULL a schema of an empty object.  NULL
 * when text is not a JSON object, with ERR_INVALID "WHAT: not a JSON
 * object" in the error slot.  The caller frees it with cJSON_Delete(). */
struct cJSON *llm_schema_parse(const char *text, const char *what);

/* The request's tools as root's "tools" array (none without tools): for
 * Anthropic each {"name", "description", "input_schema"}, for the Chat
 * Completions shape each {"function": {"name", "description",
 * "parameters"}, "type": "function"}.  ERR_INVALID (in the error slot)
 * for parameters that are not a JSON object. */
int llm_tools_json(struct cJSON *root, const struct llm_request *req, enum llm_kind kind);

/* m's tool calls as the "tool_calls" array of the Chat Completions shape
 * (id, type "function", function name and arguments), added to o. */
void llm_message_calls_json(struct cJSON *o, const struct llm_message *m);

/* A 2xx reply's body parsed in place into jb (jsonbig_parse(), which takes
 * *body; release jb in every case): 0 when its root is a JSON object,
 * else ERR_FAIL with err an invalid_response. */
int llm_reply_parse(llm_client *c, struct jsonbig *jb, char **body, size_t len,
                    struct llm_error *err);

/* A 2xx reply that is an error object (root): err classified as the same
 * body with status 200 would be (llm_classify_http). */
void llm_reply_error(llm_client *c, enum llm_kind kind, const struct cJSON *root,
                     struct llm_error *err);

/* Set err (class, status, message formatted then redacted). */
void llm_error_setf(llm_client *c, struct llm_error *err, enum llm_error_class cls, int status,
                    const char *fmt, ...) GOALD_PRINTF(5, 6);

/* Providers: one request, no retries.  0 or ERR_FAIL with err set
 * (ERR_INVALID for a bad request from the caller; ERR_NOTFOUND with err
 * set for a failure that no retry on this model can mend, such as a
 * script that does not parse or has run out). */
int llm_openai_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                    struct llm_response *resp, struct llm_error *err);
int llm_anthropic_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                       struct llm_response *resp, struct llm_error *err);
int llm_script_chat(llm_client *c, struct llm_model *m, const struct llm_request *req,
                    struct llm_response *resp, struct llm_error *err);
void llm_scripts_free(struct llm_script *s);

/* Request builders and response parsers (pure: unit-tested on fixtures).
 * Builders append JSON text to out; ERR_INVALID for a bad request.
 * Parsers fill resp (message, usage, finish_reason, model) or err
 * (invalid_response). */
int llm_openai_build(strbuf *out, const struct llm_model *m, const struct llm_request *req,
                     int max_tokens, int with_response_format);
int llm_openai_parse(llm_client *c, const char *body, struct llm_response *resp,
                     struct llm_error *err);
/* The same on a body the parser may take apart: body (len bytes,
 * NUL-terminated, malloc'd) is taken and freed, or becomes the memory of a
 * long tool call's arguments (util/jsonbig.h): a write's content is never
 * held twice. */
int llm_openai_parse_take(llm_client *c, char *body, size_t len, struct llm_response *resp,
                          struct llm_error *err);
int llm_anthropic_build(strbuf *out, const struct llm_model *m, const struct llm_request *req,
                        int max_tokens);
int llm_anthropic_parse(llm_client *c, const char *body, struct llm_response *resp,
                        struct llm_error *err);

int llm_anthropic_parse_take(llm_client *c, char *body, size_t len, struct llm_response *resp,
                             struct llm_error *err);

/* The list prices of a model (docs/llm.md): 1 with *in, *cached, *out
 * set when the table knows its family, else 0 with all three 0. */
int llm_price_default(const char *model, double *in, double *cached, double *out);

/* The default context window of a model (tokens, docs/llm.md): by the
 * longest known name prefix, 32768 for an unknown name. */
int64_t llm_context_window_default(const char *model);

/* The output tokens to ask of m: the request's own, else llm.max_output_tokens
 * capped at a quarter of m's context window (at least 256), so that the
 * default fits small windows (a local 8k model is asked for 2048, not
 * 8192, and vLLM does not refuse the request). */
int llm_output_tokens(const struct llm_client *c, const struct llm_model *m,
                      const struct llm_request *req);


/* A tag for the tool-call ids goald makes up for a server that sends none
 * ("call_<tag>_<i>"): random and never 0, so that ids do not repeat across
 * the turns of a run, nor across the processes that resume it. */
void llm_call_tag(unsigned *tag);

/* What endpoints taught (llm_endpoint_quirks, keyed by base_url + model):
 * loaded into the chain at client start, saved when learned.  Without a
 * store, nothing; a store error is logged, not fatal. */
void llm_quirks_load(llm_client *c);
void llm_quirks_save(llm_client *c, const struct llm_model *m);

/* Ollama (llm/ollama.c).  llm_ollama_window(): the window a server
 * applies to model, from its /api/show answer (model_info's
 * <arch>.context_length, the parameters' num_ctx) and its /api/ps answer
 * (the loaded model's context_length; may be NULL): the smaller of the
 * trained length and the applied one (num_ctx, else the loaded length,
 * else Ollama's smallest default, 4096); 0 when show_json is not an
 * Ollama answer.  llm_ollama_probe(): for an openai entry at a base URL
 * ending in /v1 (not api.openai.com) whose window is not configured, ask
 * the server (short timeout) and set m->context_window to that window
 * (or the smaller one an error stated); nothing changes when the server
 * does not answer as Ollama does.  An answer (the window, or not an
 * Ollama) is remembered in c's store for an hour (store_llm_probe_put):
 * the next jobs do not ask. */
int64_t llm_ollama_window(const char *show_json, const char *ps_json, const char *model);
void llm_ollama_probe(llm_client *c, struct llm_model *m);

/* The max_tokens that fits after vLLM's "max_tokens too large" 400, or 0. */
int llm_openai_fit_max_tokens(int status, const char *body, int64_t *window_out);

/* The output tokens to ask of m: llm_output_tokens(), capped at the
 * model's output limit when an endpoint stated it (m->max_output). */
int llm_output_cap(const struct llm_client *c, const struct llm_model *m,
                   const struct llm_request *req);

/* The model's output limit an error body states, or 0: Anthropic's 400
 * "max_tokens: 8192 > 4096, which is the maximum allowed number of output
 * tokens for ...", OpenAI's "... This model supports at most 4096
 * completion tokens ...". */
int llm_output_limit_stated(int status, const char *body);

/* The message of an error body (parsed): error.message, an error that is
 * a string, or a top-level message; NULL when none.  Points into root. */
const char *llm_error_message(const struct cJSON *root);

/* The host of url is the operator's own: loopback, a private network
 * (10/8, 172.16/12, 192.168/16) or a name without a dot (llm/ollama.c
 * asks only such a server for its window). */
int llm_url_is_local(const char *url);

/* Learn m's output limit (kept in m->max_output and in
 * llm_endpoint_quirks.max_tokens for the next process); read it from
 * there once per client (llm_output_limit_load). */
void llm_output_limit_learn(llm_client *c, struct llm_model *m, int limit);
void llm_output_limit_load(llm_client *c, struct llm_model *m);

/* Anthropic's tool-use id for id: itself when it matches
 * ^[a-zA-Z0-9_-]+$, else its allowed characters (others as '_') and a
 * hash of the whole id, so that a call and its result map alike and two
 * ids stay apart.  out has at least 96 bytes. */
void llm_anthropic_tool_id(const char *id, char *out, size_t n);

/* The API key of a model from its environment variable, or NULL. */
const char *llm_model_key(const struct llm_model *m);

/* A token count from a provider's usage object (or a script line): 0
 * unless a positive number, capped at 1e15 (a negative count would give
 * budget back; a huge one would overflow the conversion and the sums). */
int64_t llm_token_count(const struct cJSON *usage, const char *key);

#endif
