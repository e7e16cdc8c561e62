/*
 * llm.h - talking to language models: one chat call, a failover chain,
 * error classes, usage and cost.
 *
 * A client is built from the configuration (llm.models, or the
 * llm.provider/llm.model shortcut and its GOALD_LLM_* variables; see
 * docs/llm.md).  It holds the model chain in failover order.  Providers:
 * "openai" (any Chat Completions endpoint), "anthropic" (Messages API),
 * "script" (answers read from a JSONL file).
 *
 * API keys are read from the environment when a request is sent and are
 * never copied into the error slot, an llm_error, an event or a log line.
 *
 * Memory: everything the caller passes in is borrowed for the duration of
 * the call.  Everything handed back (llm_response, llm_error contents,
 * llm_message built with the helpers) is owned by the caller and freed
 * with the matching *_release() function.  A ReAct loop may move
 * resp.message into its history: copy the struct, then zero the source
 * (memset) before llm_response_release().
 *
 * A client is not thread-safe; one per thread.  It keeps one HTTP
 * connection alive between calls.
 */
#ifndef GOALD_LLM_LLM_H
#define GOALD_LLM_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

enum llm_role { LLM_SYSTEM, LLM_USER, LLM_ASSISTANT, LLM_TOOL };

struct llm_tool_call {
    char *id; /* provider's id; tool results refer to it */
    char *name;
    char *arguments; /* JSON object text */
};

/* A reasoning block of an assistant turn (Anthropic's thinking and
 * redacted_thinking), kept exactly as the provider sent it: the Messages
 * API wants it back unmodified, in order, with the turn's tool calls. */
struct llm_thinking {
    char *block; /* the block as JSON object text ({"type":"thinking","thinking","signature"}
                    or {"type":"redacted_thinking","data"}) */
    size_t at;   /* how many of the turn's tool calls came before it */
};

struct llm_message {
    enum llm_role role;
    char *content;               /* may be NULL (an assistant turn with only calls) */
    struct llm_tool_call *calls; /* assistant: the tool calls, ncalls of them */
    size_t ncalls;
    char *tool_call_id;            /* tool: the call this answers */
    int is_error;                  /* tool: the result is an error */
    struct llm_thinking *thinking; /* assistant: reasoning blocks, nthinking of them, in order */
    size_t nthinking;
};

struct llm_tool_def {
    const char *name;
    const char *description;
    const char *parameters_json; /* a JSON schema object, NULL: {"type":"object"} */
};

struct llm_request {
    const char *stage; /* elaborate|plan|execute|condense|review|plan_b|escalate (X-Goald-Stage) */
    const char *run_id, *goal_id, *item_id; /* any may be NULL; run_id goes in X-Goald-Run */
    const struct llm_message *messages;
    size_t nmessages;
    const struct llm_tool_def *tools;
    size_t ntools;
    const char *response_schema; /* JSON schema text: the answer is one JSON object; or NULL */
    int max_output_tokens;       /* 0: llm.max_output_tokens */
};
/* An answer cut at the output cap (finish_reason length), refused or
 * withheld by a content filter is never handed back for a request with
 * tools or a response_schema: it fails as truncated (after one more try
 * with a larger cap) or refused.  A plain-text request (no tools, no
 * schema) gets it as it came, finish_reason and refusal set. */

struct llm_usage {
    int64_t input;        /* every prompt token, cached ones included */
    int64_t cached_input; /* of input: read from the provider's prompt cache */
    int64_t cache_write;  /* of input: written to the cache (Anthropic); priced as input */
    int64_t output;       /* completion tokens (reasoning tokens included) */
};

struct llm_response {
    struct llm_message message; /* role LLM_ASSISTANT */
    char *json;                 /* with a response_schema: the answer's JSON object text */
    struct llm_usage usage;
    double cost_usd;
    int64_t latency_ms;
    char *finish_reason; /* "stop", "tool_calls", "length", or the provider's word */
    char *refusal;       /* the model's refusal (OpenAI's message.refusal), or NULL */
    char *model;         /* as the provider reported it */
    char *provider;
    int model_index; /* the chain position that answered */
};

/* Error classes, shared with the control plane (runs.error_class). */
enum llm_error_class {
    LLM_ERR_NONE = 0,
    LLM_ERR_RATE_LIMIT,
    LLM_ERR_PROVIDER_API,
    LLM_ERR_TIMEOUT,
    LLM_ERR_AUTH,
    LLM_ERR_CONTEXT_LENGTH,
    LLM_ERR_INVALID_RESPONSE,
    LLM_ERR_BUDGET,
    LLM_ERR_CONFIG,    /* the configuration names a model the endpoint does not serve */
    LLM_ERR_TRUNCATED, /* the answer was cut at the output cap (finish_reason length) */
    LLM_ERR_REFUSED,   /* the model refused, or the provider's content filter withheld it */
    LLM_ERR__COUNT
};

struct llm_error {
    enum llm_error_class cls;
    int http_status;        /* 0 when there was no HTTP answer */
    int64_t retry_after_ms; /* from Retry-After (header or body), -1 when absent */
    char *message;          /* redacted; caller frees with llm_error_release() */
    int model_index;        /* the chain position that failed last */
};

/* "rate_limit", "provider_api", ... ("" for LLM_ERR_NONE). */
const char *llm_error_class_name(enum llm_error_class c);
/* The class of a name; -1 when unknown. */
int llm_error_class_parse(const char *name);

typedef struct llm_client llm_client;

struct llm_model_info {
    const char *provider, *model, *base_url;
    const char *api_key_env; /* the variable holding the key, "" when none is needed */
    int key_set;             /* 1 when that variable is set and not empty */
    double price_in, price_cached_in, price_out; /* USD per million tokens */
    int price_known; /* 0: no price in the table nor the configuration (costs 0) */
    const char *script;                          /* script provider: the file */
    int64_t context_window;                      /* tokens */
};

/* Build a client from the configuration.  st may be NULL: then no events,
 * no accounting, no budget check, and script cursors live in memory.
 * With a store (a client that will call models), an openai entry at a
 * .../v1 base URL without a configured window asks the server whether it
 * is Ollama and which window it applies (docs/llm.md, "Ollama").  The
 * store is borrowed and must outlive the client.  Errors: ERR_INVALID (a
 * configuration problem, named).  Free with llm_client_free(). */
int llm_client_open(llm_client **out, store *st);
void llm_client_free(llm_client *c);

/* The fingerprint (64 hex digits) of the model configuration as this
 * process sees it: llm.* settings and the length of each key variable
 * (never a key itself).  Two processes with the same configuration get
 * the same value; a breaker opened by a configuration error remembers it
 * to notice when the configuration changed. */
void llm_config_fingerprint(char out[65]);

size_t llm_client_nmodels(const llm_client *c);
/* Information about chain position i; the strings belong to the client. */
int llm_client_model(const llm_client *c, size_t i, struct llm_model_info *out);

/* May a goal with a USD budget use this chain?  0 when every model has a
 * known price (the table of docs/llm.md, or the configuration); else
 * ERR_INVALID naming the first model without one and the settings that
 * give it (llm.models[i].price_* or llm.price_*): such a model would
 * count as $0 against budget.max_cost_usd. */
int llm_client_prices_check(const llm_client *c);

/* One chat call on chain position model_index, with the retry policy of
 * docs/llm.md (rate limits, provider errors, timeouts, invalid responses;
 * never auth).  0 and *resp filled, or ERR_FAIL with *err filled (its class
 * says why); ERR_INVALID for a bad request (no message, bad index).  Both
 * out structs are zeroed first; release them either way. */
int llm_chat(llm_client *c, int model_index, const struct llm_request *req,
             struct llm_response *resp, struct llm_error *err);

/* The failover chain: llm_chat() on start_index, then on each following
 * model when the error class warrants it (an llm.failover event each
 * time).  *index_out receives the position it ended on (the one that
 * answered, or the last that failed), which the caller persists on the
 * work item so the next run starts there. */
int llm_chat_chain(llm_client *c, int start_index, const struct llm_request *req,
                   struct llm_response *resp, struct llm_error *err, int *index_out);

/* 1 when an error of this class moves the chain to the next model. */
int llm_error_fails_over(enum llm_error_class c);

/* Add usage and cost to runs.tokens_* / cost_usd of run_id and
 * goals.spent_tokens / spent_cost_usd of goal_id (looked up from the run
 * when NULL), in one transaction (nested in the caller's, if any).  Either
 * id may be NULL or name no row: that part is skipped. */
int llm_account(store *st, const char *run_id, const char *goal_id, const struct llm_usage *u,
                double cost_usd);

/* USD cost of usage at prices per million tokens (cached input priced at
 * price_cached_in, the rest of the input at price_in). */
double llm_cost(const struct llm_usage *u, double price_in, double price_cached_in,
                double price_out);

/* Find the first balanced JSON object in text (in a ```json fence or
 * not) that parses.  *out receives a malloc'd copy (caller frees).
 * ERR_NOTFOUND when there is none. */
int llm_json_extract(char **out, const char *text);

/* Message helpers.  llm_message_init() fills m with copies (content may be
 * NULL); llm_message_add_call() appends a copied tool call;
 * llm_message_tool_result() fills m as a tool message;
 * llm_message_release() frees the contents, llm_messages_free() an array
 * of n and the array itself (accepts NULL). */
int llm_message_init(struct llm_message *m, enum llm_role role, const char *content);
int llm_message_add_call(struct llm_message *m, const char *id, const char *name,
                         const char *arguments);
/* A tool result answering call_id (copies; content may be NULL). */
int llm_message_tool_result(struct llm_message *m, const char *call_id, const char *content,
                            int is_error);
/* Append a copy of a reasoning block (JSON object text) after `at` of the
 * turn's tool calls. */
int llm_message_add_thinking(struct llm_message *m, const char *block, size_t at);
void llm_message_release(struct llm_message *m);
void llm_messages_free(struct llm_message *msgs, size_t n);
void llm_response_release(struct llm_response *r);
void llm_error_release(struct llm_error *e);

/* Messages from/to JSON in the OpenAI Chat Completions shape
 * ([{"role","content","tool_calls":[{"id","type":"function","function":
 * {"name","arguments"}}],"tool_call_id"}]), for the CLI and context
 * packs; an assistant's reasoning blocks ride along as "thinking": [{"at",
 * "block": {...}}] (goald's own key).  llm_messages_from_json(): *out is an array of *n messages,
 * free with llm_messages_free(); ERR_INVALID names the bad element. */
struct cJSON;
int llm_messages_from_json(struct llm_message **out, size_t *n, const struct cJSON *arr);
struct cJSON *llm_message_to_json(const struct llm_message *m); /* cJSON_Delete */

/* Replace every known API key value (the variables the chain names and
 * the usual ones) and anything shaped like a bearer token or an "sk-" key
 * in s with ***REDACTED***, in place when it fits, returning a malloc'd
 * string (caller frees).  Never NULL (aborts on OOM). */
char *llm_redact(const llm_client *c, const char *s);

#endif
