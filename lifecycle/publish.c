/*
 * publish.c - stage 7: when every work item of a goal is done or skipped,
 * push its branch, open (or find) its pull request, complete the goal,
 * notify, and remove the worktree (the branch stays).
 *
 * stage_publish() reads top to bottom:
 *   1. every item finished (or the goal completed partial by a human);
 *      none done: the goal is cancelled, nothing published; a skipped or
 *      cancelled item makes the goal partial
 *   2. the completion rule: the must-pass gates once more on the final
 *      branch head; pre-existing failures make the goal partial
 *   3. push the branch (publish.push), recorded as an artifact; in clone
 *      mode (docs/scaling.md) from this node's clone, fetched and set to
 *      the goal's head first, and "origin" is the goal's repo
 *   4. the pull request (publish.pull_request), its body from
 *      publish_body(): criteria and evidence, items, gates, review, cost
 *   5. the goal completed, with its event, in one transaction
 *   6. notify (an event always, a webhook when configured)
 *   7. the worktree removed
 *
 * Every step can be repeated after a crash without doing it twice: a push
 * of an up-to-date branch changes nothing, the pull request is looked for
 * before one is opened, artifacts are recorded once, and the goal's
 * completion is a checked transition.
 */
#include "lifecycle/publish.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/forge_goals.h"
#include "lifecycle/goal_evaluate.h"
#include "lifecycle/job.h"
#include "lifecycle/report.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/status.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "vcs/diff.h"
#include "vcs/forge.h"
#include "vcs/push.h"
#include "vcs/worktree.h"

/* One line of a markdown table cell: no newlines, no pipes.  The body is
 * a display text under its cap: every append here may cut it. */
static void cell(strbuf *sb, const char *s)
{
    for (const char *p = s ? s : ""; *p;) {
        size_t run = strcspn(p, "\n\r|");
        strbuf_add_cut(sb, p, run);
        p += run;
        if (*p == '\n' || *p == '\r')
            strbuf_adds_cut(sb, " ");
        else if (*p == '|')
            strbuf_adds_cut(sb, "\\|");
        if (*p)
            p++;
    }
}

/* The success criteria the goal-level evaluation left unmet or
 * unchecked; 1 when there was one. */
static int body_criteria_partial(strbuf *sb, store *st, const char *goal_id)
{
    cJSON *why = report_partial_reasons(st, goal_id);
    const cJSON *r;
    int n = cJSON_GetArraySize(why);

    if (n > 0)
        strbuf_adds_cut(sb, "**Partial**: these success criteria are not proven:\n\n");
    cJSON_ArrayForEach(r, why)
    {
        strbuf_adds_cut(sb, "- ");
        cell(sb, r->valuestring);
        strbuf_adds_cut(sb, "\n");
    }
    if (n > 0)
        strbuf_adds_cut(sb, "\n");
    cJSON_Delete(why);
    return n > 0;
}

/* A partial goal: the must-pass failures it was completed with (the
 * latest final check), the criteria not proven, or that a human
 * completed it with what was done. */
static int body_partial(strbuf *sb, store *st, const char *goal_id)
{
    cJSON *d = NULL;
    const cJSON *f;
    int rc = store_decision_latest_final_check(st, goal_id, &d);
    int crit;

    if (rc)
        return rc;
    crit = body_criteria_partial(sb, st, goal_id);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "partial"))) {
        if (!crit)
            strbuf_adds_cut(sb, "**Partial**: completed with what was done (items skipped or "
                                "cancelled, or a human's decision).\n\n");
        cJSON_Delete(d);
        return 0;
    }
    strbuf_adds_cut(sb, "**Partial**: must-pass gates still fail on the final tree, only with "
                        "failures that were there when the goal started and that it did not "
                        "set out to fix:\n\n");
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(d, "partial_failures"))
    {
        const cJSON *t;
        int k = 0;
        strbuf_adds_cut(sb, "- gate `");
        cell(sb, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "gate")));
        strbuf_adds_cut(sb, "`");
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(f, "tests"))
        {
            strbuf_adds_cut(sb, k++ ? ", " : ": ");
            cell(sb, cJSON_GetStringValue(t));
        }
        strbuf_adds_cut(sb, "\n");
    }
    strbuf_adds_cut(sb, "\n");
    cJSON_Delete(d);
    return 0;
}

/* The gates that back a criterion (older rows name none: all of them),
 * each with its exit code, output hash and tree; *any set once one is
 * written. */
static void evidence_gates(strbuf *sb, const cJSON *d, int *any)
{
    const cJSON *backed = cJSON_GetObjectItemCaseSensitive(d, "backed_by");
    const cJSON *g, *t;

    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(d, "gates"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "gate"));
        const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "output_hash"));
        const char *tr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "tree_id"));
        int backs = 0;
        /* only the gates that back this criterion (older rows: all) */
        cJSON_ArrayForEach(t, backed) if (name && !strcmp(cJSON_GetStringValue(t), name)) backs = 1;
        if (backed && !backs)
            continue;
        strbuf_addf_cut(sb, "%sgate `%s` exit %d, output sha256 `%.12s`, tree `%.12s`",
                        *any ? "; " : "", name ? name : "",
                        (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "exit_code")),
                        h ? h : "", tr ? tr : "");
        *any = 1;
    }
}

/* One row of the evidence table: criterion, item, kind, what backs it
 * (the gates with their exit code, output hash and tree on a gate row,
 * the test cases on a test row, the quote or the reason otherwise; rows
 * written before kinds: the gates and tests they name). */
static int evidence_row_cb(const struct store_decision *dec, void *ctx)
{
    strbuf *sb = ctx;
    cJSON *d = cJSON_Parse(dec->data);
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "kind"));
    const char *backing = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "backing"));
    const cJSON *t;
    int any = 0, ngates = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "gates"));
    int ftp = backing && !strncmp(backing, "fail_to_pass", 12);

    strbuf_adds_cut(sb, "| ");
    cell(sb, dec->note);
    strbuf_adds_cut(sb, " | ");
    cell(sb, dec->item_key);
    strbuf_adds_cut(sb, " | ");
    cell(sb, kind ? kind : "");
    strbuf_adds_cut(sb, " | ");
    if (!kind || !strcmp(kind, "gate"))
        evidence_gates(sb, d, &any);
    if (!kind || !strcmp(kind, "test"))
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d, "tests"))
        {
            strbuf_adds_cut(sb, any++ ? "; test `" : "test `");
            cell(sb, cJSON_GetStringValue(t));
            strbuf_adds_cut(sb, ftp ? "` fails before, passes after" : "` passed");
        }
    if (!any && kind && backing) {
        cell(sb, backing);
        any = 1;
    }
    if (!any)
        strbuf_adds_cut(sb, ngates ? "none" : "none: **UNVERIFIED**, no deterministic gate");
    strbuf_adds_cut(sb, " |\n");
    cJSON_Delete(d);
    return 0;
}

/* A section of the body: its text, and whether a row of it came yet. */
struct section_ctx {
    strbuf *sb;
    int any;
};

/* One item whose changes touched files the gates read, with those files. */
static int inputs_row_cb(const struct store_decision *dec, void *ctx)
{
    struct section_ctx *ic = ctx;
    cJSON *a = cJSON_Parse(dec->data);
    const cJSON *t;
    int k = 0;

    if (!ic->any++)
        strbuf_adds_cut(ic->sb, "\n## Gate inputs changed\n\nThese items changed files the gates "
                                "read; their gates were also run with those files as they were "
                                "before the item.\n\n");
    strbuf_adds_cut(ic->sb, "- ");
    cell(ic->sb, dec->item_key);
    cJSON_ArrayForEach(t, a)
    {
        strbuf_adds_cut(ic->sb, k++ ? ", `" : ": `");
        cell(ic->sb, cJSON_GetStringValue(t));
        strbuf_adds_cut(ic->sb, "`");
    }
    strbuf_adds_cut(ic->sb, "\n");
    cJSON_Delete(a);
    return 0;
}

static int item_row_cb(const struct work_item *wi, void *ctx)
{
    strbuf *sb = ctx;

    strbuf_adds_cut(sb, "| ");
    cell(sb, wi->key);
    strbuf_adds_cut(sb, " | ");
    cell(sb, wi->title);
    strbuf_addf_cut(sb, " | %s | %s | %.12s |\n", wi->status,
                    wi->verified < 0 ? "-"
                    : wi->verified   ? "yes"
                                     : "**UNVERIFIED**",
                    wi->commit_sha ? wi->commit_sha : "");
    return 0;
}

/* The accepted test changes of the items, as a list (accepted_cb). */
struct accepted {
    store *st;
    strbuf *sb;
    const char *repo; /* NULL: no diffs shown */
    int n;
    char shown[16][512]; /* the files of this item whose diff is shown */
    int nshown;
};

#define ACCEPTED_DIFF_MAX (8 * 1024)

/* The test file of case id as the item changed it, old and new lines
 * together (a unified diff of the file from the item's baseline to its
 * commit), once per file; only for ids that name their file
 * ("path::name"). */
static void accepted_diff(struct accepted *a, const struct work_item *wi, const cJSON *v,
                          const char *id)
{
    const char *base = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "baseline"));
    const char *sep = strstr(id, "::");
    char path[512];
    strbuf d;
    int cut = 0;

    if (!a->repo || !base || !wi->commit_sha || !sep || (size_t)(sep - id) >= sizeof(path))
        return;
    snprintf(path, sizeof(path), "%.*s", (int)(sep - id), id); /* truncation: ok, checked above */
    for (int i = 0; i < a->nshown; i++)
        if (!strcmp(a->shown[i], path))
            return;
    if (a->nshown < 16)
        /* truncation: ok, path fits 512 bytes both */
        snprintf(a->shown[a->nshown++], sizeof(a->shown[0]), "%s", path);
    strbuf_init(&d, ACCEPTED_DIFF_MAX);
    if (vcs_diff_path(&d, &cut, a->repo, base, wi->commit_sha, path) == 0 && d.len) {
        /* the model wrote it: redacted, and no backtick can close the fence */
        char *red = redact_str(strbuf_cstr(&d), NULL);
        strbuf_adds_cut(a->sb, "\n  ````diff\n");
        for (const char *p = red; *p;) {
            size_t n = strcspn(p, "\n");
            strbuf_adds_cut(a->sb, "  ");
            for (size_t k = 0; k < n; k++)
                strbuf_add_cut(a->sb, p[k] == '`' ? "'" : p + k, 1);
            strbuf_adds_cut(a->sb, "\n");
            p += n + (p[n] == '\n');
        }
        strbuf_addf_cut(a->sb, "  ````\n%s\n", cut ? "  (cut: the whole change is in the "
                                                     "item's commit)\n"
                                                   : "");
        free(red);
    }
    err_clear();
    strbuf_release(&d);
}

static int accepted_cb(const struct work_item *wi, void *ctx)
{
    struct accepted *a = ctx;
    cJSON *v = NULL;
    const cJSON *id;

    if (item_status_of(wi->status) != ITEM_DONE)
        return 0;
    if (store_decision_latest_verification(a->st, wi->id, &v) != 0) {
        err_clear(); /* the body says what it can */
        return 0;
    }
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(v, "accepted_test_changes"))
    {
        if (!cJSON_IsString(id))
            continue;
        if (!a->n++)
            strbuf_adds_cut(a->sb,
                            "## Existing tests changed\n\nThese tests now expect what the goal "
                            "asks for: goald ran their new version on the original code (it "
                            "fails) and on this branch (it passes). Their old version fails "
                            "on this branch. Read them before you merge.\n\n");
        strbuf_adds_cut(a->sb, "- `");
        cell(a->sb, id->valuestring);
        strbuf_addf_cut(a->sb, "` (item %s, commit %.12s)\n", wi->key,
                        wi->commit_sha ? wi->commit_sha : "");
        accepted_diff(a, wi, v, id->valuestring);
    }
    a->nshown = 0;
    cJSON_Delete(v);
    return 0;
}

/* The changed tests goald accepted, at the top of the body: a reviewer
 * must see them first. */
static int body_accepted(strbuf *sb, store *st, const char *goal_id, const char *repo)
{
    struct accepted *a = xcalloc(1, sizeof(*a));
    int rc;

    a->st = st;
    a->sb = sb;
    a->repo = repo;
    rc = store_item_each(st, goal_id, accepted_cb, a);
    if (a->n)
        strbuf_adds_cut(sb, "\n");
    free(a);
    return rc;
}

static int gate_row_cb(const struct store_gate_result *g, void *ctx)
{
    strbuf *sb = ctx;
    char tests[64] = "-";

    if (g->counted)
        /* truncation: ok, numbers shown */
        snprintf(tests, sizeof(tests), "%d passed, %d failed", g->tests_passed,
                 g->tests_failed);
    strbuf_adds_cut(sb, "| ");
    cell(sb, g->item_key);
    strbuf_adds_cut(sb, " | ");
    cell(sb, g->name);
    strbuf_addf_cut(sb, " | %s (exit %d) | %s | %s |\n", g->passed ? "pass" : "fail", g->exit_code,
                    *g->classification ? g->classification : "-", tests);
    return 0;
}

static int review_row_cb(const struct store_decision *d, void *ctx)
{
    struct section_ctx *rc = ctx;

    rc->any = 1;
    if (!strcmp(d->kind, "review_verdict")) {
        strbuf_addf_cut(rc->sb, "- %s: verdict **%s**\n", d->item_key, d->note);
    } else if (!strcmp(d->kind, "review_unavailable")) {
        strbuf_addf_cut(rc->sb, "- %s: no review (the model could not be asked)\n", d->item_key);
    } else {
        strbuf_addf_cut(rc->sb, "  - [%s] %s: ", d->severity, d->aspect);
        cell(rc->sb, d->note);
        strbuf_adds_cut(rc->sb, "\n");
    }
    return 0;
}

/* The goal-level evaluation's rows of the evidence table (item "goal"). */
static int body_evaluation_rows(strbuf *sb, store *st, const char *goal_id)
{
    cJSON *rows = cJSON_CreateArray();
    const cJSON *r;
    int rc = report_evaluation_rows(st, goal_id, rows);

    cJSON_ArrayForEach(r, rows)
    {
        strbuf_adds_cut(sb, "| ");
        cell(sb, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "criterion")));
        strbuf_adds_cut(sb, " | (goal) | ");
        cell(sb, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "kind")));
        strbuf_adds_cut(sb, " | ");
        cell(sb, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "backing")));
        strbuf_adds_cut(sb, " |\n");
    }
    cJSON_Delete(rows);
    return rc;
}

/* The tables after the goal's head: evidence, changed gate inputs, items,
 * gates and review. */
static int body_tables(strbuf *sb, store *st, const char *goal_id)
{
    struct section_ctx ic = {sb, 0};
    struct section_ctx rv = {sb, 0};
    int rc;

    strbuf_adds_cut(sb, "## Success criteria and evidence\n\n"
                        "| criterion | item | kind | what backs it |\n|---|---|---|---|\n");
    if ((rc = store_decision_each_evidence(st, goal_id, evidence_row_cb, sb)) != 0 ||
        (rc = body_evaluation_rows(sb, st, goal_id)) != 0 ||
        (rc = store_decision_each_gate_inputs_changed(st, goal_id, inputs_row_cb, &ic)) != 0)
        return rc;
    strbuf_adds_cut(sb, "\n## Work items\n\n| item | title | status | verified | commit |\n"
                        "|---|---|---|---|---|\n");
    if ((rc = store_item_each(st, goal_id, item_row_cb, sb)) != 0)
        return rc;
    strbuf_adds_cut(sb, "\n## Gates\n\n| item | gate | result | failure | tests |\n"
                        "|---|---|---|---|---|\n");
    if ((rc = store_gate_result_each_latest_of_goal(st, goal_id, gate_row_cb, sb)) != 0)
        return rc;
    strbuf_adds_cut(sb, "\n## Review (advisory)\n\n");
    if ((rc = store_decision_each_review(st, goal_id, review_row_cb, &rv)) != 0)
        return rc;
    if (!rv.any)
        strbuf_adds_cut(sb, "No review.\n");
    return 0;
}

int publish_body(strbuf *sb, store *st, const char *goal_id, const char *repo)
{
    struct goal *g = NULL;
    int rc = store_goal_get(st, goal_id, &g);

    if (rc == ERR_NOTFOUND) {
        err_clear(); /* no goal: the tables alone */
        rc = 0;
    }
    if (rc)
        return rc;
    if (g) {
        strbuf_addf_cut(sb, "## Goal\n\n**%s**\n\n", g->title);
        if (g->description && *g->description)
            strbuf_addf_cut(sb, "%s\n\n", g->description);
        if ((rc = body_accepted(sb, st, goal_id, repo)) != 0)
            goto out;
        /* partial by the completion rule: the failures are listed */
        if (g->partial && (rc = body_partial(sb, st, goal_id)) != 0)
            goto out;
    }
    if ((rc = body_tables(sb, st, goal_id)) != 0)
        goto out;
    if (g)
        strbuf_addf_cut(sb, "\n## Cost\n\n%lld tokens, $%.4f\n\n_Published by goald._\n",
                        (long long)g->spent_tokens, g->spent_cost_usd);
out:
    store_goal_free(g);
    return rc;
}

/* How a goal's items ended (store_item_count_by_effort_status). */
struct finished {
    int total, done, skipped, cancelled;
};

static int finished_add(const char *effort, const char *status, int64_t n, void *ctx)
{
    struct finished *f = ctx;

    (void)effort;
    f->total += (int)n;
    if (item_status_of(status) == ITEM_DONE)
        f->done += (int)n;
    else if (item_status_of(status) == ITEM_SKIPPED)
        f->skipped += (int)n;
    else if (item_status_of(status) == ITEM_CANCELLED)
        f->cancelled += (int)n;
    return 0;
}

/* 1. Every item done or skipped (and at least one), or the goal completed
 * partial by a human; how they ended into *f.  On failure job_fail() has
 * been called. */
static int check_finished(struct job_ctx *j, struct finished *f)
{
    const struct goal *g = j->goal;
    int total = 0, finished = 0;

    memset(f, 0, sizeof(*f));
    if (store_item_count_finished(j->st, g->id, &total, &finished) != 0 ||
        store_item_count_by_effort_status(j->st, g->id, finished_add, f) != 0)
        return job_fail(j, "internal", "%s", err_last());
    if (!(total > 0 && total == finished) && !g->partial)
        return job_fail(j, "internal", "goal %s has unfinished items", g->id);
    return 0;
}

/* 1b. Nothing done, nothing published: a goal none of whose items was
 * done (every one skipped or cancelled) is never completed; it is
 * cancelled with the reason, no branch pushed, no artifact recorded.
 * 0 (the goal cancelled, *ended set), or an error after job_fail(). */
static int nothing_done(struct job_ctx *j, const struct finished *f, int *ended)
{
    char why[256];
    cJSON *p;
    int rc;

    *ended = 0;
    if (f->done > 0)
        return 0;
    /* truncation: ok, a message */
    snprintf(why, sizeof(why), "nothing was done: %d item%s skipped, %d cancelled; no branch "
             "is published",
             f->skipped, f->skipped == 1 ? "" : "s", f->cancelled);
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "reason", why);
    cJSON_AddNumberToObject(p, "items_skipped", f->skipped);
    cJSON_AddNumberToObject(p, "items_cancelled", f->cancelled);
    rc = transition_apply(j->st, ENTITY_GOAL, j->goal->id, "cancelled", NULL, p);
    cJSON_Delete(p);
    if (rc != 0)
        return job_fail(j, "internal", "%s", err_last());
    strbuf_addf_cut(&j->summary, "goal cancelled: %s", why);
    *ended = 1;
    return 0;
}

/* 2. The completion rule: the must-pass gates once more on the final
 * branch head (not for a goal a human completed as partial); *partial is
 * set when only pre-existing failures remain, or when an item was
 * skipped or cancelled (partial means partial: that is work not done), or
 * when a human completed the goal as partial; stored on the goal. */
static int final_check(struct job_ctx *j, const struct finished *f, int *partial)
{
    int rc;

    *partial = 0;
    if (j->goal->partial) {
        *partial = 1;
        return 0;
    }
    if ((rc = verify_goal_final(j, partial)) != 0)
        return rc;
    *partial = *partial || f->skipped || f->cancelled;
    return 0;
}

/* 2b. The goal-level evaluation (goal_evaluate.c) on the final head: it
 * may send the goal back to planning or to a human (*ended: the run
 * stops here, the goal stays open), or leave criteria unmet or
 * unchecked (partial).  Then partial is stored on the goal. */
static int evaluate_goal(struct job_ctx *j, const char *head, int human_partial, int *partial,
                         int *ended)
{
    struct goal_eval ev;
    int rc;

    *ended = 0;
    if ((rc = goal_evaluate(&ev, j, head, human_partial)) != 0)
        goto out;
    if (ev.action != GOAL_EVAL_PUBLISH) {
        *ended = 1;
        if (ev.action == GOAL_EVAL_ESCALATED)
            strbuf_addf_cut(&j->summary, "a critical criterion is unmet: escalated");
        goto out;
    }
    *partial = *partial || ev.partial;
    if (*partial && !human_partial && store_goal_set_partial(j->st, j->goal->id) != 0)
        rc = job_fail(j, "internal", "%s", err_last());
out:
    goal_eval_release(&ev);
    return rc;
}

/* The head commit of the goal's worktree into head ("" when unknown). */
static void worktree_head(struct job_ctx *j, char head[VCS_OID_HEX])
{
    vcs_worktree *wt = NULL;

    if (!(j->repo && j->goal->branch && j->worktree))
        return;
    if (vcs_worktree_open(&wt, j->repo, j->worktree) == 0) {
        vcs_worktree_head(head, wt);
        vcs_worktree_free(wt);
    }
}

/* 3. Push the branch to remote; remote_url (n bytes) receives its URL
 * ("" when unknown).  The branch artifact and goal.pushed are recorded. */
static int push_branch(struct job_ctx *j, const char *remote, const char *head,
                       char *remote_url, size_t n)
{
    const struct goal *g = j->goal;
    cJSON *m;
    int rc = 0;

    if (vcs_push(j->repo, remote, g->branch) != 0)
        return job_fail(j, "push", "%s", err_last());
    m = cJSON_CreateObject();
    vcs_remote_url(remote_url, n, j->repo, remote);
    cJSON_AddStringToObject(m, "remote", remote);
    /* the branch artifact and goal.pushed are the record of the push: a
     * write that fails fails the step (a retry pushes again, changing
     * nothing, and records them) */
    if (verify_artifact(j, "branch", g->branch, NULL, head[0] ? head : NULL,
                        remote_url[0] ? remote_url : NULL, m) != 0 ||
        store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.pushed", m, NULL) != 0)
        rc = job_fail(j, "internal", "%s", err_last());
    cJSON_Delete(m);
    return rc;
}

/* 4. Open (or find) the pull request of the pushed branch; *pr filled on
 * success (vcs_pr_release()), its artifact and goal.pull_request
 * recorded.  A forge failure fails the job: auth (401/403: no retry, one
 * escalation naming the forge and the variable) or forge, and a rate
 * limit that resets later than forge.retry_max_wait_s makes the goal's
 * next attempt wait for it. */
static int open_pull_request(struct job_ctx *j, const char *remote_url, int partial,
                             struct vcs_pr *pr)
{
    const struct goal *g = j->goal;
    struct vcs_forge f = {0};
    strbuf body;
    char title[300], ref[32];
    cJSON *m;
    int rc;

    strbuf_init(&body, 1 << 20);
    if ((rc = publish_body(&body, j->st, g->id, j->repo)) != 0 ||
        (rc = forge_pr_body_closes(&body, j->st, g->id)) != 0) {
        strbuf_release(&body);
        return job_fail(j, "internal", "%s", err_last());
    }
    /* truncation: ok, a title */
    snprintf(title, sizeof(title), "%s%s", partial ? "[partial] " : "", g->title);
    rc = vcs_forge_from_config(&f, remote_url[0] ? remote_url : NULL);
    if (rc == 0)
        rc = vcs_forge_pr_ensure(pr, &f, title, g->branch,
                                 g->base_branch ? g->base_branch : "main", strbuf_cstr(&body));
    strbuf_release(&body);
    vcs_forge_release(&f);
    if (rc) {
        const char *cls = !strcmp(pr->failure.cls, "auth") ? "auth" : "forge";
        if (pr->failure.wait_ms > 0)
            j->retry_not_before_ms = time_now_ms() + pr->failure.wait_ms;
        vcs_pr_release(pr);
        return job_fail(j, cls, "%s", err_last());
    }
    m = cJSON_CreateObject();
    snprintf(ref, sizeof(ref), "#%ld", pr->number); /* truncation: ok, a number fits */
    cJSON_AddNumberToObject(m, "number", (double)pr->number);
    cJSON_AddBoolToObject(m, "created", pr->created);
    /* the record of the pull request: a failed write fails the step (a
     * retry finds the pull request and records it) */
    if (verify_artifact(j, "pull_request", ref, NULL, NULL, pr->url, m) != 0 ||
        store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.pull_request", m, NULL) != 0)
        rc = job_fail(j, "internal", "%s", err_last());
    cJSON_Delete(m);
    return rc;
}

/* Clone mode: this node's clone fetched and the goal branch at the goal's
 * head (the database's), as before an item: the node that publishes may
 * not be the one that ran the last item.  On failure job_fail(). */
static int sync_clone(struct job_ctx *j)
{
    struct workspace ws;
    int rc;

    if (!j->clone)
        return 0;
    rc = workspace_open(&ws, j);
    workspace_close(&ws);
    return rc ? job_fail(j, "vcs", "%s", err_last()) : 0;
}

/* 6. An event always (goal.completed, written with the transition), a
 * webhook when configured: its outcome is an event too. */
static void notify(struct job_ctx *j, cJSON *p)
{
    const struct goal *g = j->goal;
    char *text;
    int sent = 0;

    if (!config_str(CFG_NOTIFY_WEBHOOK_URL))
        return;
    cJSON_AddStringToObject(p, "event", "goal.completed");
    cJSON_AddStringToObject(p, "goal_id", g->id);
    text = cJSON_PrintUnformatted(p);
    if (vcs_webhook_post(&sent, config_str(CFG_NOTIFY_WEBHOOK_URL), text) != 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "error", err_last());
        if (store_event_add(j->st, g->id, NULL, j->claim.run_id, "notify.failed", e, NULL) != 0)
            log_warn("goal %.8s: event notify.failed not written: %s", g->id, err_last());
        cJSON_Delete(e);
    } else if (store_event_add(j->st, g->id, NULL, j->claim.run_id, "notify.sent", NULL, NULL) !=
               0) {
        log_warn("goal %.8s: event notify.sent not written: %s", g->id, err_last());
    }
    cJSON_free(text);
}

/* The goal.completed payload: title, branch, head, pull request, partial
 * (and, when items were skipped or cancelled, how many). */
static cJSON *completed_payload(const struct goal *g, const char *head, const struct vcs_pr *pr,
                                int partial, const struct finished *f)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "title", g->title);
    if (g->branch)
        cJSON_AddStringToObject(p, "branch", g->branch);
    if (head[0])
        cJSON_AddStringToObject(p, "head", head);
    if (pr->url) {
        cJSON_AddStringToObject(p, "pull_request", pr->url);
        cJSON_AddNumberToObject(p, "pull_request_number", (double)pr->number);
    }
    cJSON_AddBoolToObject(p, "partial", partial);
    if (f->skipped || f->cancelled) {
        cJSON_AddNumberToObject(p, "items_skipped", f->skipped);
        cJSON_AddNumberToObject(p, "items_cancelled", f->cancelled);
    }
    return p;
}

int stage_publish(struct job_ctx *j)
{
    const struct goal *g = j->goal;
    cJSON *pub = g->publish ? cJSON_Parse(g->publish) : NULL;
    int push = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pub, "push"));
    int want_pr = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pub, "pull_request"));
    const char *remote = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pub, "remote"));
    char head[VCS_OID_HEX] = "", remote_url[2048] = "";
    struct vcs_pr pr = {0};
    cJSON *p = NULL;
    struct finished fin;
    int partial = 0, ended = 0, human_partial = g->partial, rc;

    if (!remote)
        remote = "origin";
    if ((rc = check_finished(j, &fin)) != 0 || (rc = nothing_done(j, &fin, &ended)) != 0 || ended)
        goto out;
    if ((rc = sync_clone(j)) != 0 || (rc = final_check(j, &fin, &partial)) != 0)
        goto out;
    worktree_head(j, head);
    if ((rc = evaluate_goal(j, head, human_partial, &partial, &ended)) != 0 || ended)
        goto out;
    if (g->repo && g->branch && push &&
        (rc = push_branch(j, remote, head, remote_url, sizeof(remote_url))) != 0)
        goto out;
    fault_point("publish.after_push");
    if (g->repo && g->branch && want_pr) {
        if (!push) {
            rc = job_fail(j, "config", "publish.pull_request needs publish.push");
            goto out;
        }
        if ((rc = open_pull_request(j, remote_url, partial, &pr)) != 0)
            goto out;
    }
    fault_point("publish.after_pull_request");

    /* 5. the goal is complete, with its event, in one transaction */
    p = completed_payload(g, head, &pr, partial, &fin);
    if ((rc = transition_apply(j->st, ENTITY_GOAL, g->id, "completed", NULL, p)) != 0) {
        rc = job_fail(j, "internal", "%s", err_last());
        goto out;
    }
    strbuf_addf_cut(&j->summary, "goal completed%s%s", pr.url ? ": " : "", pr.url ? pr.url : "");
    notify(j, p);
    /* 7. the worktree goes; the branch stays */
    if (j->repo && j->worktree && vcs_worktree_remove(j->repo, j->worktree) != 0)
        log_warn("goal %.8s: worktree %s not removed: %s", g->id, j->worktree, err_last());
    if (j->repo && !j->clone)
        workspace_remove_items(g, j->repo); /* items' own worktrees left (skipped ones) */
    workspace_remove_builds(j->st, g->id);
out:
    vcs_pr_release(&pr);
    cJSON_Delete(p);
    cJSON_Delete(pub);
    return rc;
}
