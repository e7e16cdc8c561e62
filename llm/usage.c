/*
 * usage.c - prices, cost, and adding usage to runs and goals.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "store/goal.h"
#include "store/run.h"
#include "util/id.h"

/* ---- prices ----------------------------------------------------------- */

/* Published list prices, USD per million tokens (input, cached input,
 * output), used when a chain entry gives none.  Unknown models cost 0:
 * set price_in/price_cached_in/price_out in llm.models for them.  The
 * longest matching prefix wins ("gpt-4o-mini" before "gpt-4o"). */
static const struct {
    const char *prefix;
    double in, cached_in, out;
} default_prices[] = {
    {"gpt-4o-mini", 0.15, 0.075, 0.60},
    {"gpt-4o", 2.50, 1.25, 10.00},
    {"gpt-4.1-nano", 0.10, 0.025, 0.40},
    {"gpt-4.1-mini", 0.40, 0.10, 1.60},
    {"gpt-4.1", 2.00, 0.50, 8.00},
    {"o4-mini", 1.10, 0.275, 4.40},
    {"o3-mini", 1.10, 0.55, 4.40},
    {"claude-3-5-haiku", 0.80, 0.08, 4.00},
    {"claude-3-5-sonnet", 3.00, 0.30, 15.00},
    {"claude-3-7-sonnet", 3.00, 0.30, 15.00},
    {"claude-sonnet-4", 3.00, 0.30, 15.00},
    {"claude-opus-4", 15.00, 1.50, 75.00},
};

void llm_price_default(const char *model, double *in, double *cached, double *out)
{
    size_t best = 0;

    *in = *cached = *out = 0;
    for (size_t i = 0; model && i < sizeof(default_prices) / sizeof(default_prices[0]); i++) {
        size_t n = strlen(default_prices[i].prefix);
        if (n > best && !strncmp(model, default_prices[i].prefix, n)) {
            best = n;
            *in = default_prices[i].in;
            *cached = default_prices[i].cached_in;
            *out = default_prices[i].out;
        }
    }
}

/* Published context windows (tokens) by model-name prefix; the longest
 * matching prefix wins.  A name that matches none gets 32768, which every
 * model goald is likely to drive holds. */
static const struct {
    const char *prefix;
    int64_t tokens;
} default_windows[] = {
    {"gpt-4o", 128000},        {"gpt-4.1", 1047576},     {"gpt-4-turbo", 128000},
    {"gpt-5", 400000},         {"o1", 200000},           {"o3", 200000},
    {"o4-mini", 200000},       {"claude-", 200000},      {"qwen2.5-coder", 32768},
    {"qwen2.5", 32768},        {"qwen3", 40960},         {"llama3.1", 131072},
    {"llama3.2", 131072},      {"llama3.3", 131072},     {"llama3", 8192},
    {"deepseek-coder-v2", 163840}, {"mistral", 32768},
};

int64_t llm_context_window_default(const char *model)
{
    size_t best = 0;
    int64_t w = 32768;

    for (size_t i = 0; model && i < sizeof(default_windows) / sizeof(default_windows[0]); i++) {
        size_t n = strlen(default_windows[i].prefix);
        if (n > best && !strncmp(model, default_windows[i].prefix, n)) {
            best = n;
            w = default_windows[i].tokens;
        }
    }
    return w;
}

double llm_cost(const struct llm_usage *u, double price_in, double price_cached_in,
                double price_out)
{
    int64_t cached = u->cached_input < u->input ? u->cached_input : u->input;
    double c = (double)(u->input - cached) * price_in + (double)cached * price_cached_in +
               (double)u->output * price_out;
    return c / 1e6;
}

/* The run's counters, then its goal's spend (the goal the caller names,
 * else the run's), in one transaction. */
int llm_account(store *st, const char *run_id, const char *goal_id, const struct llm_usage *u,
                double cost_usd)
{
    char gid[ID_SIZE] = "";
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if (run_id &&
        (rc = store_run_add_usage(st, run_id, u->input, u->cached_input, u->output, cost_usd,
                                  gid)) != 0)
        goto out;
    if (!goal_id && gid[0])
        goal_id = gid;
    if (goal_id)
        rc = store_goal_add_spend(st, goal_id, u->input + u->output, cost_usd);
out:
    if (rc) {
        store_tx_rollback(st);
        return rc;
    }
    return store_tx_commit(st);
}

int64_t llm_token_count(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
        return 0;
    return v->valuedouble < 1e15 ? (int64_t)v->valuedouble : (int64_t)1e15;
}

int llm_output_tokens(const struct llm_client *c, const struct llm_model *m,
                      const struct llm_request *req)
{
    int64_t n = c->max_output_tokens, quarter;

    if (req->max_output_tokens > 0)
        return req->max_output_tokens;
    if (m->context_window > 0) {
        quarter = m->context_window / 4;
        if (quarter < 256)
            quarter = 256;
        if (n > quarter)
            n = quarter;
    }
    return (int)n;
}
