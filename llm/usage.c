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

/* List prices, USD per million tokens (input, cached input, output), used
 * when a chain entry gives none.  Read on 2026-11-27 from
 *   https://developers.openai.com/api/docs/pricing (and its model pages)
 *   https://platform.claude.com/docs/en/about-claude/pricing (and its model
 *   pages)
 * A row names one model family; a name matches it exactly or with a
 * snapshot suffix ("-20251001", "-2025-08-07", "-latest"), never by a
 * shorter prefix: "gpt-5" does not price "gpt-5.5" nor "gpt-5-pro", and
 * "claude-opus-4" does not price "claude-opus-4-5".  A model not here has
 * no price: it is refused under a USD budget until llm.models[].price_* or
 * llm.price_* give one (llm_client_prices_check()).  Prices that depend
 * on the prompt's length (Claude Haiku 5.5) are left out for that reason;
 * above 200K input tokens some models charge more than listed (docs/llm.md). */
static const struct {
    const char *family;
    double in, cached_in, out;
} default_prices[] = {
    /* OpenAI */
    {"gpt-5.5", 5.00, 0.50, 30.00},
    {"gpt-5.4", 2.50, 0.25, 15.00},
    {"gpt-5.4-mini", 0.75, 0.075, 4.50},
    {"gpt-5.4-nano", 0.20, 0.02, 1.25},
    {"gpt-5.2", 1.75, 0.175, 14.00},
    {"gpt-5.1", 1.25, 0.125, 10.00},
    {"gpt-5", 1.25, 0.125, 10.00},
    {"gpt-5-mini", 0.25, 0.025, 2.00},
    {"gpt-5-nano", 0.05, 0.005, 0.40},
    {"gpt-4.1", 2.00, 0.50, 8.00},
    {"gpt-4.1-mini", 0.40, 0.10, 1.60},
    {"gpt-4.1-nano", 0.10, 0.025, 0.40},
    {"gpt-4o", 2.50, 1.25, 10.00},
    {"gpt-4o-2024-05-13", 5.00, 5.00, 15.00}, /* this snapshot, not its family's */
    {"gpt-4o-mini", 0.15, 0.075, 0.60},
    {"o3", 2.00, 0.50, 8.00},
    {"o3-mini", 1.10, 0.55, 4.40},
    {"o4-mini", 1.10, 0.275, 4.40},
    /* Anthropic */
    {"claude-opus-5-5", 4.00, 0.20, 20.00},
    {"claude-opus-5", 5.00, 0.50, 25.00},
    {"claude-opus-4-8", 5.00, 0.50, 25.00},
    {"claude-opus-4-7", 5.00, 0.50, 25.00},
    {"claude-opus-4-6", 5.00, 0.50, 25.00},
    {"claude-opus-4-5", 5.00, 0.50, 25.00},
    {"claude-opus-4-1", 15.00, 1.50, 75.00},
    {"claude-opus-4-0", 15.00, 1.50, 75.00},
    {"claude-opus-4", 15.00, 1.50, 75.00},
    {"claude-sonnet-5-5", 2.00, 0.20, 10.00},
    {"claude-sonnet-5", 2.00, 0.20, 10.00},
    {"claude-sonnet-4-6", 3.00, 0.30, 15.00},
    {"claude-sonnet-4-5", 3.00, 0.30, 15.00},
    {"claude-sonnet-4-0", 3.00, 0.30, 15.00},
    {"claude-sonnet-4", 3.00, 0.30, 15.00},
    {"claude-3-7-sonnet", 3.00, 0.30, 15.00},
    {"claude-3-5-sonnet", 3.00, 0.30, 15.00},
    {"claude-haiku-4-5", 1.00, 0.10, 5.00},
    {"claude-3-5-haiku", 0.80, 0.08, 4.00},
    {"claude-3-haiku", 0.25, 0.03, 1.25},
};

/* n digits at p */
static int digits(const char *p, int n)
{
    for (int i = 0; i < n; i++)
        if (!isdigit((unsigned char)p[i]))
            return 0;
    return 1;
}

/* Is rest (what follows a family's name) a snapshot of it: nothing,
 * "-YYYYMMDD", "-YYYY-MM-DD" or "-latest"? */
static int snapshot_suffix(const char *rest)
{
    if (!*rest)
        return 1;
    if (*rest++ != '-')
        return 0;
    if (!strcmp(rest, "latest"))
        return 1;
    if (strlen(rest) == 8 && digits(rest, 8))
        return 1;
    return strlen(rest) == 10 && digits(rest, 4) && rest[4] == '-' && digits(rest + 5, 2) &&
           rest[7] == '-' && digits(rest + 8, 2);
}

int llm_price_default(const char *model, double *in, double *cached, double *out)
{
    size_t nrows = sizeof(default_prices) / sizeof(default_prices[0]);

    *in = *cached = *out = 0;
    /* a row naming the exact snapshot first, then the families */
    for (size_t pass = 0; model && pass < 2; pass++)
    for (size_t i = 0; i < nrows; i++) {
        size_t n = strlen(default_prices[i].family);
        if (!strncmp(model, default_prices[i].family, n) &&
            (pass == 0 ? model[n] == '\0' : snapshot_suffix(model + n))) {
            *in = default_prices[i].in;
            *cached = default_prices[i].cached_in;
            *out = default_prices[i].out;
            return 1;
        }
    }
    return 0;
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
