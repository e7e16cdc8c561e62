/*
 * publish.c - stage 7: when every work item of a goal is done or skipped,
 * push its branch, open (or find) its pull request, complete the goal,
 * notify, and remove the worktree (the branch stays).
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

#include "lifecycle/job.h"
#include "lifecycle/report.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "vcs/forge.h"
#include "vcs/push.h"
#include "vcs/worktree.h"

/* One line of a markdown table cell: no newlines, no pipes. */
static void cell(strbuf *sb, const char *s)
{
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '\n' || *p == '\r')
            strbuf_addc(sb, ' ');
        else if (*p == '|')
            strbuf_adds(sb, "\\|");
        else
            strbuf_addc(sb, *p);
    }
}

int publish_body(strbuf *sb, store *st, const char *goal_id)
{
    static const char q_goal[] =
        "SELECT title, description, spent_tokens, spent_cost_usd, partial FROM goals WHERE id = ?";
    /* one row per (criterion, item): the item's latest evidence for it */
    static const char q_evidence[] =
        "SELECT d.note, d.data, w.key FROM decisions d JOIN work_items w ON w.id = d.item_id"
        " WHERE d.goal_id = ? AND d.kind = 'evidence' AND w.status = 'done' AND d.id IN"
        " (SELECT max(id) FROM decisions WHERE goal_id = ? AND kind = 'evidence'"
        " GROUP BY item_id, note) ORDER BY w.created_at, w.rowid, d.id";
    static const char q_final[] =
        "SELECT data FROM decisions WHERE goal_id = ? AND kind = 'final_check'"
        " ORDER BY id DESC LIMIT 1";
    static const char q_inputs[] =
        "SELECT w.key, json_extract(d.data, '$.gate_inputs_changed') FROM decisions d"
        " JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ? AND d.kind = 'verification'"
        " AND w.status = 'done' AND json_array_length(json_extract(d.data,"
        " '$.gate_inputs_changed')) > 0 AND d.id IN (SELECT max(id) FROM decisions"
        " WHERE goal_id = ? AND kind = 'verification' GROUP BY item_id)"
        " ORDER BY w.created_at, w.rowid";
    static const char q_items[] =
        "SELECT key, title, status, verified, ifnull(commit_sha, '') FROM work_items"
        " WHERE goal_id = ? ORDER BY created_at, rowid";
    static const char q_gates[] =
        "SELECT w.key, g.name, g.passed, ifnull(g.exit_code, -1), ifnull(g.classification, ''),"
        " g.tests_passed, g.tests_failed, g.output_hash FROM gate_results g"
        " JOIN work_items w ON w.id = g.item_id WHERE g.id IN (SELECT max(id) FROM gate_results"
        " WHERE goal_id = ? GROUP BY item_id, name) ORDER BY w.created_at, g.name";
    static const char q_review[] =
        "SELECT w.key, d.kind, ifnull(d.aspect, ''), ifnull(d.severity, ''), ifnull(d.note, '')"
        " FROM decisions d JOIN work_items w ON w.id = d.item_id WHERE d.goal_id = ?"
        " AND d.kind IN ('review_verdict', 'review_finding', 'review_unavailable') ORDER BY d.id";
    sqlite3_stmt *s;
    int rc, partial = 0;

    if ((rc = store_prepare(st, &s, q_goal)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        strbuf_addf(sb, "## Goal\n\n**%s**\n\n", sqlite3_column_text(s, 0));
        if (sqlite3_column_text(s, 1) && *sqlite3_column_text(s, 1))
            strbuf_addf(sb, "%s\n\n", sqlite3_column_text(s, 1));
        partial = sqlite3_column_int(s, 4);
    }
    store_done(s);
    if (partial) {
        /* partial by the completion rule: the failures are listed */
        cJSON *d = NULL;
        const cJSON *f;
        if ((rc = store_prepare(st, &s, q_final)) != 0)
            return rc;
        store_bind_text(s, 1, goal_id);
        if (sqlite3_step(s) == SQLITE_ROW)
            d = cJSON_Parse((const char *)sqlite3_column_text(s, 0));
        store_done(s);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "partial"))) {
            strbuf_adds(sb, "**Partial**: must-pass gates still fail on the final tree, only with "
                            "failures that were there when the goal started and that it did not "
                            "set out to fix:\n\n");
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(d, "partial_failures"))
            {
                const cJSON *t;
                int k = 0;
                strbuf_adds(sb, "- gate `");
                cell(sb, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "gate")));
                strbuf_adds(sb, "`");
                cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(f, "tests"))
                {
                    strbuf_adds(sb, k++ ? ", " : ": ");
                    cell(sb, cJSON_GetStringValue(t));
                }
                strbuf_adds(sb, "\n");
            }
            strbuf_adds(sb, "\n");
        } else {
            strbuf_adds(sb, "**Partial**: completed by a human with what was done.\n\n");
        }
        cJSON_Delete(d);
    }

    strbuf_adds(sb, "## Success criteria and evidence\n\n| criterion | item | evidence |\n"
                    "|---|---|---|\n");
    if ((rc = store_prepare(st, &s, q_evidence)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *d = cJSON_Parse((const char *)sqlite3_column_text(s, 1));
        const cJSON *backed = cJSON_GetObjectItemCaseSensitive(d, "backed_by");
        const cJSON *g, *t;
        int any = 0, ngates = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "gates"));
        strbuf_adds(sb, "| ");
        cell(sb, (const char *)sqlite3_column_text(s, 0));
        strbuf_adds(sb, " | ");
        cell(sb, (const char *)sqlite3_column_text(s, 2));
        strbuf_adds(sb, " | ");
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
            strbuf_addf(sb, "%sgate `%s` exit %d, output sha256 `%.12s`, tree `%.12s`",
                        any ? "; " : "", name ? name : "",
                        (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "exit_code")),
                        h ? h : "", tr ? tr : "");
            any = 1;
        }
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d, "tests"))
        {
            strbuf_adds(sb, any++ ? "; test `" : "test `");
            cell(sb, cJSON_GetStringValue(t));
            strbuf_adds(sb, "` passed");
        }
        if (!any)
            strbuf_adds(sb, ngates ? "none" : "none: **UNVERIFIED**, no deterministic gate");
        strbuf_adds(sb, " |\n");
        cJSON_Delete(d);
    }
    store_done(s);

    if ((rc = store_prepare(st, &s, q_inputs)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    store_bind_text(s, 2, goal_id);
    {
        int any = 0;
        while (sqlite3_step(s) == SQLITE_ROW) {
            cJSON *a = cJSON_Parse((const char *)sqlite3_column_text(s, 1));
            const cJSON *t;
            int k = 0;
            if (!any++)
                strbuf_adds(sb, "\n## Gate inputs changed\n\nThese items changed files the gates "
                                "read; their gates were also run with those files as they were "
                                "before the item.\n\n");
            strbuf_adds(sb, "- ");
            cell(sb, (const char *)sqlite3_column_text(s, 0));
            cJSON_ArrayForEach(t, a)
            {
                strbuf_adds(sb, k++ ? ", `" : ": `");
                cell(sb, cJSON_GetStringValue(t));
                strbuf_adds(sb, "`");
            }
            strbuf_adds(sb, "\n");
            cJSON_Delete(a);
        }
    }
    store_done(s);

    strbuf_adds(sb, "\n## Work items\n\n| item | title | status | verified | commit |\n"
                    "|---|---|---|---|---|\n");
    if ((rc = store_prepare(st, &s, q_items)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        strbuf_adds(sb, "| ");
        cell(sb, (const char *)sqlite3_column_text(s, 0));
        strbuf_adds(sb, " | ");
        cell(sb, (const char *)sqlite3_column_text(s, 1));
        strbuf_addf(sb, " | %s | %s | %.12s |\n", sqlite3_column_text(s, 2),
                    sqlite3_column_type(s, 3) == SQLITE_NULL ? "-"
                    : sqlite3_column_int(s, 3)               ? "yes"
                                                             : "**UNVERIFIED**",
                    sqlite3_column_text(s, 4));
    }
    store_done(s);

    strbuf_adds(sb, "\n## Gates\n\n| item | gate | result | failure | tests |\n"
                    "|---|---|---|---|---|\n");
    if ((rc = store_prepare(st, &s, q_gates)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        char tests[64] = "-";
        if (sqlite3_column_type(s, 5) != SQLITE_NULL)
            snprintf(tests, sizeof(tests), "%d passed, %d failed", sqlite3_column_int(s, 5),
                     sqlite3_column_int(s, 6));
        strbuf_adds(sb, "| ");
        cell(sb, (const char *)sqlite3_column_text(s, 0));
        strbuf_adds(sb, " | ");
        cell(sb, (const char *)sqlite3_column_text(s, 1));
        strbuf_addf(sb, " | %s (exit %d) | %s | %s |\n",
                    sqlite3_column_int(s, 2) ? "pass" : "fail", sqlite3_column_int(s, 3),
                    *sqlite3_column_text(s, 4) ? (const char *)sqlite3_column_text(s, 4) : "-",
                    tests);
    }
    store_done(s);

    strbuf_adds(sb, "\n## Review (advisory)\n\n");
    if ((rc = store_prepare(st, &s, q_review)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    {
        int any = 0;
        while (sqlite3_step(s) == SQLITE_ROW) {
            const char *kind = (const char *)sqlite3_column_text(s, 1);
            any = 1;
            if (!strcmp(kind, "review_verdict"))
                strbuf_addf(sb, "- %s: verdict **%s**\n", sqlite3_column_text(s, 0),
                            sqlite3_column_text(s, 4));
            else if (!strcmp(kind, "review_unavailable"))
                strbuf_addf(sb, "- %s: no review (the model could not be asked)\n",
                            sqlite3_column_text(s, 0));
            else {
                strbuf_addf(sb, "  - [%s] %s: ", sqlite3_column_text(s, 3),
                            sqlite3_column_text(s, 2));
                cell(sb, (const char *)sqlite3_column_text(s, 4));
                strbuf_adds(sb, "\n");
            }
        }
        if (!any)
            strbuf_adds(sb, "No review.\n");
    }
    store_done(s);

    if ((rc = store_prepare(st, &s, q_goal)) != 0)
        return rc;
    store_bind_text(s, 1, goal_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        strbuf_addf(sb, "\n## Cost\n\n%lld tokens, $%.4f\n\n_Published by goald._\n",
                    (long long)sqlite3_column_int64(s, 2), sqlite3_column_double(s, 3));
    store_done(s);
    return 0;
}

/* Every item done or skipped (and at least one)? */
static int all_finished(store *st, const char *goal_id, int *yes)
{
    static const char sql[] =
        "SELECT count(*), sum(status IN ('done', 'skipped')) FROM work_items WHERE goal_id = ?";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, goal_id);
    *yes = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) > 0 &&
           sqlite3_column_int(s, 0) == sqlite3_column_int(s, 1);
    store_done(s);
    return 0;
}

int stage_publish(struct job_ctx *j)
{
    const struct goal *g = j->goal;
    cJSON *pub = g->publish ? cJSON_Parse(g->publish) : NULL;
    int push = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pub, "push"));
    int want_pr = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pub, "pull_request"));
    const char *remote = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pub, "remote"));
    char head[VCS_OID_HEX] = "", remote_url[2048] = "";
    char *pr_url = NULL;
    long pr_number = 0;
    cJSON *p = NULL;
    int yes = 0, partial = 0, rc;

    if (!remote)
        remote = "origin";
    if ((rc = all_finished(j->st, g->id, &yes)) != 0) {
        rc = job_fail(j, "internal", "%s", err_last());
        goto out;
    }
    if (!yes && !g->partial) {
        rc = job_fail(j, "internal", "goal %s has unfinished items", g->id);
        goto out;
    }
    /* the completion rule: the must-pass gates once more on the final
     * branch head (not for a goal a human completed as partial) */
    if (!g->partial) {
        if ((rc = verify_goal_final(j, &partial)) != 0)
            goto out;
        if (partial) {
            static const char sql[] = "UPDATE goals SET partial = 1 WHERE id = ?";
            sqlite3_stmt *s;
            if ((rc = store_prepare(j->st, &s, sql)) == 0) {
                store_bind_text(s, 1, g->id);
                rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "partial");
                store_done(s);
            }
            if (rc) {
                rc = job_fail(j, "internal", "%s", err_last());
                goto out;
            }
        }
    }
    partial = partial || g->partial;
    if (g->repo && g->branch && g->worktree) {
        vcs_worktree *wt = NULL;
        if (vcs_worktree_open(&wt, g->repo, g->worktree) == 0) {
            vcs_worktree_head(head, wt);
            vcs_worktree_free(wt);
        }
    }
    if (g->repo && g->branch && push) {
        cJSON *m = cJSON_CreateObject();
        if (vcs_push(g->repo, remote, g->branch) != 0) {
            cJSON_Delete(m);
            rc = job_fail(j, "push", "%s", err_last());
            goto out;
        }
        vcs_remote_url(remote_url, sizeof(remote_url), g->repo, remote);
        cJSON_AddStringToObject(m, "remote", remote);
        verify_artifact(j, "branch", g->branch, NULL, head[0] ? head : NULL,
                        remote_url[0] ? remote_url : NULL, m);
        store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.pushed", m, NULL);
        cJSON_Delete(m);
    }
    fault_point("publish.after_push");
    if (g->repo && g->branch && want_pr) {
        struct vcs_forge f = {0};
        struct vcs_pr pr = {0};
        strbuf body;
        char title[300];
        if (!push) {
            rc = job_fail(j, "config", "publish.pull_request needs publish.push");
            goto out;
        }
        strbuf_init(&body, 1 << 20);
        publish_body(&body, j->st, g->id);
        snprintf(title, sizeof(title), "%s%s", partial ? "[partial] " : "", g->title);
        rc = vcs_forge_from_config(&f, remote_url[0] ? remote_url : NULL);
        if (rc == 0)
            rc = vcs_forge_pr_ensure(&pr, &f, title, g->branch,
                                     g->base_branch ? g->base_branch : "main", strbuf_cstr(&body));
        strbuf_release(&body);
        vcs_forge_release(&f);
        if (rc) {
            /* 401/403: class auth, no retry, one escalation naming the
             * forge and the variable; a rate limit that resets later than
             * forge.retry_max_wait_s: the goal's next attempt waits for it */
            const char *cls = !strcmp(pr.failure.cls, "auth") ? "auth" : "forge";
            if (pr.failure.wait_ms > 0)
                j->retry_not_before_ms = time_now_ms() + pr.failure.wait_ms;
            vcs_pr_release(&pr);
            rc = job_fail(j, cls, "%s", err_last());
            goto out;
        }
        {
            char ref[32];
            cJSON *m = cJSON_CreateObject();
            snprintf(ref, sizeof(ref), "#%ld", pr.number);
            cJSON_AddNumberToObject(m, "number", (double)pr.number);
            cJSON_AddBoolToObject(m, "created", pr.created);
            verify_artifact(j, "pull_request", ref, NULL, NULL, pr.url, m);
            store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.pull_request", m, NULL);
            cJSON_Delete(m);
        }
        pr_number = pr.number;
        pr_url = pr.url ? strdup(pr.url) : NULL;
        vcs_pr_release(&pr);
    }

    fault_point("publish.after_pull_request");
    /* the goal is complete, with its event, in one transaction */
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "title", g->title);
    if (g->branch)
        cJSON_AddStringToObject(p, "branch", g->branch);
    if (head[0])
        cJSON_AddStringToObject(p, "head", head);
    if (pr_url) {
        cJSON_AddStringToObject(p, "pull_request", pr_url);
        cJSON_AddNumberToObject(p, "pull_request_number", (double)pr_number);
    }
    cJSON_AddBoolToObject(p, "partial", partial);
    if ((rc = transition_apply(j->st, ENTITY_GOAL, g->id, "completed", NULL, p)) != 0) {
        rc = job_fail(j, "internal", "%s", err_last());
        goto out;
    }
    strbuf_addf(&j->summary, "goal completed%s%s", pr_url ? ": " : "", pr_url ? pr_url : "");

    /* notify: an event always (goal.completed), a webhook when configured */
    if (config_str(CFG_NOTIFY_WEBHOOK_URL)) {
        char *text;
        int sent = 0;
        cJSON_AddStringToObject(p, "event", "goal.completed");
        cJSON_AddStringToObject(p, "goal_id", g->id);
        text = cJSON_PrintUnformatted(p);
        if (vcs_webhook_post(&sent, config_str(CFG_NOTIFY_WEBHOOK_URL), text) != 0) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "error", err_last());
            store_event_add(j->st, g->id, NULL, j->claim.run_id, "notify.failed", e, NULL);
            cJSON_Delete(e);
        } else {
            store_event_add(j->st, g->id, NULL, j->claim.run_id, "notify.sent", NULL, NULL);
        }
        cJSON_free(text);
    }
    /* the worktree goes; the branch stays */
    if (g->repo && g->worktree && vcs_worktree_remove(g->repo, g->worktree) != 0)
        log_warn("goal %.8s: worktree %s not removed: %s", g->id, g->worktree, err_last());
out:
    free(pr_url);
    cJSON_Delete(p);
    cJSON_Delete(pub);
    return rc;
}
