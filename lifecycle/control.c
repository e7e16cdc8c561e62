#include "lifecycle/control.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/breaker.h"
#include "lifecycle/resolve.h"
#include "llm/llm.h"
#include "store/breaker.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/status.h"
#include "util/budget.h"
#include "util/config.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

int64_t control_backoff_ms(int n)
{
    int64_t base = config_int(CFG_CONTROL_BACKOFF_BASE_MS);
    int64_t max = config_int(CFG_CONTROL_BACKOFF_MAX_MS);
    int64_t v = base;

    if (n < 1)
        n = 1;
    for (int i = 1; i < n && v < max; i++)
        v *= 2;
    return v < max ? v : max;
}

static int limit_event(store *st, const char *goal_id, const char *item_id, const char *run_id,
                       const char *type, double value, double threshold, double estimate)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddStringToObject(p, "task_id", item_id ? item_id : (run_id ? run_id : ""));
    cJSON_AddStringToObject(p, "limit_type", type);
    cJSON_AddNumberToObject(p, "value", value);
    cJSON_AddNumberToObject(p, "threshold", threshold);
    if (estimate >= 0)
        cJSON_AddNumberToObject(p, "estimate", estimate);
    rc = store_event_add(st, goal_id, item_id, run_id, "control.limit_reached", p, NULL);
    cJSON_Delete(p);
    return rc;
}

int control_check_run(store *st, const char *goal_id, const char *item_id, const char *run_id,
                      const struct run_usage *u, int64_t now_mono_ms, const char **limit)
{
    int64_t max_turns = config_int(CFG_CONTROL_MAX_TURNS);
    int64_t max_wall = config_int(CFG_CONTROL_MAX_WALL_TIME_S) * 1000;
    int64_t max_tokens = config_int(CFG_CONTROL_MAX_TOKENS);
    const char *which = NULL;
    double value = 0, threshold = 0;
    int rc;

    if (u->turns >= max_turns) {
        which = "max_turns";
        value = u->turns;
        threshold = (double)max_turns;
    } else if (now_mono_ms - u->started_ms >= max_wall) {
        which = "max_wall_time";
        value = (double)(now_mono_ms - u->started_ms) / 1000.0;
        threshold = (double)max_wall / 1000.0;
    } else if (u->tokens >= max_tokens) {
        which = "max_tokens";
        value = (double)u->tokens;
        threshold = (double)max_tokens;
    }
    if (!which)
        return 0;
    *limit = which;
    if ((rc = limit_event(st, goal_id, item_id, run_id, which, value, threshold, -1)) != 0)
        return rc;
    return err_set(ERR_POLICY, "run limit %s reached (%g of %g)", which, value, threshold);
}

int control_check_budget(store *st, const char *goal_id, const char *item_id,
                         const char *run_id, int64_t est_tokens, double est_cost,
                         const char **which)
{
    struct budget_facts f;
    struct budget_verdict v;
    char type[32];
    int rc;

    if ((rc = store_goal_budget_get(st, goal_id, &f)) != 0)
        return rc;
    if (budget_check(&f, BUDGET_NEXT_CALL, est_tokens, est_cost, &v) == BUDGET_OK)
        return 0;
    *which = budget_limit_name(v.which);
    /* truncation: ok, a budget limit's name fits */
    snprintf(type, sizeof(type), "budget.%s", *which);
    if ((rc = limit_event(st, goal_id, item_id, run_id, type, v.value, v.threshold, v.estimate)))
        return rc;
    return err_set(ERR_POLICY, "goal budget %s would be exceeded (spent %g, next call ~%g, "
                               "limit %g)",
                   *which, v.value, v.estimate, v.threshold);
}

int control_check_prices(const struct goal *g, const llm_client *c)
{
    char why[512];

    if (!g || !c || !(g->budget_max_cost_usd > 0) || llm_client_prices_check(c) == 0)
        return 0;
    snprintf(why, sizeof(why), "%s", err_last()); /* truncation: ok, a message */
    return err_set(ERR_POLICY, "%s", why);
}

/* Does breaker b hold a claim made now?  An open breaker whose cooldown
 * passed, or a half-open one whose probe slot is free, lets this claim
 * through as its probe (written here). */
static int gate_one(store *st, const struct store_breaker *b, const char *fp_now,
                    int64_t now_ms, const char *probe_run_id, int *allowed)
{
    int64_t cooldown = config_int(CFG_BREAKER_COOLDOWN_S) * 1000;
    int rc;

    if (b->config_fp[0]) {
        /* opened by a configuration error: no cooldown, only a change of
         * the configuration (or a human) closes it - the daemon's sweep
         * does (breaker_config_sweep(), every tick); a claim under another
         * configuration is not held by it */
        if (!strcmp(b->config_fp, fp_now))
            *allowed = 0;
        return 0;
    }
    if (!strcmp(b->state, "open")) {
        if (now_ms - b->opened_at < cooldown) {
            *allowed = 0;
            return 0;
        }
        /* cooldown over: half-open, and this claim is its probe */
        if ((rc = store_breaker_set_probe(st, b->error_class, probe_run_id, now_ms)) != 0)
            return rc;
        return breaker_event_write(st, "circuit.half_open", b->error_class, b->failures,
                                   probe_run_id, NULL);
    }
    /* half_open: the probe slot is free when nobody holds it or its run
     * ended without reporting (a killed job) */
    if (b->has_probe && !(b->probe_status[0] && run_status_of(b->probe_status) != RUN_RUNNING)) {
        *allowed = 0;
        return 0;
    }
    return store_breaker_set_probe(st, b->error_class, probe_run_id, now_ms);
}

int breaker_gate(store *st, int64_t now_ms, const char *probe_run_id, int *allowed,
                 char *blocking, size_t blocking_n)
{
    struct store_breaker rows[32];
    char fp_now[HASH_HEX_SIZE];
    int n = 0, rc;

    *allowed = 1;
    llm_config_fingerprint(fp_now);
    if (blocking && blocking_n)
        blocking[0] = '\0';
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_breaker_list_not_closed(st, rows, 32, &n)) != 0)
        goto out;
    for (int i = 0; i < n && *allowed; i++) {
        if ((rc = gate_one(st, &rows[i], fp_now, now_ms, probe_run_id, allowed)) != 0)
            goto out;
        if (!*allowed && blocking && blocking_n)
            /* truncation: ok, shown in a message */
            snprintf(blocking, blocking_n, "%s", rows[i].error_class);
    }
out:
    return store_tx_end(st, rc);
}

int breaker_trip(store *st, const char *cls, const char *run_id, const char *reason,
                 int64_t now_ms)
{
    struct store_breaker was;
    char fp[HASH_HEX_SIZE];
    int rc;

    llm_config_fingerprint(fp);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_breaker_ensure(st, cls, now_ms)) != 0)
        goto out;
    if (store_breaker_get(st, cls, &was) != 0)
        was.state[0] = '\0';
    if ((rc = store_breaker_open_config(st, cls, fp, reason, now_ms)) != 0)
        goto out;
    if (strcmp(was.state, "open") != 0 &&
        (rc = breaker_event_write(st, "circuit.opened", cls, 1, run_id, reason)) != 0)
        goto out;
out:
    return store_tx_end(st, rc);
}

int breaker_close_sticky(store *st, const char *cls, const char *why, int64_t now_ms)
{
    int rc, changed;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = breaker_close_config(st, cls, why, now_ms, &changed)) != 0)
        goto out;
    /* a configuration change: the escalations it caused are the system's
     * to close (their goals and items go on, and fail again - once - if
     * the new configuration is no better) */
    if (changed && strcmp(why, "escalation resolved") != 0 &&
        (rc = resolve_by_system(st, NULL, cls, 0, why)) != 0)
        goto out;
out:
    return store_tx_end(st, rc);
}

int breaker_config_sweep(store *st, int64_t now_ms)
{
    char fp[HASH_HEX_SIZE], cls[16][64];
    int n = 0, rc;

    llm_config_fingerprint(fp);
    if ((rc = store_breaker_config_stale(st, fp, cls, 16, &n)) != 0)
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = breaker_close_sticky(st, cls[i], "the model configuration changed", now_ms)))
            return rc;
    return n;
}

/* The classes of a provider's outage, as a goal-level escalation's type. */
static const char *const provider_down_types[] = {"provider_api", "timeout", "rate_limit", NULL};

int control_provider_down(const char *type)
{
    for (int i = 0; type && provider_down_types[i]; i++)
        if (!strcmp(type, provider_down_types[i]))
            return 1;
    return 0;
}

/* A model call succeeded: closed breakers forget their failures, the
 * provider's outage escalations close, and the half-open breakers run_id
 * probed close.  In the caller's transaction. */
static int record_success(store *st, const char *run_id, int64_t now_ms)
{
    char closed[16][64];
    int nc = 0, rc;

    rc = store_breaker_reset_failures(st, now_ms);
    /* the provider answers again: the escalations its outage opened (a
     * goal's elaboration or planning that ran out of retries on provider
     * errors, timeouts or rate limits) are the system's to close, and
     * their goals go on */
    for (int i = 0; rc == 0 && provider_down_types[i]; i++)
        rc = resolve_by_system(st, NULL, provider_down_types[i], 1,
                               "the provider answers again: a model call succeeded");
    if (rc || !run_id)
        return rc;
    if ((rc = store_breaker_probed_by(st, run_id, closed, 16, &nc)) != 0)
        return rc;
    for (int i = 0; i < nc; i++)
        if ((rc = store_breaker_close(st, closed[i], now_ms)) != 0 ||
            (rc = breaker_event_write(st, "circuit.closed", closed[i], 0, run_id, NULL)) != 0)
            return rc;
    return 0;
}

/* A model call failed with class cls: count it; the breaker opens at the
 * threshold, or at once when it was half-open.  In the caller's
 * transaction. */
static int record_failure(store *st, const char *cls, const char *run_id, int64_t now_ms)
{
    int threshold = (int)config_int(CFG_BREAKER_THRESHOLD);
    struct store_breaker b;
    const char *next = NULL;
    int failures, rc;

    if ((rc = store_breaker_ensure(st, cls, now_ms)) != 0)
        return rc;
    if ((rc = store_breaker_get(st, cls, &b)) != 0)
        return rc == ERR_NOTFOUND ? store_err(st, "breaker") : rc;
    failures = b.failures + 1;
    if (!strcmp(b.state, "half_open") || (!strcmp(b.state, "closed") && failures >= threshold))
        next = "open";
    else if (!strcmp(b.state, "open"))
        next = "open"; /* a straggler: keep it open, restart the cooldown */
    if ((rc = store_breaker_update(st, cls, next ? next : b.state, failures, next ? now_ms : -1,
                                   now_ms)) != 0)
        return rc;
    if (next && strcmp(b.state, "open") != 0)
        return breaker_event_write(st, "circuit.opened", cls, failures, run_id, NULL);
    return 0;
}

int breaker_record(store *st, const char *cls, const char *run_id, int64_t now_ms)
{
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    rc = cls ? record_failure(st, cls, run_id, now_ms) : record_success(st, run_id, now_ms);
    return store_tx_end(st, rc);
}

void progress_init(struct progress_detector *d, int k)
{
    memset(d, 0, sizeof(*d));
    d->k = k > 1 ? k : (int)config_int(CFG_CONTROL_NO_PROGRESS_K);
}

void progress_fingerprint(char out[HASH_HEX_SIZE], const char *diff_hash, const char *tool_sig,
                          const char *error_class, const char *reply_hash)
{
    strbuf sb;

    strbuf_init(&sb, 1 << 20);
    strbuf_addf_cut(&sb, "%s\x1f%s\x1f%s\x1f%s", diff_hash ? diff_hash : "", tool_sig ? tool_sig : "",
                error_class ? error_class : "", reply_hash ? reply_hash : "");
    hash_sha256_hex(out, sb.buf, sb.len);
    strbuf_release(&sb);
}

int progress_observe(struct progress_detector *d, const char *fingerprint)
{
    if (d->same > 0 && !strcmp(d->last, fingerprint)) {
        d->same++;
    } else {
        /* truncation: ok, a hash, HASH_HEX_SIZE both */
        snprintf(d->last, sizeof(d->last), "%s", fingerprint);
        d->same = 1;
    }
    return d->same >= d->k;
}
