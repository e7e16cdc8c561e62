/*
 * execute.c - stage 4, execute: one work item worked by a model calling
 * tools in the goal's worktree (the ReAct loop, react.c).
 *
 * Top to bottom: the goal's workspace is opened (clean at the branch
 * head); the task is written (the goal, its success criteria, the item,
 * its gates, the strategy of a retry, a human's answer, the context pack
 * of earlier runs and the failure of the last attempt with its failing
 * gates); the loop runs until the model calls complete or ask_human or a
 * limit stops it.  complete: the item goes to verification (verify.c,
 * which also runs review.c and evaluate.c).  ask_human: the item is
 * blocked with its question and an escalation opens.  A failed run's
 * changes are saved as a patch artifact and the worktree is reset, so the
 * next attempt starts from the branch head.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/context.h"
#include "lifecycle/escalate.h"
#include "lifecycle/plan.h"
#include "lifecycle/react.h"
#include "lifecycle/stages.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* ---- the task ---- */

/* The goal's success criteria that the item serves (the plan assigned
 * them; an item without an assignment serves every one). */
static void add_criteria(strbuf *sb, const struct work_item *wi, const char *json)
{
    cJSON *arr = json ? cJSON_Parse(json) : NULL;
    const cJSON *it;
    int k = 0, any = 0;

    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && plan_item_serves(wi, k))
            strbuf_addf_cut(sb, "%s- %s\n", any++ ? "" : "\nSuccess criteria of this item:\n",
                            it->valuestring);
        k++;
    }
    cJSON_Delete(arr);
}

/* A failing gate of the last attempt, with the last 6000 bytes of its
 * output. */
static int add_failed_gate(const char *name, int exit_code, const char *tail, void *arg)
{
    size_t n = tail ? strlen(tail) : 0;
    size_t from = tail ? utf8_cut_forward(tail, n > 6000 ? n - 6000 : 0, n) : 0;

    strbuf_addf_cut(arg, "\nGate %s failed (exit %d) after the last attempt. Its output:\n%s\n",
                    name, exit_code, tail ? tail + from : "");
    return 0;
}

/* The last failure of this item and the failing gates it left, so that a
 * retry starts from what went wrong. */
static void add_feedback(strbuf *sb, struct job_ctx *j)
{
    char *cls = NULL, *reason = NULL;

    if (store_run_last_failure(j->st, j->item->id, j->claim.run_id, &cls, &reason) == 0 && reason)
        strbuf_addf_cut(sb, "\nThe previous attempt failed (%s): %s\n", cls ? cls : "", reason);
    free(cls);
    free(reason);
    store_gate_result_failed_last_run_each(j->st, j->item->id, add_failed_gate, sb);
}

static void build_user(strbuf *sb, struct job_ctx *j)
{
    const struct goal *g = j->goal;
    const struct work_item *wi = j->item;
    char *pack = NULL;

    strbuf_addf_cut(sb, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(sb, "%s\n", g->description);
    add_criteria(sb, wi, g->success_criteria);
    strbuf_addf_cut(sb, "\nYour work item %s: %s (%s, effort %s)\n", wi->key, wi->title, wi->type,
                    wi->effort);
    if (wi->description && *wi->description)
        strbuf_addf_cut(sb, "%s\n", wi->description);
    if (g->verification && strcmp(g->verification, "[]") != 0)
        strbuf_addf_cut(sb, "\nVerification gates (run_gates runs them): %s\n", g->verification);
    else
        strbuf_adds_cut(sb, "\nThis goal has no deterministic gate: check your work with bash.\n");
    if (wi->strategy)
        strbuf_addf_cut(sb, "\nStrategy to follow (earlier ones failed): %s\n", wi->strategy);
    if (wi->human_input)
        strbuf_addf_cut(sb, "\nA human answered: %s\n", wi->human_input);
    if (context_pack_latest(j->st, wi->id, &pack) == 0 && pack)
        strbuf_addf_cut(sb, "\nWhere earlier runs of this item left off (context pack):\n%s\n",
                        pack);
    free(pack);
    add_feedback(sb, j);
}

/* ---- ask_human ---- */

/* The item waits for a human: its question stored, in_progress ->
 * blocked in one transaction, then an escalation opens. */
static int finish_blocked(struct job_ctx *j, const char *question)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(p, "question", question);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_item_set_question(j->st, j->item->id, question)) == 0)
        rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "blocked", "in_progress", p);
    if ((rc = store_tx_end(j->st, rc)) != 0)
        goto out;
    free(j->item->question);
    j->item->question = xstrdup(question);
    rc = escalate_open(j, "ask_human");
out:
    cJSON_Delete(p);
    return rc;
}

/* ---- the stage ---- */

int stage_execute(struct job_ctx *j)
{
    struct react_outcome x = {0};
    struct workspace ws;
    strbuf user;
    int rc;

    if (workspace_open(&ws, j) != 0)
        return job_fail(j, "workspace", "%s", err_last());
    strbuf_init(&user, 4 << 20); /* the task: cut at its cap */
    build_user(&user, j);
    rc = react_run(&x, j, &ws, strbuf_cstr(&user));
    if (x.completed) {
        strbuf_adds_cut(&j->summary, x.summary);
        rc = verify_item(j, &ws, x.summary);
    } else if (x.blocked) {
        strbuf_addf_cut(&j->summary, "asked a human: %s", x.question);
        if ((rc = finish_blocked(j, x.question)) != 0)
            rc = job_fail(j, "internal", "%s", err_last());
    }
    if (rc)
        workspace_discard(&ws, j); /* the next attempt starts from the branch head */
    workspace_close(&ws);
    react_outcome_release(&x);
    strbuf_release(&user);
    return rc;
}
