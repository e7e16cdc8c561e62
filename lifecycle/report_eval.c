/*
 * report_eval.c - what the goal-level evaluation left for the report and
 * the pull request (goal_evaluate.c writes it as the goal's latest
 * "evaluation" decision): one evidence row per criterion it judged, and
 * the reasons a goal is partial.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle/report.h"
#include "store/escalation.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* One goal-level row: the evaluation's verdict on a criterion. */
static cJSON *eval_row(const cJSON *c)
{
    const char *crit = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "criterion"));
    const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "verdict"));
    const char *quote = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "quote"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "status"));
    cJSON *r = cJSON_CreateObject();
    strbuf b;

    strbuf_init(&b, 2048);
    cJSON_AddStringToObject(r, "criterion", crit ? crit : "");
    cJSON_AddNullToObject(r, "item");
    cJSON_AddStringToObject(r, "evidence", verdict ? "review" : "none");
    cJSON_AddItemToObject(r, "backed_by", cJSON_CreateArray());
    cJSON_AddItemToObject(r, "tests", cJSON_CreateArray());
    cJSON_AddStringToObject(r, "kind", verdict ? "review" : "unchecked");
    if (verdict)
        strbuf_addf_cut(&b, "evaluation: %s: \"%s\"", verdict, quote ? quote : "");
    else
        strbuf_adds_cut(&b, "evaluation: no verdict");
    cJSON_AddStringToObject(r, "backing", strbuf_cstr(&b));
    if (verdict)
        cJSON_AddStringToObject(r, "verdict", verdict);
    cJSON_AddStringToObject(r, "status", status ? status : "unchecked");
    strbuf_release(&b);
    return r;
}

int report_evaluation_rows(store *st, const char *goal_id, cJSON *rows)
{
    cJSON *d = NULL;
    const cJSON *c;

    if (store_decision_latest_of_goal(st, goal_id, "evaluation", &d) != 0)
        return ERR_DB;
    /* the criteria it was asked about (the others are proven by test
     * cases, shown on their items' rows) */
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "criteria"))
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "asked")))
            cJSON_AddItemToArray(rows, eval_row(c));
    cJSON_Delete(d);
    return 0;
}

cJSON *report_partial_reasons(store *st, const char *goal_id)
{
    cJSON *d = NULL, *out = cJSON_CreateArray();
    const cJSON *r;

    if (store_decision_latest_of_goal(st, goal_id, "evaluation", &d) != 0) {
        err_clear();
        return out;
    }
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "partial_reasons"))
        if (cJSON_IsString(r))
            cJSON_AddItemToArray(out, cJSON_CreateString(r->valuestring));
    cJSON_Delete(d);
    return out;
}
