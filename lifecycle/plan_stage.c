/*
 * plan_stage.c - stage 3, the unit that plans: the model is asked for the
 * goal's work items (the goal, its criteria by index and its elaboration
 * in the prompt), its answer checked completely by plan_parse() and
 * plan_check_criteria() (plan.c), asked once more with the error when the
 * plan is refused, and stored by plan_store(); the work lane then
 * executes the ready items (select.c, claim.c).
 */
#include "lifecycle/plan_stage.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "store/goal.h"
#include "util/config.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

static void plan_prompt(strbuf *sb, const struct job_ctx *j)
{
    const struct goal *g = j->goal;

    strbuf_addf_cut(sb, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(sb, "Description: %s\n", g->description);
    strbuf_adds_cut(sb, "Success criteria (by index, for each item's \"criteria\"):\n");
    for (size_t k = 0; k < j->criteria->n; k++)
        strbuf_addf_cut(sb, "%zu. %s\n", k, j->criteria->text[k]);
    if (j->criteria->n == 0)
        strbuf_adds_cut(sb, "(none)\n");
    if (j->elab->present)
        strbuf_addf_cut(sb, "Elaboration: %s\n", j->elab->for_plan);
    strbuf_addf_cut(sb, "At most %lld work items.\n", (long long)config_int(CFG_PLAN_MAX_ITEMS));
}

/* The answer parsed and its criteria checked against the goal's; on
 * refusal p is empty and err_last() says why. */
static int plan_accept(struct plan *p, const cJSON *answer, int max,
                       const struct criteria *crit)
{
    int rc;

    if ((rc = plan_parse(p, answer, max)) != 0)
        return rc;
    rc = plan_check_criteria(p, crit);
    if (rc)
        plan_release(p);
    return rc;
}

int stage_plan(struct job_ctx *j)
{
    strbuf user = STRBUF_INIT;
    struct plan p = {0};
    cJSON *answer = NULL;
    int max = (int)config_int(CFG_PLAN_MAX_ITEMS);
    int rc;

    strbuf_init(&user, 1 << 20); /* the prompt: cut at its cap */
    plan_prompt(&user, j);
    if ((rc = job_ask_json(j, "plan", prompt_plan, strbuf_cstr(&user), schema_plan, &answer)))
        goto out;
    if (plan_accept(&p, answer, max, j->criteria) != 0) {
        /* one repair request carrying the error, then the run fails */
        char *prev = cJSON_PrintUnformatted(answer);
        cJSON *p2 = cJSON_CreateObject();
        cJSON_AddStringToObject(p2, "error", err_last());
        job_event_or_warn(j, "plan.refused", p2);
        cJSON_Delete(p2);
        strbuf_addf_cut(&user,
                        "\nYour previous plan was:\n%s\nIt was refused: %s\n"
                        "Answer again with a corrected plan.",
                        prev ? prev : "", err_last());
        cJSON_free(prev);
        cJSON_Delete(answer);
        answer = NULL;
        if ((rc = job_ask_json(j, "plan", prompt_plan, strbuf_cstr(&user), schema_plan,
                               &answer)))
            goto out;
        if (plan_accept(&p, answer, max, j->criteria) != 0) {
            rc = job_fail(j, "invalid_response", "plan refused after one repair: %s",
                          err_last());
            goto out;
        }
    }
    if ((rc = plan_store(j->st, j->goal->id, &p)) != 0) {
        rc = job_fail(j, "internal", "plan not stored: %s", err_last());
        goto out;
    }
    strbuf_addf_cut(&j->summary, "%zu work items", p.n);
out:
    plan_release(&p);
    cJSON_Delete(answer);
    strbuf_release(&user);
    return rc;
}
