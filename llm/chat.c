/*
 * chat.c - one chat call on one model with the retry policy, and the
 * failover chain; the events of a call, the budget check, and the usage
 * recorded with its event.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/llm.h"
#include "store/run.h"
#include "util/budget.h"
#include "util/config.h"
#include "util/id.h"
#include "util/log.h"
#include "util/retry.h"
#include "util/timeutil.h"

/* ---- events, accounting, budget ---------------------------------------- */

struct call_ids {
    const char *run_id, *item_id;
    char goal_id[ID_SIZE]; /* "" when unknown */
    char item_buf[ID_SIZE];
};

/* The ids a call's events and accounting go under: the request's, the
 * missing ones from its run. */
static void ids_resolve(llm_client *c, const struct llm_request *req, struct call_ids *ids)
{
    char goal_id[ID_SIZE], item_id[ID_SIZE];

    memset(ids, 0, sizeof(*ids));
    ids->run_id = req->run_id;
    ids->item_id = req->item_id;
    if (req->goal_id)
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(ids->goal_id, sizeof(ids->goal_id), "%s", req->goal_id);
    if (!c->st || !req->run_id || (req->goal_id && req->item_id))
        return;
    if (store_run_get_goal_item(c->st, req->run_id, goal_id, item_id) != 0)
        return;
    if (!req->goal_id && goal_id[0])
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(ids->goal_id, sizeof(ids->goal_id), "%s", goal_id);
    if (!req->item_id && item_id[0]) {
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(ids->item_buf, sizeof(ids->item_buf), "%s", item_id);
        ids->item_id = ids->item_buf;
    }
}

/* Write one event in its own transaction; a failure is logged, not fatal
 * (the call itself went through or failed for its own reason). */
static void event_put(llm_client *c, const struct call_ids *ids, const char *type, cJSON *p)
{
    if (c->st) {
        if (store_tx_begin(c->st) == 0) {
            if (store_event_add(c->st, ids->goal_id[0] ? ids->goal_id : NULL, ids->item_id,
                                ids->run_id, type, p, NULL) == 0) {
                if (store_tx_commit(c->st) != 0)
                    log_warn("llm: %s event: %s", type, err_last());
            } else {
                log_warn("llm: %s event: %s", type, err_last());
                store_tx_rollback(c->st);
            }
        }
    }
    cJSON_Delete(p);
}

/* 1 (and err set) when the goal has spent its token or cost budget, or
 * has a cost budget that model m, having no price, would not count
 * against. */
static int budget_exhausted(llm_client *c, const struct call_ids *ids, const struct llm_model *m,
                            struct llm_error *err)
{
    struct budget_facts f;
    struct budget_verdict v;

    if (!c->st || !ids->goal_id[0])
        return 0;
    if (store_goal_budget_get(c->st, ids->goal_id, &f) != 0)
        return 0;
    if (f.has_max_cost && !m->price_known) {
        llm_error_setf(c, err, LLM_ERR_BUDGET, 0,
                       "model %s has no known price and the goal has a USD budget: set "
                       "llm.models[].price_in/price_out or llm.price_in/llm.price_out",
                       m->model);
        return 1;
    }
    switch (budget_check(&f, BUDGET_SPENT, 0, 0, &v)) {
    case BUDGET_TOKENS:
        llm_error_setf(c, err, LLM_ERR_BUDGET, 0, "goal token budget spent: %lld of %lld tokens",
                       (long long)f.spent_tokens, (long long)f.max_tokens);
        return 1;
    case BUDGET_COST_USD:
        llm_error_setf(c, err, LLM_ERR_BUDGET, 0, "goal cost budget spent: $%.4f of $%.4f",
                       f.spent_cost_usd, f.max_cost_usd);
        return 1;
    case BUDGET_HOURS: /* not this rule's */
    case BUDGET_OK:
        break;
    }
    return 0;
}

/* ---- the model's output limit -------------------------------------------- */

int llm_output_cap(const struct llm_client *c, const struct llm_model *m,
                   const struct llm_request *req)
{
    int n = llm_output_tokens(c, m, req);

    return m->max_output > 0 && n > m->max_output ? m->max_output : n;
}

void llm_output_limit_load(llm_client *c, struct llm_model *m)
{
    int64_t limit = 0;

    if (m->max_output_loaded)
        return;
    m->max_output_loaded = 1;
    if (!c->st || !m->base_url || !m->model || m->kind == LLM_KIND_SCRIPT)
        return;
    if (store_llm_output_limit_get(c->st, m->base_url, m->model, &limit) != 0) {
        log_warn("llm: output limit of %s %s: %s", m->base_url, m->model, err_last());
        return;
    }
    if (limit > 0 && limit <= 1 << 24)
        m->max_output = (int)limit;
}

void llm_output_limit_learn(llm_client *c, struct llm_model *m, int limit)
{
    log_info("llm: %s takes at most %d output tokens", m->model, limit);
    m->max_output = limit;
    if (c->st && m->base_url && m->model &&
        store_llm_output_limit_put(c->st, m->base_url, m->model, limit) != 0)
        log_warn("llm: output limit of %s %s: %s", m->base_url, m->model, err_last());
}

/* ---- one model, with retries --------------------------------------------- */

static int provider_call(llm_client *c, struct llm_model *m, const struct llm_request *req,
                         struct llm_response *resp, struct llm_error *err)
{
    switch (m->kind) {
    case LLM_KIND_OPENAI:
        return llm_openai_chat(c, m, req, resp, err);
    case LLM_KIND_ANTHROPIC:
        return llm_anthropic_chat(c, m, req, resp, err);
    case LLM_KIND_SCRIPT:
        return llm_script_chat(c, m, req, resp, err);
    }
    return err_set(ERR_INVALID, "unknown provider");
}

/* Before retry n (1-based): the server's wait when it gave one (capped by
 * llm.retry.retry_after_max_ms: past it, *give_up), else backoff from
 * llm.retry.backoff_ms capped by llm.retry.backoff_max_ms (util/retry,
 * scaled by GOALD_TIME_SCALE). */
static int64_t wait_ms(int64_t server_ms, int n, int *give_up)
{
    int64_t base = config_int(CFG_LLM_RETRY_BACKOFF_MS);
    if (server_ms >= 0)
        return retry_wait_ms(server_ms, n, base, config_int(CFG_LLM_RETRY_AFTER_MAX_MS), give_up);
    return retry_wait_ms(-1, n, base, config_int(CFG_LLM_RETRY_BACKOFF_MAX_MS), give_up);
}

/* Whether a provider_api error is worth another try on the same model:
 * the server's trouble (5xx, no answer, 408, 409, 429 under this class),
 * not a refused request (400, 404, ...). */
static int provider_transient(const struct llm_error *e)
{
    int s = e->http_status;
    return s == 0 || s >= 500 || s == 408 || s == 409 || s == 429;
}

static cJSON *base_payload(const struct llm_request *req, const struct llm_model *m, int index,
                           int attempt)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "stage", req->stage ? req->stage : "");
    cJSON_AddStringToObject(p, "provider", m->provider);
    cJSON_AddStringToObject(p, "model", m->model);
    cJSON_AddNumberToObject(p, "model_index", index);
    cJSON_AddNumberToObject(p, "attempt", attempt);
    return p;
}

/* A structured answer (req->response_schema) must hold a JSON object:
 * text without one is an invalid_response (resp released).  (A refusal
 * or a content filter's answer never gets here: answer_unusable().)  0 or
 * ERR_FAIL. */
static int answer_json(llm_client *c, const struct llm_request *req, struct llm_response *resp,
                       struct llm_error *err)
{
    const char *text = resp->message.content;
    const char *stage = req->stage ? req->stage : "?";

    if (!req->response_schema || resp->json)
        return 0;
    if (llm_json_extract(&resp->json, text) != 0)
        llm_error_setf(c, err, LLM_ERR_INVALID_RESPONSE, 200,
                       "stage %s: the answer holds no JSON object", stage);
    else
        return 0;
    llm_response_release(resp);
    return ERR_FAIL;
}

/* One call's place in the loop of llm_chat(). */
struct call {
    const struct llm_request *req;
    struct llm_model *m;
    int index, attempt;
};

static int answer_record(llm_client *c, const struct call_ids *ids, const struct call *k,
                         int64_t t0, struct llm_response *resp, struct llm_error *err);

static int reason_is(const struct llm_response *r, const char *s)
{
    return r->finish_reason && !strcmp(r->finish_reason, s);
}

/* The output cap a truncated answer's retry may have: twice the one it
 * had, within the model's output limit (when known) and the room its
 * window leaves after the prompt (input, from the answer's usage); 0 when
 * that is no larger. */
static int output_grown(const struct llm_model *m, int cap, int64_t input)
{
    int64_t n = (int64_t)cap * 2;

    if (m->max_output > 0 && n > m->max_output)
        n = m->max_output;
    if (m->context_window > 0) {
        int64_t room = m->context_window - (input > 0 ? input : m->context_window / 2) - 16;
        if (n > room)
            n = room;
    }
    if (n > 1 << 24)
        n = 1 << 24;
    return n > cap ? (int)n : 0;
}

/* An answer that must not be used for a request with tools or a schema:
 * cut at the output cap (its tool calls may be cut too: never run), a
 * refusal, or a content filter's.  0 when usable (or for a plain-text
 * request).  Else its usage is recorded (the llm.response event: the
 * tokens were spent), resp released and err set: truncated (*grow: the
 * cap a retry may have, 0 none) or refused; ERR_FAIL. */
static int answer_unusable(llm_client *c, const struct call_ids *ids, const struct call *k,
                           int64_t t0, struct llm_response *resp, struct llm_error *err, int *grow)
{
    const struct llm_request *req = k->req;
    const char *stage = req->stage ? req->stage : "?";
    int truncated = reason_is(resp, "length");
    int filtered = reason_is(resp, "content_filter");
    int cap = llm_output_cap(c, k->m, req);
    int64_t input = resp->usage.input;
    char *refusal = NULL;
    int rc;

    *grow = 0;
    if ((!req->ntools && !req->response_schema) ||
        (!truncated && !filtered && !resp->refusal && !reason_is(resp, "refusal")))
        return 0;
    refusal = resp->refusal ? xstrdup(resp->refusal)
                            : xstrdup(resp->message.content ? resp->message.content : "");
    if ((rc = answer_record(c, ids, k, t0, resp, err)) != 0)
        goto out;
    llm_response_release(resp);
    if (truncated) {
        *grow = output_grown(k->m, cap, input);
        llm_error_setf(c, err, LLM_ERR_TRUNCATED, 200,
                       "stage %s: the answer was cut at the output cap (max_tokens %d, "
                       "finish_reason length): not used, none of its tool calls run%s",
                       stage, cap, *grow ? "" : "; no larger cap fits the model");
    } else if (filtered) {
        llm_error_setf(c, err, LLM_ERR_REFUSED, 200,
                       "stage %s: the provider's content filter withheld the answer "
                       "(finish_reason content_filter)",
                       stage);
    } else {
        llm_error_setf(c, err, LLM_ERR_REFUSED, 200, "stage %s: the model refused: %.300s", stage,
                       *refusal ? refusal : "(no reason given)");
    }
    rc = ERR_FAIL;
out:
    free(refusal);
    return rc;
}

/* A success: fill in what the provider left out, then the llm.response
 * event, the usage and the run's model in one transaction.  0, or the
 * store's error (err set, resp released). */
static int answer_record(llm_client *c, const struct call_ids *ids, const struct call *k,
                         int64_t t0, struct llm_response *resp, struct llm_error *err)
{
    struct llm_model *m = k->m;
    cJSON *p = base_payload(k->req, m, k->index, k->attempt);
    int rc = 0;

    resp->latency_ms = time_mono_ms() - t0;
    resp->cost_usd = llm_cost(&resp->usage, m->price_in, m->price_cached_in, m->price_out);
    resp->model_index = k->index;
    if (!resp->model)
        resp->model = xstrdup(m->model);
    resp->provider = xstrdup(m->provider);
    if (!resp->finish_reason)
        resp->finish_reason = xstrdup(resp->message.ncalls ? "tool_calls" : "stop");
    cJSON_AddStringToObject(p, "response_model", resp->model);
    cJSON_AddNumberToObject(p, "tokens_in", (double)resp->usage.input);
    cJSON_AddNumberToObject(p, "tokens_cached", (double)resp->usage.cached_input);
    cJSON_AddNumberToObject(p, "tokens_out", (double)resp->usage.output);
    cJSON_AddNumberToObject(p, "cost_usd", resp->cost_usd);
    cJSON_AddNumberToObject(p, "latency_ms", (double)resp->latency_ms);
    cJSON_AddStringToObject(p, "finish_reason", resp->finish_reason);
    cJSON_AddNumberToObject(p, "tool_calls", (double)resp->message.ncalls);
    if (c->st) {
        /* the usage and its event in one transaction */
        rc = store_tx_begin(c->st);
        if (rc == 0)
            rc = store_event_add(c->st, ids->goal_id[0] ? ids->goal_id : NULL, ids->item_id,
                                 ids->run_id, "llm.response", p, NULL);
        if (rc == 0)
            rc = llm_account(c->st, ids->run_id, ids->goal_id[0] ? ids->goal_id : NULL,
                             &resp->usage, resp->cost_usd);
        if (rc == 0 && ids->run_id)
            rc = store_run_set_model(c->st, ids->run_id, m->model, m->provider);
        if (rc == 0)
            rc = store_tx_commit(c->st);
        else
            store_tx_rollback(c->st);
    }
    cJSON_Delete(p);
    if (rc) {
        llm_error_setf(c, err, LLM_ERR_NONE, 0, "recording usage: %s", err_last());
        llm_response_release(resp);
    }
    return rc;
}

/* How many tries of each kind one model has had; grow: the output cap
 * the retry of a truncated answer may have (0: none), grown: it had one. */
struct tries {
    int rate, transient, invalid;
    int grow, grown;
};

/* After a failure: the wait before another try on this model (counted in
 * *t), or -1 for none.  final: no retry can mend it. */
static int64_t retry_decide(const struct llm_error *err, int final, struct tries *t)
{
    int64_t wait = -1;
    int give_up = 0;

    switch (final ? LLM_ERR_NONE : err->cls) {
    case LLM_ERR_RATE_LIMIT:
        if (t->rate < config_int(CFG_LLM_RETRY_RATE_LIMIT)) {
            wait = wait_ms(err->retry_after_ms, t->rate + 1, &give_up);
            if (give_up)
                wait = -1; /* too long to sit on: let the chain move on */
            else
                t->rate++;
        }
        break;
    case LLM_ERR_PROVIDER_API:
    case LLM_ERR_TIMEOUT:
        if ((err->cls == LLM_ERR_TIMEOUT || provider_transient(err)) &&
            t->transient < config_int(CFG_LLM_RETRY_MAX)) {
            wait = wait_ms(-1, t->transient + 1, &give_up);
            /* a 503 may say when to come back: not sooner than that */
            if (err->retry_after_ms >= 0) {
                int64_t w = wait_ms(err->retry_after_ms, t->transient + 1, &give_up);
                if (w > wait)
                    wait = w;
            }
            if (give_up)
                wait = -1;
            else
                t->transient++;
        }
        break;
    case LLM_ERR_TRUNCATED:
        if (t->grow > 0 && !t->grown) {
            wait = 0;
            t->grown = 1;
        }
        break;
    case LLM_ERR_INVALID_RESPONSE:
    case LLM_ERR_REFUSED:
        if (t->invalid < config_int(CFG_LLM_RETRY_INVALID)) {
            wait = 0;
            t->invalid++;
        }
        break;
    default: /* auth, context_length, budget: another try cannot help */
        break;
    }
    return wait;
}

/* The llm.error event and log line of a failed try. */
static void failure_report(llm_client *c, const struct call_ids *ids, const struct call *k,
                           const struct llm_error *err, int64_t wait)
{
    cJSON *p = base_payload(k->req, k->m, k->index, k->attempt);

    cJSON_AddStringToObject(p, "class", llm_error_class_name(err->cls));
    cJSON_AddNumberToObject(p, "status", err->http_status);
    if (err->retry_after_ms >= 0)
        cJSON_AddNumberToObject(p, "retry_after_ms", (double)err->retry_after_ms);
    cJSON_AddBoolToObject(p, "retry", wait >= 0);
    if (wait >= 0)
        cJSON_AddNumberToObject(p, "wait_ms", (double)wait);
    cJSON_AddStringToObject(p, "message", err->message ? err->message : "");
    event_put(c, ids, "llm.error", p);
    log_info("llm: %s %s: %s: %s%s", k->m->provider, k->m->model, llm_error_class_name(err->cls),
             err->message ? err->message : "", wait >= 0 ? " (retrying)" : "");
}

int llm_chat(llm_client *c, int model_index, const struct llm_request *req,
             struct llm_response *resp, struct llm_error *err)
{
    struct call_ids ids;
    struct llm_request sent = *req; /* its output cap grows after a truncated answer */
    struct call k = {.req = &sent, .index = model_index};
    struct tries tries = {0, 0, 0, 0, 0};

    memset(resp, 0, sizeof(*resp));
    memset(err, 0, sizeof(*err));
    err->retry_after_ms = -1;
    err->model_index = model_index;
    if (model_index < 0 || (size_t)model_index >= c->nmodels)
        return err_set(ERR_INVALID, "no model at chain position %d (the chain has %zu)",
                       model_index, c->nmodels);
    if (!req->nmessages)
        return err_set(ERR_INVALID, "a chat request needs at least one message");
    k.m = &c->models[model_index];
    llm_output_limit_load(c, k.m);
    ids_resolve(c, req, &ids);

    for (;;) {
        int64_t t0, wait;
        int rc, final;

        k.attempt++;
        if (budget_exhausted(c, &ids, k.m, err)) {
            cJSON *p = base_payload(req, k.m, model_index, k.attempt);
            cJSON_AddStringToObject(p, "class", "budget");
            cJSON_AddStringToObject(p, "message", err->message);
            event_put(c, &ids, "llm.error", p);
            return ERR_FAIL;
        }
        {
            cJSON *p = base_payload(req, k.m, model_index, k.attempt);
            if (k.m->kind != LLM_KIND_SCRIPT)
                cJSON_AddNumberToObject(p, "max_tokens", llm_output_cap(c, k.m, &sent));
            event_put(c, &ids, "llm.request", p);
        }
        t0 = time_mono_ms();
        llm_error_release(err);
        err->model_index = model_index;
        rc = provider_call(c, k.m, &sent, resp, err);
        if (rc == ERR_INVALID)
            return rc; /* the caller's request is wrong: no event, no retry */
        final = rc == ERR_NOTFOUND;
        if (final)
            rc = ERR_FAIL;
        if (rc == 0 && answer_unusable(c, &ids, &k, t0, resp, err, &tries.grow) != 0) {
            if (err->cls == LLM_ERR_NONE)
                return ERR_FAIL; /* the store failed recording it */
            rc = ERR_FAIL;
        }
        if (rc == 0)
            rc = answer_json(c, req, resp, err);
        if (rc == 0)
            return answer_record(c, &ids, &k, t0, resp, err);

        /* a failure: decide on another try on this model */
        wait = retry_decide(err, final, &tries);
        failure_report(c, &ids, &k, err, wait);
        if (wait < 0)
            return ERR_FAIL;
        if (err->cls == LLM_ERR_TRUNCATED)
            sent.max_output_tokens = tries.grow; /* the retry: a larger cap */
        if (wait > 0)
            time_sleep_ms(wait);
    }
}

int llm_chat_chain(llm_client *c, int start_index, const struct llm_request *req,
                   struct llm_response *resp, struct llm_error *err, int *index_out)
{
    int i = start_index < 0 ? 0 : start_index;
    int rc;

    if ((size_t)i >= c->nmodels) /* a persisted index past a shortened chain */
        i = (int)c->nmodels - 1;
    for (;;) {
        rc = llm_chat(c, i, req, resp, err);
        *index_out = i;
        if (rc != ERR_FAIL || !llm_error_fails_over(err->cls) || (size_t)i + 1 >= c->nmodels)
            return rc;
        {
            struct call_ids ids;
            cJSON *p = cJSON_CreateObject();
            ids_resolve(c, req, &ids);
            cJSON_AddStringToObject(p, "stage", req->stage ? req->stage : "");
            cJSON_AddStringToObject(p, "from", c->models[i].model);
            cJSON_AddStringToObject(p, "to", c->models[i + 1].model);
            cJSON_AddNumberToObject(p, "from_index", i);
            cJSON_AddNumberToObject(p, "to_index", i + 1);
            cJSON_AddStringToObject(p, "class", llm_error_class_name(err->cls));
            event_put(c, &ids, "llm.failover", p);
            log_info("llm: failover from %s to %s after %s", c->models[i].model,
                     c->models[i + 1].model, llm_error_class_name(err->cls));
        }
        llm_error_release(err);
        i++;
    }
}
