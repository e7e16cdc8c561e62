#include "lifecycle/abort.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/context.h"
#include "lifecycle/job.h"
#include "lifecycle/recover.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "util/err.h"
#include "util/log.h"

int lifecycle_abort_run(store *st, const char *run_id, const char *status, const char *reason)
{
    static const char upd[] = "UPDATE runs SET error_class = ?, error_signature = ?,"
                              " failure_reason = ? WHERE id = ? AND status = 'running'";
    static const char dbl[] = "UPDATE work_items SET timeout_s = ? WHERE id = ?";
    struct job_ctx j;
    struct job_outcome o;
    char sig[65], next[32] = "";
    const char *cls = !strcmp(status, "timeout") ? "timeout" : "aborted";
    cJSON *p = NULL;
    sqlite3_stmt *s;
    int rc;

    memset(&j, 0, sizeof(j));
    memset(&o, 0, sizeof(o));
    j.st = st;
    strbuf_init(&j.failure, 16384);
    strbuf_init(&j.summary, 1024);
    {
        /* the claim, even though the run is not running any more for us */
        static const char q[] = "SELECT goal_id, ifnull(item_id, ''), kind, lane, attempt,"
                                " ifnull(timeout_s, 0), status, model_index FROM runs WHERE id = ?";
        if ((rc = store_prepare(st, &s, q)) != 0)
            goto out;
        store_bind_text(s, 1, run_id);
        if (sqlite3_step(s) != SQLITE_ROW) {
            store_done(s);
            rc = err_set(ERR_NOTFOUND, "run %s: not found", run_id);
            goto out;
        }
        snprintf(j.claim.run_id, sizeof(j.claim.run_id), "%s", run_id);
        snprintf(j.claim.goal_id, sizeof(j.claim.goal_id), "%s", sqlite3_column_text(s, 0));
        snprintf(j.claim.item_id, sizeof(j.claim.item_id), "%s", sqlite3_column_text(s, 1));
        snprintf(j.claim.kind, sizeof(j.claim.kind), "%s", sqlite3_column_text(s, 2));
        snprintf(j.claim.lane, sizeof(j.claim.lane), "%s", sqlite3_column_text(s, 3));
        j.claim.attempt = sqlite3_column_int(s, 4);
        j.claim.timeout_s = sqlite3_column_int(s, 5);
        j.model_index = sqlite3_column_int(s, 7);
        if (strcmp((const char *)sqlite3_column_text(s, 6), "running") != 0) {
            store_done(s);
            rc = err_set(ERR_TRANSITION, "run %s is no longer running", run_id);
            goto out;
        }
        store_done(s);
    }
    if ((rc = store_goal_get(st, j.claim.goal_id, &j.goal)) != 0)
        goto out;
    if (j.claim.item_id[0] && (rc = store_item_get(st, j.claim.item_id, &j.item)) != 0)
        goto out;
    snprintf(j.error_class, sizeof(j.error_class), "%s", cls);
    strbuf_adds(&j.failure, reason);
    job_error_signature(sig, cls, reason);

    if ((rc = store_tx_begin(st)) != 0)
        goto out;
    if ((rc = store_prepare(st, &s, upd)) != 0)
        goto fail;
    store_bind_text(s, 1, cls);
    store_bind_text(s, 2, sig);
    store_bind_text(s, 3, reason);
    store_bind_text(s, 4, run_id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "abort");
    store_done(s);
    if (rc)
        goto fail;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddStringToObject(p, "kind", j.claim.kind);
    if ((rc = transition_apply(st, ENTITY_RUN, run_id, status, "running", p)) != 0)
        goto fail;
    if (!strcmp(status, "timeout") && j.item) {
        /* the retry gets twice the time */
        int doubled = (j.claim.timeout_s > 0 ? j.claim.timeout_s : 600) * 2;
        if ((rc = store_prepare(st, &s, dbl)) != 0)
            goto fail;
        sqlite3_bind_int(s, 1, doubled);
        store_bind_text(s, 2, j.item->id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(st, "timeout");
        store_done(s);
        if (rc)
            goto fail;
        j.item->timeout_s = doubled;
    }
    if ((rc = store_tx_commit(st)) != 0)
        goto out;
    /* an item the run held goes through recovery; a plan-lane unit is
     * simply claimable again after its backoff */
    if (j.item && (!strcmp(j.item->status, "in_progress") || !strcmp(j.item->status, "verify"))) {
        rc = recover_after_failure(&j, sig, next, sizeof(next));
        context_pack_write(&j, NULL);
    } else if (!j.item) {
        rc = recover_after_failure(&j, sig, next, sizeof(next));
    }
    log_info("run %.8s %s (%s): recovery %s", run_id, status, reason, next[0] ? next : "none");
    goto out;
fail:
    store_tx_rollback(st);
out:
    cJSON_Delete(p);
    store_goal_free(j.goal);
    store_item_free(j.item);
    strbuf_release(&j.failure);
    strbuf_release(&j.summary);
    return rc;
}
