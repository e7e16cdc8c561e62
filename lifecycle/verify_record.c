/*
 * verify_record.c - stage 5, verification: what it leaves on record.
 *
 * Top to bottom: a decision of the goal (verify_decision) and an artifact
 * recorded once (verify_artifact), both shared with the other stages; then
 * the item's verification decision (verify_record_verification): per gate
 * its result, classification, granularity and the test cases introduced,
 * new and failing, pre-existing, fixed and removed, on the item's tree and
 * on the tree with its gate inputs restored; what `goald report` shows.
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "lifecycle/job.h"
#include "store/artifact.h"
#include "store/escalation.h"

int verify_decision(struct job_ctx *j, const char *kind, const char *aspect,
                    const char *severity, const char *note, const cJSON *data)
{
    return store_decision_add(
        j->st, &(struct store_decision_new){j->goal->id, j->item ? j->item->id : NULL,
                                            j->claim.run_id, kind, aspect, severity, note, data});
}

int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta)
{
    return store_artifact_add_once(
        j->st, &(struct store_artifact_new){j->goal->id, j->item ? j->item->id : NULL,
                                            j->claim.run_id, type, ref, path, hash, url, meta});
}

static cJSON *list_json(char **v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *eval_json(const struct gate_eval *e)
{
    cJSON *g = cJSON_CreateObject();

    cJSON_AddStringToObject(g, "gate", e->r.name);
    cJSON_AddBoolToObject(g, "passed", e->r.passed);
    cJSON_AddNumberToObject(g, "exit_code", e->r.exit_code);
    cJSON_AddStringToObject(g, "classification", e->r.classification);
    cJSON_AddStringToObject(g, "granularity", e->diff.granularity ? e->diff.granularity : "gate");
    if (e->base_known)
        cJSON_AddBoolToObject(g, "baseline_passed", e->base_passed);
    else
        cJSON_AddNullToObject(g, "baseline_passed");
    cJSON_AddItemToObject(g, "introduced", list_json(e->diff.introduced, e->diff.n_introduced));
    cJSON_AddItemToObject(g, "new_failing",
                          list_json(e->diff.new_failing, e->diff.n_new_failing));
    cJSON_AddItemToObject(g, "pre_existing",
                          list_json(e->diff.pre_existing, e->diff.n_pre_existing));
    cJSON_AddItemToObject(g, "fixed", list_json(e->diff.fixed, e->diff.n_fixed));
    cJSON_AddItemToObject(g, "removed", list_json(e->diff.removed, e->diff.n_removed));
    cJSON_AddItemToObject(g, "removed_failing",
                          list_json(e->diff.removed_failing, e->diff.n_removed_failing));
    return g;
}

static void add_all(cJSON *arr, const cJSON *from)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, from) cJSON_AddItemToArray(arr, cJSON_Duplicate(it, 1));
}

/* The item's verification record (decision kind "verification") from vs:
 * the baseline, the granularity, the test cases introduced / pre-existing
 * / fixed, the gate inputs it changed; what `goald report` shows. */
int verify_record_verification(struct job_ctx *j, const struct verify_state *vs, int weakened,
                               const char *verdict)
{
    const struct gate_eval *ev = vs->ev, *wev = vs->wev;
    size_t n = vs->plan.n;
    cJSON *d = cJSON_CreateObject(), *gates = cJSON_CreateArray(), *wg = NULL;
    cJSON *intro = cJSON_CreateArray(), *pre = cJSON_CreateArray(), *fixed = cJSON_CreateArray();
    cJSON *f2p = cJSON_CreateArray(), *idle = cJSON_CreateArray(), *acc = cJSON_CreateArray();
    /* "test" when some gate was compared per test case and no failing
     * gate had to be compared as a whole; else "gate" */
    int any_test = 0, failing_gate = 0, rc;
    const char *gran;

    for (size_t i = 0; i < n; i++) {
        cJSON *g = eval_json(&ev[i]);
        const struct gate_pins *pin = vs->pins ? &vs->pins[i] : NULL;
        if (pin && pin->ran) {
            cJSON_AddItemToObject(g, "fail_to_pass",
                                  list_json(pin->fail_to_pass, pin->n_fail_to_pass));
            cJSON_AddItemToObject(g, "not_exercising",
                                  list_json(pin->not_exercising, pin->n_not_exercising));
            cJSON_AddItemToObject(g, "accepted_test_changes",
                                  list_json(pin->pinned, pin->n_pinned));
            cJSON_AddStringToObject(g, "old_product_output_hash", pin->output_hash);
            add_all(f2p, cJSON_GetObjectItemCaseSensitive(g, "fail_to_pass"));
            add_all(idle, cJSON_GetObjectItemCaseSensitive(g, "not_exercising"));
            add_all(acc, cJSON_GetObjectItemCaseSensitive(g, "accepted_test_changes"));
        }
        int t = ev[i].diff.granularity && !strcmp(ev[i].diff.granularity, "test");
        add_all(intro, cJSON_GetObjectItemCaseSensitive(g, "introduced"));
        add_all(intro, cJSON_GetObjectItemCaseSensitive(g, "new_failing"));
        add_all(pre, cJSON_GetObjectItemCaseSensitive(g, "pre_existing"));
        add_all(fixed, cJSON_GetObjectItemCaseSensitive(g, "fixed"));
        any_test |= t;
        failing_gate |= !t && !ev[i].r.passed;
        cJSON_AddItemToArray(gates, g);
    }
    gran = any_test && !failing_gate ? "test" : "gate";
    cJSON_AddStringToObject(d, "item", j->item->key);
    if (vs->base[0])
        cJSON_AddStringToObject(d, "baseline", vs->base);
    else
        cJSON_AddNullToObject(d, "baseline");
    cJSON_AddStringToObject(d, "tree_id", vs->tree);
    cJSON_AddStringToObject(d, "granularity", gran);
    cJSON_AddItemToObject(d, "introduced", intro);
    cJSON_AddItemToObject(d, "pre_existing", pre);
    cJSON_AddItemToObject(d, "fixed", fixed);
    cJSON_AddItemToObject(d, "fail_to_pass", f2p);
    cJSON_AddItemToObject(d, "not_exercising", idle);
    cJSON_AddItemToObject(d, "accepted_test_changes", acc);
    if (cJSON_GetArraySize(vs->waived))
        cJSON_AddItemToObject(d, "accepted_by_human", cJSON_Duplicate(vs->waived, 1));
    cJSON_AddItemToObject(d, "gate_inputs_changed", cJSON_Duplicate(vs->inputs, 1));
    if (vs->old_product[0])
        cJSON_AddStringToObject(d, "old_product_tree_id", vs->old_product);
    if (vs->roles)
        cJSON_AddItemToObject(d, "roles", cJSON_Duplicate(vs->roles, 1));
    cJSON_AddBoolToObject(d, "tests_weakened", weakened);
    cJSON_AddStringToObject(d, "verdict", verdict);
    cJSON_AddItemToObject(d, "gates", gates);
    if (wev) {
        wg = cJSON_AddArrayToObject(d, "restored_inputs_gates");
        cJSON_AddStringToObject(d, "restored_tree_id", vs->restored);
        for (size_t i = 0; i < n; i++) {
            cJSON *g = eval_json(&wev[i]);
            if (wev[i].pinned_only)
                cJSON_AddBoolToObject(g, "pinned_only", 1);
            if (wev[i].inconclusive)
                cJSON_AddBoolToObject(g, "inconclusive", 1);
            cJSON_AddItemToArray(wg, g);
        }
    }
    rc = verify_decision(j, "verification", NULL, NULL, verdict, d);
    cJSON_Delete(d);
    return rc;
}
