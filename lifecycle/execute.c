/*
 * execute.c - stage 4, execute: one work item worked by a model calling
 * tools in the goal's worktree (the ReAct loop, react.c).
 *
 * Top to bottom: the goal's workspace is opened (clean at the branch
 * head); the task is written (the goal, its success criteria, the item,
 * the items done before it, its gates, the strategy of a retry, a human's
 * answer, the context pack of earlier runs rebuilt as the ledger stands,
 * that the worktree was reset with the last discarded patch, and the
 * failure of the last attempt with its failing gates' output digested
 * once, digest.c); the loop runs until the model calls complete or ask_human or a
 * limit stops it.  complete: the item goes to verification (verify.c,
 * which also runs review.c and evaluate.c).  ask_human: the item is
 * blocked with its question and an escalation opens; its changes stay in
 * the worktree for the run after the answer.  A failed run's changes are
 * saved as a patch artifact and the worktree is reset, so the next
 * attempt starts from the branch head.
 */
#include "lifecycle/execute.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/context.h"
#include "lifecycle/digest.h"
#include "lifecycle/escalate.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/plan.h"
#include "lifecycle/react.h"
#include "lifecycle/recover.h"
#include "lifecycle/job.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "store/artifact.h"
#include "store/escalation.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "store/status.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/diff.h"

/* ---- the task ---- */

/* The goal's success criteria that the item serves (the plan assigned
 * them; an item without an assignment serves every one). */
static void add_criteria(strbuf *sb, const struct work_item *wi, const struct criteria *crit)
{
    int any = 0;

    for (size_t k = 0; k < crit->n; k++)
        if (plan_item_serves(wi, (int)k))
            strbuf_addf_cut(sb, "%s- %s\n", any++ ? "" : "\nSuccess criteria of this item:\n",
                            crit->text[k]);
}

#define FEEDBACK_OUTPUT_MAX 6000 /* one failing gate's output, digested */
#define DONE_SUMMARY_MAX 1000 /* an earlier item's summary, in bytes */
#define PATCH_SHOWN_MAX 8192       /* the discarded patch's hunks in the task */
#define PATCH_READ_MAX (4 << 20)  /* larger: summarised as too large */

/* The last failure of this item, so that a retry starts from what went
 * wrong; when the previous attempt asked a human instead, it is not
 * called a failure. */
static void add_feedback(strbuf *sb, struct job_ctx *j)
{
    char *cls = NULL, *reason = NULL;
    int asked = 0;

    if (store_run_item_asked_last(j->st, NULL, j->item->id, j->claim.run_id, &asked) != 0)
        err_clear();
    if (store_run_last_failure(j->st, j->item->id, j->claim.run_id, &cls, &reason) == 0 &&
        reason) {
        if (asked)
            strbuf_addf_cut(sb, "\nThe previous attempt did not fail: it asked a human (the "
                                "answers are above). The last attempt that failed, before "
                                "it (%s):\n",
                            cls ? cls : "");
        else
            strbuf_addf_cut(sb, "\nThe previous attempt failed (%s):\n", cls ? cls : "");
        digest_failure(sb, j->st, j->item->id, cls, reason, FEEDBACK_OUTPUT_MAX);
    }
    err_clear();
    free(cls);
    free(reason);
}

/* The files of a patch with their added and removed lines. */
static void patch_summary(strbuf *sb, const char *patch)
{
    const char *p = patch;
    long add = 0, del = 0;
    int files = 0;

    while (*p) {
        size_t n = strcspn(p, "\n");
        if (n > 13 && !strncmp(p, "diff --git a/", 13)) {
            const char *b = memmem(p, n, " b/", 3);
            if (files++)
                strbuf_addf_cut(sb, " (+%ld -%ld)", add, del);
            strbuf_addf_cut(sb, "%s%.*s", files > 1 ? ", " : "",
                            b ? (int)(p + n - b - 3) : (int)(n - 13), b ? b + 3 : p + 13);
            add = del = 0;
        } else if (n >= 1 && p[0] == '+' && strncmp(p, "+++ ", 4) != 0) {
            add++;
        } else if (n >= 1 && p[0] == '-' && strncmp(p, "--- ", 4) != 0) {
            del++;
        }
        p += n + (p[n] ? 1 : 0);
    }
    if (files)
        strbuf_addf_cut(sb, " (+%ld -%ld)", add, del);
    else
        strbuf_adds_cut(sb, "(no file)");
}

static int last_patch(const struct store_artifact *a, void *arg)
{
    void **out = arg;

    if (a->item_id && a->path && !strcmp(a->item_id, (const char *)out[0])) {
        free(out[1]);
        out[1] = xstrdup(a->path);
    }
    return 0;
}

/* The truth about the worktree of a retry: reset to the item's start,
 * the discarded changes' summary, where they are kept, and their hunks
 * (capped) to re-apply what was right. */
static void add_reset(strbuf *sb, struct job_ctx *j)
{
    void *lp[2] = {j->item->id, NULL};
    char *path, *red;
    strbuf text;
    size_t len, cut;

    if (store_artifact_each(j->st, j->goal->id, "patch", last_patch, lp) != 0)
        err_clear();
    path = lp[1];
    if (!path)
        return;
    strbuf_adds_cut(sb, "\nThe worktree was reset to the item's start (the branch head, with the "
                        "commits of the items done before): the changes of earlier attempts at "
                        "this item are NOT in it.\n");
    strbuf_init(&text, PATCH_READ_MAX + 1);
    if (fs_read_file(&text, path, PATCH_READ_MAX) != 0) {
        err_clear();
        strbuf_addf_cut(sb, "Their last discarded changes are kept by goald in %s (outside the "
                            "worktree; too large or unreadable to show here).\n",
                        path);
        strbuf_release(&text);
        free(path);
        return;
    }
    red = redact_str(strbuf_cstr(&text), NULL); /* what the model wrote, as any tool result */
    strbuf_addf_cut(sb, "The last discarded changes are kept by goald in %s (outside the "
                        "worktree): ", path);
    patch_summary(sb, red);
    strbuf_adds_cut(sb, ".\nIf the failure was elsewhere, re-apply what was right with write or "
                        "edit. The patch:\n");
    len = strlen(red);
    cut = len;
    if (len > PATCH_SHOWN_MAX) {
        cut = PATCH_SHOWN_MAX;
        while (cut > 0 && red[cut - 1] != '\n')
            cut--;
    }
    strbuf_add_cut(sb, red, cut);
    if (cut < len)
        strbuf_addf_cut(sb, "[patch cut at %zu of %zu bytes]\n", cut, len);
    free(red);
    strbuf_release(&text);
    free(path);
}

/* The worktree of a run after a human's answer: it holds the changes the
 * run that asked left (workspace.c kept them), summed up. */
static void add_kept(strbuf *sb, struct workspace *ws)
{
    strbuf diff;
    char *red;

    strbuf_init(&diff, PATCH_READ_MAX);
    if (vcs_diff_text(&diff, ws->wt) != 0)
        err_clear();
    red = redact_str(strbuf_cstr(&diff), NULL);
    strbuf_adds_cut(sb, "\nThe worktree holds the changes from before the question: your run "
                        "that asked a human left them and goald kept them for this run "
                        "(git diff shows them): ");
    patch_summary(sb, red);
    strbuf_adds_cut(sb, ". Go on from them.\n");
    free(red);
    strbuf_release(&diff);
}

/* One item of the goal done before this one: its key, title, commit and
 * summary (the model's, capped). */
struct done_items {
    strbuf *sb;
    const char *self_id;
    int n;
};

static int add_done_item(const struct work_item *wi, void *arg)
{
    struct done_items *d = arg;
    strbuf *sb = d->sb;

    if (!strcmp(wi->id, d->self_id) || item_status_of(wi->status) != ITEM_DONE)
        return 0;
    if (d->n++ == 0)
        strbuf_adds_cut(sb, "\nItems of this goal done before yours (the worktree already holds "
                            "their commits; build on them, do not redo them):\n");
    {
        const char *sum = wi->summary ? wi->summary : "";
        size_t n = strlen(sum);
        size_t cut = n > DONE_SUMMARY_MAX ? utf8_cut_back(sum, DONE_SUMMARY_MAX) : n;
        strbuf_addf_cut(sb, "- %s: %s (commit %.12s)%s%.*s%s\n", wi->key, wi->title,
                        wi->commit_sha && wi->commit_sha[0] ? wi->commit_sha : "none",
                        n ? ": " : "", (int)cut, sum, cut < n ? "\xe2\x80\xa6" : "");
    }
    return 0;
}

/* Where earlier runs left off: the pack rebuilt as the ledger stands now
 * (this run's opening may have reset the worktree), with the summary of
 * the latest stored one. */
static void add_pack(strbuf *sb, struct job_ctx *j, int answered)
{
    const char *summary;
    char *stored = NULL, *text;
    cJSON *old, *pack = NULL;

    if (context_pack_latest(j->st, j->item->id, &stored) != 0 || !stored) {
        err_clear();
        return;
    }
    old = cJSON_Parse(stored);
    summary = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(old, "summary"));
    /* the question is listed with its answer: not again */
    if (summary && !strncmp(summary, "asked a human: ", 15) && answered)
        summary = "asked a human (the answers are above)";
    if (context_pack_build(j->st, j->item->id, summary, &pack) != 0) {
        err_clear();
        text = NULL;
    } else {
        text = cJSON_PrintUnformatted(pack);
    }
    strbuf_addf_cut(sb, "\nWhere earlier runs of this item left off (context pack):\n%s\n",
                    text ? text : stored);
    cJSON_free(text);
    cJSON_Delete(pack);
    cJSON_Delete(old);
    free(stored);
}

static void build_user(strbuf *sb, struct job_ctx *j, struct workspace *ws)
{
    const struct goal *g = j->goal;
    const struct work_item *wi = j->item;
    int answers;

    strbuf_addf_cut(sb, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(sb, "%s\n", g->description);
    add_criteria(sb, wi, j->criteria);
    strbuf_addf_cut(sb, "\nYour work item %s: %s (%s, effort %s)\n", wi->key, wi->title, wi->type,
                    wi->effort);
    if (wi->description && *wi->description)
        strbuf_addf_cut(sb, "%s\n", wi->description);
    {
        struct done_items d = {sb, wi->id, 0};
        if (store_item_each(j->st, g->id, add_done_item, &d) != 0)
            err_clear(); /* the list is a help: the task goes on without it */
    }
    if (g->verification && strcmp(g->verification, "[]") != 0)
        strbuf_addf_cut(sb, "\nVerification gates (run_gates runs them): %s\n", g->verification);
    else
        strbuf_adds_cut(sb, "\nThis goal has no deterministic gate: check your work with bash.\n");
    if (wi->strategy)
        strbuf_addf_cut(sb, "\nStrategy to follow (earlier ones failed): %s\n", wi->strategy);
    answers = context_human_answers(sb, j->st, wi->id,
                                    "\nWhat a human decided about this item so far (newest "
                                    "first; each line: the action, what it answered, the "
                                    "human's words):");
    if (!answers && wi->human_input)
        strbuf_addf_cut(sb, "\nA human answered: %s\n", wi->human_input);
    add_pack(sb, j, answers > 0);
    if (ws->kept)
        add_kept(sb, ws);
    else
        add_reset(sb, j);
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

/* A best attempt a human accepted (resolve.c, accept_best_attempt) and no
 * run applied yet: *data is its decision (cJSON_Delete), else NULL. */
static int best_attempt_pending(struct job_ctx *j, cJSON **data)
{
    cJSON *acc = NULL, *done = NULL;
    const char *a, *d;

    *data = NULL;
    if (store_decision_latest_of_item(j->st, j->item->id, "best_attempt_accepted", &acc) != 0 ||
        store_decision_latest_of_item(j->st, j->item->id, "best_attempt_applied", &done) != 0) {
        cJSON_Delete(acc);
        return job_fail(j, "internal", "%s", err_last());
    }
    a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(acc, "escalation_id"));
    d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(done, "escalation_id"));
    if (a && !(d && !strcmp(a, d))) {
        *data = acc;
        acc = NULL;
    }
    cJSON_Delete(acc);
    cJSON_Delete(done);
    return 0;
}

/* Apply the accepted best attempt to the worktree (clean: just opened)
 * and verify it with its refused test changes accepted; no model call.
 * Recorded (best_attempt_applied, with the outcome) once that is over,
 * whatever it was: a job killed before then leaves the acceptance
 * pending, and the next run applies it again to a worktree reset to the
 * item's start; a verification that failed leaves the item to the model. */
static int apply_best_attempt(struct job_ctx *j, struct workspace *ws, const cJSON *acc)
{
    const char *run = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(acc, "run_id"));
    const char *patch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(acc, "patch"));
    cJSON *done = cJSON_Duplicate(acc, 1);
    char summary[256];
    int rc;

    if (!ws->wt || !patch || vcs_worktree_apply(ws->wt, patch) != 0) {
        rc = job_fail(j, "workspace", "the accepted best attempt (run %.8s) could not be "
                                      "applied: %s",
                      run ? run : "?", ws->wt && patch ? err_last() : "no worktree or patch");
    } else {
        fault_point("execute.best_attempt_applied");
        snprintf(summary, sizeof(summary), /* truncation: ok, a summary */
                 "the best attempt of run %.8s, its test changes accepted by a human",
                 run ? run : "?");
        strbuf_adds_cut(&j->summary, summary);
        j->accept_weakened = 1;
        rc = verify_item(j, ws, summary);
    }
    cJSON_AddBoolToObject(done, "verified", rc == 0);
    if (store_decision_add(j->st, &(struct store_decision_new){.goal_id = j->goal->id,
                                                               .item_id = j->item->id,
                                                               .run_id = j->claim.run_id,
                                                               .kind = "best_attempt_applied",
                                                               .data = done}) != 0)
        log_warn("%s: best_attempt_applied not recorded: %s", j->item->key, err_last());
    job_event_or_warn(j, "item.best_attempt_applied", done);
    cJSON_Delete(done);
    return rc;
}

int stage_execute(struct job_ctx *j)
{
    struct react_outcome x = {0};
    struct workspace ws;
    strbuf user;
    cJSON *acc = NULL;
    int landed = 0, rc;

    if (workspace_open(&ws, j) != 0) {
        rc = job_fail(j, "workspace", "%s", err_last());
        workspace_close(&ws);
        return rc;
    }
    strbuf_init(&user, 4 << 20); /* the task: cut at its cap */
    if ((rc = best_attempt_pending(j, &acc)) != 0 || acc) {
        if (acc)
            landed = (rc = apply_best_attempt(j, &ws, acc)) == 0;
        cJSON_Delete(acc);
        goto done;
    }
    /* a Plan B a dead run left owed is asked first (recover.h); a human's
     * accepted best attempt above needs none */
    if ((rc = recover_plan_b_owed(j)) != 0)
        goto done;
    build_user(&user, j, &ws);
    rc = react_run(&x, j, &ws, strbuf_cstr(&user));
    if (x.completed) {
        strbuf_adds_cut(&j->summary, x.summary);
        landed = (rc = verify_item(j, &ws, x.summary)) == 0;
    } else if (x.blocked) {
        strbuf_addf_cut(&j->summary, "asked a human: %s", x.question);
        if ((rc = finish_blocked(j, x.question)) != 0)
            rc = job_fail(j, "internal", "%s", err_last());
    }
done:
    /* a failed run's changes go (the next attempt starts from the branch
     * head); an item blocked on its question keeps them: the run after
     * the answer starts from them (workspace_open) */
    if (rc)
        workspace_discard(&ws, j);
    else if (ws.own && landed)
        workspace_drop_own(&ws, j); /* its worktree and branch go */
    workspace_close(&ws);
    react_outcome_release(&x);
    strbuf_release(&user);
    return rc;
}
