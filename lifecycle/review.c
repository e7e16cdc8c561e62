/*
 * review.c - the review that closes stage 5 (verification): advisory,
 * and only after every must-pass gate passed (verify.c).
 *
 * Top to bottom: the goal's title and success criteria, the item's title
 * and description, its diff (capped at 200 KiB, redacted: it holds what
 * the model wrote) and the model's summary go to the model with the
 * review prompt; its verdict and each finding become decisions, and a
 * review.completed event counts them.  A failed call is noted as a
 * review_unavailable decision and does not block: the review can only add
 * findings, never change a gate's verdict.  The review has its own budget
 * of turns, but its call still counts among the run's model calls.
 */
#include "lifecycle/review.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "lifecycle/verify_state.h"
#include "lifecycle/workspace.h"
#include "store/event.h"
#include "util/err.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "vcs/diff.h"

#define REVIEW_DIFF_MAX (200 * 1024)

/* The success criteria the item serves (the goal's), one a line; the
 * others are said to be other items'. */
static void review_criteria(strbuf *user, const struct work_item *wi,
                            const struct criteria *crit)
{
    int others = 0, any = 0;

    for (size_t k = 0; k < crit->n; k++) {
        if (!plan_item_serves(wi, (int)k)) {
            others++;
            continue;
        }
        if (!any++)
            strbuf_adds_cut(user, "Success criteria this item serves:\n");
        strbuf_addf_cut(user, "- %s\n", crit->text[k]);
    }
    if (others)
        strbuf_addf_cut(user, "(%d more of the goal's criteria belong to other items.)\n",
                        others);
}

static void review_list(strbuf *user, const char *what, char **ids, size_t n)
{
    if (n == 0)
        return;
    strbuf_addf_cut(user, "  %s: ", what);
    for (size_t i = 0; i < n && i < 20; i++)
        strbuf_addf_cut(user, "%s%s", i ? ", " : "", ids[i]);
    strbuf_addf_cut(user, "%s\n", n > 20 ? ", ..." : "");
}

/* What the gates found: each gate's result and counts, and the item's
 * new tests judged on the old product (fail before, pass after). */
static void review_gates(strbuf *user, const struct verify_state *vs)
{
    if (!vs || vs->plan.n == 0)
        return;
    strbuf_adds_cut(user, "What the gates found on the item's tree:\n");
    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_result *r = &vs->ev[i].r;
        const struct gate_pins *pin = vs->pins ? &vs->pins[i] : NULL;
        strbuf_addf_cut(user, "- %s: %s", r->name, r->passed ? "passed" : "failed");
        if (r->counts.total >= 0)
            strbuf_addf_cut(user, " (%d passed, %d failed, %d skipped)", r->counts.passed,
                            r->counts.failed, r->counts.skipped);
        strbuf_adds_cut(user, "\n");
        if (pin && pin->ran) {
            review_list(user, "new tests that fail on the old code and pass now",
                        pin->fail_to_pass, pin->n_fail_to_pass);
            review_list(user, "new tests that also pass on the old code (they do not exercise "
                              "the change)",
                        pin->not_exercising, pin->n_not_exercising);
        }
    }
}

/* The review's task: the item (title, description), the goal's success
 * criteria, the model's summary and the diff. */
static void review_task(strbuf *user, struct job_ctx *j, struct workspace *ws, const char *summary,
                        const struct verify_state *vs)
{
    strbuf diff;
    char *red; /* the diff holds what the model wrote: redacted like any tool result */
    int cut;

    strbuf_init(&diff, REVIEW_DIFF_MAX);
    /* the note follows the diff in the task: the full diff buffer has no
     * room left for it */
    cut = ws->wt && vcs_diff_text(&diff, ws->wt) == ERR_TOOBIG;
    red = redact_str(diff.len ? strbuf_cstr(&diff) : "(no git diff)", NULL);
    /* the task is a prompt under its cap: cut, not refused */
    strbuf_addf_cut(user, "Goal: %s\nWork item %s: %s\n", j->goal->title, j->item->key,
                    j->item->title);
    if (j->item->description && *j->item->description)
        strbuf_addf_cut(user, "%s\n", j->item->description);
    review_criteria(user, j->item, j->criteria);
    review_gates(user, vs);
    strbuf_addf_cut(user, "Summary: %s\nDiff:\n%s%s\n", summary ? summary : "", red,
                    cut ? "\n[diff cut at 200 KiB]\n" : "");
    free(red);
    strbuf_release(&diff);
}

/* A decision of the (advisory) review: a failed write is logged. */
static void review_decision(struct job_ctx *j, const char *kind, const char *aspect,
                            const char *severity, const char *note, const cJSON *data)
{
    if (verify_decision(j, kind, aspect, severity, note, data) != 0)
        log_warn("%s: decision %s not written: %s", j->item->key, kind, err_last());
}

/* The answer's verdict and findings as decisions, and the event. */
static void review_record(struct job_ctx *j, const cJSON *answer)
{
    const cJSON *f;
    cJSON *p;

    review_decision(j, "review_verdict", NULL, NULL,
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")),
                    answer);
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(answer, "findings"))
    {
        review_decision(j, "review_finding",
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "aspect")),
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "severity")),
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "note")), f);
    }
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(
        p, "verdict", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")));
    cJSON_AddNumberToObject(
        p, "findings", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(answer, "findings")));
    job_event_or_warn(j, "review.completed", p);
    cJSON_Delete(p);
}

void review_item(struct job_ctx *j, struct workspace *ws, const char *summary,
                 const struct verify_state *vs)
{
    strbuf user;
    cJSON *answer = NULL;
    int turns, rc;

    strbuf_init(&user, 1 << 20);
    review_task(&user, j, ws, summary, vs);
    /* the review has its own budget of turns, but its call still counts
     * among the run's model calls (runs.turns) */
    turns = j->usage.turns;
    j->usage.turns = 0;
    rc = job_ask_json(j, "review", prompt_review, strbuf_cstr(&user), schema_review, &answer);
    j->usage.turns += turns;
    if (rc != 0) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "error_class", j->error_class);
        review_decision(j, "review_unavailable", NULL, NULL, strbuf_cstr(&j->failure), d);
        cJSON_Delete(d);
        j->error_class[0] = '\0';
        strbuf_reset(&j->failure);
    } else {
        review_record(j, answer);
    }
    cJSON_Delete(answer);
    strbuf_release(&user);
}
