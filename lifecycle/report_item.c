/*
 * report_item.c - `goald report ID --item KEY [--json]`: one work item,
 * its verification (baseline, granularity, the test cases introduced,
 * fixed, pre-existing, its tests' proof, the roles of the paths it
 * changed), each gate of its latest verified run with its failing tests
 * and output, and every attempt.
 */
#include "lifecycle/report.h"
#include "lifecycle/report_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/artifact.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/jsonobj.h"
#include "util/jsonw.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* What `report --item` shows of one gate result; the verification record
 * v (may be NULL) names its failing test cases. */
struct item_gates {
    const cJSON *v;
    cJSON *gates;
};

/* The failing test cases of gate name (NULL: of every gate), from the
 * verification record: the restored-inputs run's when restored, else the
 * item's own. */
static cJSON *failing_tests(const cJSON *v, const char *name, int restored)
{
    static const char *kinds[] = {"introduced", "new_failing", "pre_existing"};
    cJSON *failing = cJSON_CreateArray();
    const cJSON *ge;

    cJSON_ArrayForEach(
        ge, cJSON_GetObjectItemCaseSensitive(v, restored ? "restored_inputs_gates" : "gates"))
    {
        if (name && strcmp(report_jstr(ge, "gate"), name) != 0)
            continue;
        for (size_t k = 0; k < 3; k++) {
            const cJSON *t;
            cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(ge, kinds[k]))
                cJSON_AddItemToArray(failing, cJSON_Duplicate(t, 1));
        }
    }
    return failing;
}

static int item_gate_cb(const struct store_gate_result *r, void *varg)
{
    struct item_gates *ig = varg;
    cJSON *g = cJSON_CreateObject();
    int restored = ig->v && !strcmp(r->tree_id, report_jstr(ig->v, "restored_tree_id"));
    size_t n = strlen(r->output_tail);
    /* the last 4000 bytes, from a character's first byte */
    size_t from = utf8_cut_forward(r->output_tail, n > 4000 ? n - 4000 : 0, n);

    cJSON_AddStringToObject(g, "gate", r->name);
    cJSON_AddBoolToObject(g, "passed", r->passed);
    cJSON_AddNumberToObject(g, "exit_code", r->exit_code);
    cJSON_AddStringToObject(g, "classification", r->classification);
    cJSON_AddStringToObject(g, "tree_id", r->tree_id);
    cJSON_AddBoolToObject(g, "restored_inputs", restored);
    if (r->counted) {
        cJSON_AddNumberToObject(g, "tests_passed", r->tests_passed);
        cJSON_AddNumberToObject(g, "tests_failed", r->tests_failed);
    }
    /* its failing test cases, from the item's verification record */
    cJSON_AddItemToObject(g, "failing_tests", failing_tests(ig->v, r->name, restored));
    cJSON_AddStringToObject(g, "output_hash", r->output_hash);
    cJSON_AddStringToObject(g, "output_tail", r->output_tail + from);
    cJSON_AddItemToArray(ig->gates, g);
    return 0;
}

/* One attempt at the item: its run, how it ended, and the test cases
 * that failed in it (from its own verification record). */
static int item_attempt_cb(const struct store_run_attempt *a, void *arr)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *v = a->verification ? cJSON_Parse(a->verification) : NULL;

    cJSON_AddStringToObject(o, "run_id", a->run_id);
    cJSON_AddStringToObject(o, "kind", a->kind);
    cJSON_AddNumberToObject(o, "attempt", a->attempt);
    cJSON_AddNumberToObject(o, "tier", a->tier);
    cJSON_AddStringToObject(o, "status", a->status);
    cJSON_AddStringToObject(o, "model", a->model);
    cJSON_AddNumberToObject(o, "turns", a->turns);
    jsonobj_add_str_or_null(o, "error_class", *a->error_class ? a->error_class : NULL);
    jsonobj_add_str_or_null(o, "failure_reason", *a->failure_reason ? a->failure_reason : NULL);
    jsonobj_add_str_or_null(o, "summary", *a->summary ? a->summary : NULL);
    report_add_time(o, "started_at", a->started_at);
    report_add_time(o, "ended_at", a->ended_at);
    cJSON_AddItemToObject(o, "failing_tests", failing_tests(v, NULL, 0));
    cJSON_Delete(v);
    cJSON_AddItemToArray(arr, o);
    return 0;
}

/* The `report --item` object of wi (by key) into *out (cJSON_Delete). */
static int item_report_json(store *st, const struct work_item *wi, const char *key, cJSON **out)
{
    static const char *lists[] = {"introduced",   "pre_existing",   "fixed",
                                  "gate_inputs_changed", "fail_to_pass", "not_exercising",
                                  "accepted_test_changes"};
    char status[32], title[512];
    cJSON *v = report_item_verification(st, wi->id), *o = cJSON_CreateObject();
    struct item_gates ig = {v, NULL};
    int rc;

    snprintf(status, sizeof(status), "%s", wi->status); /* truncation: ok, shown */
    snprintf(title, sizeof(title), "%s", wi->title); /* truncation: ok, shown */
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "id", wi->id);
    cJSON_AddStringToObject(o, "title", title);
    cJSON_AddStringToObject(o, "status", status);
    jsonobj_add_str_or_null(o, "baseline",
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "baseline")));
    jsonobj_add_str_or_null(
        o, "granularity", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "granularity")));
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(v, lists[i]);
        cJSON_AddItemToObject(o, lists[i],
                              cJSON_IsArray(l) ? cJSON_Duplicate(l, 1) : cJSON_CreateArray());
    }
    cJSON_AddBoolToObject(o, "tests_weakened",
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "tests_weakened")));
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "roles")))
        cJSON_AddItemToObject(o, "roles",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(v, "roles"), 1));
    ig.gates = cJSON_AddArrayToObject(o, "gates");
    rc = store_gate_result_each_latest_of_item(st, wi->id, item_gate_cb, &ig);
    if (rc == 0)
        rc = store_run_item_attempts_each(st, wi->id, item_attempt_cb,
                                          cJSON_AddArrayToObject(o, "attempts"));
    cJSON_Delete(v);
    if (rc)
        cJSON_Delete(o);
    else
        *out = o;
    return rc;
}

/* The `report --item` object for people: title, test-case lists, and each
 * gate with its failing tests and output tail.  Title, test names and gate
 * output come from the model's work: escaped (util/termesc.h). */
static void item_report_text(FILE *f, const cJSON *o)
{
    static const char *lists[] = {"introduced", "pre_existing", "fixed", "gate_inputs_changed"};
    const cJSON *g, *t;

    fprintf(f, "item     %s  %s\nstatus   %s\n", term_fit(report_jstr(o, "key"), 16),
            term_fit(report_jstr(o, "title"), 80 - 27), term_view(report_jstr(o, "status")));
    fprintf(f, "baseline %s  (granularity: %s)\n", term_view(report_jstr(o, "baseline")),
            term_view(report_jstr(o, "granularity")));
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, lists[i]);
        int k = 0;
        if (cJSON_GetArraySize(l) == 0)
            continue;
        fprintf(f, "%-20s ", lists[i]);
        cJSON_ArrayForEach(t, l)
            fprintf(f, "%s%s", k++ ? ", " : "", term_view(cJSON_GetStringValue(t)));
        fputc('\n', f);
    }
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(o, "gates"))
    {
        int k = 0;
        fprintf(f, "\ngate %s%s: %s (exit %d)%s%s\n", term_view(report_jstr(g, "gate")),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "restored_inputs"))
                    ? " (gate inputs restored)"
                    : "",
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "passed")) ? "pass" : "fail",
                (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "exit_code")),
                *report_jstr(g, "classification") ? ", " : "", term_view(report_jstr(g, "classification")));
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(g, "failing_tests"))
            fprintf(f, "%s%s", k++ ? ", " : "failing tests: ", term_view(cJSON_GetStringValue(t)));
        if (k)
            fputc('\n', f);
        fprintf(f, "--- output (tail) ---\n%s\n---\n",
                term_view_flags(report_jstr(g, "output_tail"), TERM_KEEP_NL));
    }
}

/* `goald report ID --item KEY`: each gate's latest result for the item,
 * its failing test cases and the tail of its output. */
int report_write_item(store *st, const char *goal_id, const char *key, int json, FILE *f)
{
    struct work_item *wi = NULL;
    cJSON *o = NULL;
    int rc = store_item_get_by_key(st, goal_id, key, &wi);

    if (rc)
        return rc;
    if ((rc = item_report_json(st, wi, key, &o)) != 0)
        goto out;
    if (json) {
        char *t = cJSON_PrintUnformatted(o);
        fprintf(f, "%s\n", t);
        cJSON_free(t);
    } else {
        item_report_text(f, o);
    }
    rc = ferror(f) ? err_set(ERR_IO, "write error") : 0;
out:
    store_item_free(wi);
    cJSON_Delete(o);
    return rc;
}
