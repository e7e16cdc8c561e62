#include "lifecycle/control.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/resolve.h"
#include "llm/llm.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

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
    static const char sql[] =
        "SELECT budget_max_tokens, budget_max_cost_usd, budget_max_hours, spent_tokens,"
        " spent_cost_usd, spent_wall_ms FROM goals WHERE id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);
    const char *w = NULL;
    double value = 0, threshold = 0, estimate = 0;

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        rc = err_set(ERR_NOTFOUND, "goal %s: not found", goal_id);
        store_done(s);
        return rc;
    }
    if (sqlite3_column_type(s, 0) != SQLITE_NULL &&
        sqlite3_column_int64(s, 3) + est_tokens > sqlite3_column_int64(s, 0)) {
        w = "tokens";
        value = (double)sqlite3_column_int64(s, 3);
        threshold = (double)sqlite3_column_int64(s, 0);
        estimate = (double)est_tokens;
    } else if (sqlite3_column_type(s, 1) != SQLITE_NULL &&
               sqlite3_column_double(s, 4) + est_cost > sqlite3_column_double(s, 1)) {
        w = "cost_usd";
        value = sqlite3_column_double(s, 4);
        threshold = sqlite3_column_double(s, 1);
        estimate = est_cost;
    } else if (sqlite3_column_type(s, 2) != SQLITE_NULL &&
               (double)sqlite3_column_int64(s, 5) >= sqlite3_column_double(s, 2) * 3600000.0) {
        w = "hours";
        value = (double)sqlite3_column_int64(s, 5) / 3600000.0;
        threshold = sqlite3_column_double(s, 2);
        estimate = 0;
    }
    store_done(s);
    if (!w)
        return 0;
    *which = w;
    {
        char type[32];
        snprintf(type, sizeof(type), "budget.%s", w);
        if ((rc = limit_event(st, goal_id, item_id, run_id, type, value, threshold, estimate)))
            return rc;
    }
    return err_set(ERR_POLICY, "goal budget %s would be exceeded (spent %g, next call ~%g, "
                               "limit %g)",
                   w, value, estimate, threshold);
}

static int breaker_event(store *st, const char *type, const char *cls, int failures,
                         const char *run_id, const char *reason)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(p, "error_class", cls);
    if (reason)
        cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddNumberToObject(p, "failures", failures);
    cJSON_AddNumberToObject(p, "threshold", (double)config_int(CFG_BREAKER_THRESHOLD));
    cJSON_AddNumberToObject(p, "cooldown_s", (double)config_int(CFG_BREAKER_COOLDOWN_S));
    rc = store_event_add(st, NULL, NULL, run_id, type, p, NULL);
    cJSON_Delete(p);
    return rc;
}

int breaker_gate(store *st, int64_t now_ms, const char *probe_run_id, int *allowed,
                 char *blocking, size_t blocking_n)
{
    static const char sel[] =
        "SELECT error_class, state, failures, opened_at, probe_run_id,"
        " (SELECT status FROM runs WHERE id = breakers.probe_run_id), config_fp FROM breakers"
        " WHERE state <> 'closed' ORDER BY error_class";
    static const char upd[] = "UPDATE breakers SET state = ?, probe_run_id = ?, updated_at = ?"
                              " WHERE error_class = ?";
    int64_t cooldown = config_int(CFG_BREAKER_COOLDOWN_S) * 1000;
    struct {
        char cls[64], state[16], probe_status[16], fp[HASH_HEX_SIZE];
        int failures, has_probe;
        int64_t opened_at;
    } rows[32];
    char fp_now[HASH_HEX_SIZE];
    int n = 0, rc;
    sqlite3_stmt *s;

    *allowed = 1;
    llm_config_fingerprint(fp_now);
    if (blocking && blocking_n)
        blocking[0] = '\0';
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_prepare(st, &s, sel)) != 0)
        goto fail;
    while (n < 32 && sqlite3_step(s) == SQLITE_ROW) {
        snprintf(rows[n].cls, sizeof(rows[n].cls), "%s", sqlite3_column_text(s, 0));
        snprintf(rows[n].state, sizeof(rows[n].state), "%s", sqlite3_column_text(s, 1));
        rows[n].failures = sqlite3_column_int(s, 2);
        rows[n].opened_at = sqlite3_column_int64(s, 3);
        rows[n].has_probe = sqlite3_column_type(s, 4) != SQLITE_NULL;
        snprintf(rows[n].probe_status, sizeof(rows[n].probe_status), "%s",
                 sqlite3_column_type(s, 5) == SQLITE_NULL ? ""
                                                          : (const char *)sqlite3_column_text(s, 5));
        snprintf(rows[n].fp, sizeof(rows[n].fp), "%s",
                 sqlite3_column_type(s, 6) == SQLITE_NULL ? ""
                                                          : (const char *)sqlite3_column_text(s, 6));
        n++;
    }
    store_done(s);
    for (int i = 0; i < n && *allowed; i++) {
        int probe_free;
        if (rows[i].fp[0]) {
            /* opened by a configuration error: no cooldown, only a change
             * of the configuration (or a human) closes it - the daemon's
             * sweep does (breaker_config_sweep(), every tick); a claim
             * under another configuration is not held by it */
            if (!strcmp(rows[i].fp, fp_now))
                *allowed = 0;
        } else if (!strcmp(rows[i].state, "open")) {
            if (now_ms - rows[i].opened_at < cooldown) {
                *allowed = 0;
            } else {
                /* cooldown over: half-open, and this claim is its probe */
                if ((rc = store_prepare(st, &s, upd)) != 0)
                    goto fail;
                store_bind_text(s, 1, "half_open");
                store_bind_text(s, 2, probe_run_id);
                sqlite3_bind_int64(s, 3, now_ms);
                store_bind_text(s, 4, rows[i].cls);
                rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
                store_done(s);
                if (rc || (rc = breaker_event(st, "circuit.half_open", rows[i].cls,
                                              rows[i].failures, probe_run_id, NULL)) != 0)
                    goto fail;
            }
        } else { /* half_open */
            /* the probe slot is free when nobody holds it or its run ended
             * without reporting (a killed job) */
            probe_free = !rows[i].has_probe ||
                         (rows[i].probe_status[0] && strcmp(rows[i].probe_status, "running"));
            if (!probe_free) {
                *allowed = 0;
            } else {
                if ((rc = store_prepare(st, &s, upd)) != 0)
                    goto fail;
                store_bind_text(s, 1, "half_open");
                store_bind_text(s, 2, probe_run_id);
                sqlite3_bind_int64(s, 3, now_ms);
                store_bind_text(s, 4, rows[i].cls);
                rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
                store_done(s);
                if (rc)
                    goto fail;
            }
        }
        if (!*allowed && blocking && blocking_n)
            snprintf(blocking, blocking_n, "%s", rows[i].cls);
    }
    return store_tx_commit(st);
fail:
    store_tx_rollback(st);
    return rc;
}

int breaker_trip(store *st, const char *cls, const char *run_id, const char *reason,
                 int64_t now_ms)
{
    static const char ins[] = "INSERT OR IGNORE INTO breakers(error_class, state, failures,"
                              " updated_at) VALUES (?, 'closed', 0, ?)";
    static const char sel[] = "SELECT state FROM breakers WHERE error_class = ?";
    static const char upd[] = "UPDATE breakers SET state = 'open', failures = failures + 1,"
                              " opened_at = ?1, probe_run_id = NULL, config_fp = ?2, reason = ?3,"
                              " updated_at = ?1 WHERE error_class = ?4";
    char fp[HASH_HEX_SIZE], was[16] = "";
    sqlite3_stmt *s;
    int rc;

    llm_config_fingerprint(fp);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_prepare(st, &s, ins)) != 0)
        goto fail;
    store_bind_text(s, 1, cls);
    sqlite3_bind_int64(s, 2, now_ms);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
    store_done(s);
    if (rc || (rc = store_prepare(st, &s, sel)) != 0)
        goto fail;
    store_bind_text(s, 1, cls);
    if (sqlite3_step(s) == SQLITE_ROW)
        snprintf(was, sizeof(was), "%s", sqlite3_column_text(s, 0));
    store_done(s);
    if ((rc = store_prepare(st, &s, upd)) != 0)
        goto fail;
    sqlite3_bind_int64(s, 1, now_ms);
    store_bind_text(s, 2, fp);
    store_bind_text(s, 3, reason);
    store_bind_text(s, 4, cls);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
    store_done(s);
    if (rc)
        goto fail;
    if (strcmp(was, "open") != 0 &&
        (rc = breaker_event(st, "circuit.opened", cls, 1, run_id, reason)) != 0)
        goto fail;
    return store_tx_commit(st);
fail:
    store_tx_rollback(st);
    return rc;
}

int breaker_close_sticky(store *st, const char *cls, const char *why, int64_t now_ms)
{
    static const char upd[] = "UPDATE breakers SET state = 'closed', failures = 0,"
                              " probe_run_id = NULL, config_fp = NULL, reason = NULL,"
                              " updated_at = ? WHERE error_class = ? AND config_fp IS NOT NULL";
    sqlite3_stmt *s;
    int rc, changed;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_prepare(st, &s, upd)) != 0)
        goto fail;
    sqlite3_bind_int64(s, 1, now_ms);
    store_bind_text(s, 2, cls);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
    changed = sqlite3_changes(store_db(st));
    store_done(s);
    if (rc)
        goto fail;
    if (changed && (rc = breaker_event(st, "circuit.closed", cls, 0, NULL, why)) != 0)
        goto fail;
    /* a configuration change: the escalations it caused are the system's
     * to close (their goals and items go on, and fail again - once - if
     * the new configuration is no better) */
    if (changed && strcmp(why, "escalation resolved") != 0 &&
        (rc = resolve_by_system(st, NULL, cls, 0, why)) != 0)
        goto fail;
    return store_tx_commit(st);
fail:
    store_tx_rollback(st);
    return rc;
}

int breaker_config_sweep(store *st, int64_t now_ms)
{
    static const char q[] = "SELECT error_class FROM breakers WHERE config_fp IS NOT NULL"
                            " AND config_fp <> ? AND state <> 'closed' LIMIT 16";
    char fp[HASH_HEX_SIZE], cls[16][64];
    int n = 0, rc;
    sqlite3_stmt *s;

    llm_config_fingerprint(fp);
    if ((rc = store_prepare(st, &s, q)) != 0)
        return rc;
    store_bind_text(s, 1, fp);
    while (n < 16 && sqlite3_step(s) == SQLITE_ROW)
        snprintf(cls[n++], 64, "%s", sqlite3_column_text(s, 0));
    store_done(s);
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

int breaker_record(store *st, const char *cls, const char *run_id, int64_t now_ms)
{
    static const char sel[] =
        "SELECT state, failures, probe_run_id FROM breakers WHERE error_class = ?";
    static const char ins[] = "INSERT OR IGNORE INTO breakers(error_class, state, failures,"
                              " updated_at) VALUES (?, 'closed', 0, ?)";
    static const char upd[] = "UPDATE breakers SET state = ?, failures = ?, opened_at = ?,"
                              " probe_run_id = NULL, updated_at = ? WHERE error_class = ?";
    static const char reset[] = "UPDATE breakers SET failures = 0, updated_at = ?"
                                " WHERE state = 'closed' AND failures > 0";
    static const char probes[] = "SELECT error_class, failures FROM breakers"
                                 " WHERE state = 'half_open' AND probe_run_id = ?";
    static const char close_[] = "UPDATE breakers SET state = 'closed', failures = 0,"
                                 " probe_run_id = NULL, updated_at = ? WHERE error_class = ?";
    int threshold = (int)config_int(CFG_BREAKER_THRESHOLD);
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if (!cls) {
        char closed[16][64];
        int nc = 0;
        if ((rc = store_prepare(st, &s, reset)) != 0)
            goto fail;
        sqlite3_bind_int64(s, 1, now_ms);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
        store_done(s);
        /* the provider answers again: the escalations its outage opened
         * (a goal's elaboration or planning that ran out of retries on
         * provider errors, timeouts or rate limits) are the system's to
         * close, and their goals go on */
        for (int i = 0; rc == 0 && provider_down_types[i]; i++)
            rc = resolve_by_system(st, NULL, provider_down_types[i], 1,
                                   "the provider answers again: a model call succeeded");
        if (rc || !run_id)
            goto commit;
        if ((rc = store_prepare(st, &s, probes)) != 0)
            goto fail;
        store_bind_text(s, 1, run_id);
        while (nc < 16 && sqlite3_step(s) == SQLITE_ROW)
            snprintf(closed[nc++], 64, "%s", sqlite3_column_text(s, 0));
        store_done(s);
        for (int i = 0; i < nc; i++) {
            if ((rc = store_prepare(st, &s, close_)) != 0)
                goto fail;
            sqlite3_bind_int64(s, 1, now_ms);
            store_bind_text(s, 2, closed[i]);
            rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
            store_done(s);
            if (rc || (rc = breaker_event(st, "circuit.closed", closed[i], 0, run_id, NULL)) != 0)
                goto fail;
        }
        goto commit;
    }
    if ((rc = store_prepare(st, &s, ins)) != 0)
        goto fail;
    store_bind_text(s, 1, cls);
    sqlite3_bind_int64(s, 2, now_ms);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
    store_done(s);
    if (rc || (rc = store_prepare(st, &s, sel)) != 0)
        goto fail;
    store_bind_text(s, 1, cls);
    if (sqlite3_step(s) != SQLITE_ROW) {
        rc = store_err(st, "breaker");
        store_done(s);
        goto fail;
    }
    {
        char state[16];
        int failures = sqlite3_column_int(s, 1) + 1;
        const char *next = NULL;
        snprintf(state, sizeof(state), "%s", sqlite3_column_text(s, 0));
        store_done(s);
        if (!strcmp(state, "half_open") || (!strcmp(state, "closed") && failures >= threshold))
            next = "open";
        else if (!strcmp(state, "open"))
            next = "open"; /* a straggler: keep it open, restart the cooldown */
        if ((rc = store_prepare(st, &s, upd)) != 0)
            goto fail;
        store_bind_text(s, 1, next ? next : state);
        sqlite3_bind_int(s, 2, failures);
        if (next)
            sqlite3_bind_int64(s, 3, now_ms);
        else
            sqlite3_bind_null(s, 3);
        sqlite3_bind_int64(s, 4, now_ms);
        store_bind_text(s, 5, cls);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "breaker");
        store_done(s);
        if (rc)
            goto fail;
        if (next && strcmp(state, "open") != 0 &&
            (rc = breaker_event(st, "circuit.opened", cls, failures, run_id, NULL)) != 0)
            goto fail;
    }
commit:
    return store_tx_commit(st);
fail:
    store_tx_rollback(st);
    return rc;
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
    strbuf_addf(&sb, "%s\x1f%s\x1f%s\x1f%s", diff_hash ? diff_hash : "", tool_sig ? tool_sig : "",
                error_class ? error_class : "", reply_hash ? reply_hash : "");
    hash_sha256_hex(out, sb.buf, sb.len);
    strbuf_release(&sb);
}

int progress_observe(struct progress_detector *d, const char *fingerprint)
{
    if (d->same > 0 && !strcmp(d->last, fingerprint)) {
        d->same++;
    } else {
        snprintf(d->last, sizeof(d->last), "%s", fingerprint);
        d->same = 1;
    }
    return d->same >= d->k;
}
