/*
 * verify.c - stages 5 and 6 for one work item: deterministic gates, the
 * baseline check of a failing gate, the advisory LLM review, evaluation
 * with evidence, and the item's commit.
 *
 * Order matters: no model opinion is asked before every must-pass gate
 * has passed (or failed only in ways not blamed on the item), and the
 * review can only add findings, never change a gate's verdict.
 */
#include "lifecycle/verify.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "lifecycle/transitions.h"
#include "lifecycle/workspace.h"
#include "store/event.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/export.h"
#include "vcs/worktree.h"

#define REVIEW_DIFF_MAX (200 * 1024)

/* Classify a failed must-pass gate: flaky (passes when re-run),
 * pre-existing (fails on the base commit too) or introduced. */
static void classify(struct job_ctx *j, struct workspace *ws, const struct gates_ctx *gc,
                     const struct gate_spec *g, struct gate_result *r)
{
    struct gate_result again, base;
    char dir[4096], bdir[4300];

    snprintf(r->classification, sizeof(r->classification), "introduced");
    if (gates_run(gc, g, ws->root, &again) == 0) {
        if (again.passed) {
            snprintf(r->classification, sizeof(r->classification), "flaky");
            gate_result_release(&again);
            return;
        }
        gate_result_release(&again);
    }
    if (!ws->wt || !j->goal->repo || workspace_goal_dir(dir, sizeof(dir), j) != 0)
        return;
    snprintf(bdir, sizeof(bdir), "%s/baseline-%s", dir, j->claim.run_id);
    fs_remove_tree(bdir);
    if (vcs_export(j->goal->repo, j->goal->base_branch ? j->goal->base_branch : "HEAD", bdir) ==
            0 &&
        gates_run(NULL, g, bdir, &base) == 0) {
        if (!base.passed)
            snprintf(r->classification, sizeof(r->classification), "pre-existing");
        gate_result_release(&base);
    }
    fs_remove_tree(bdir);
}

static int add_decision(struct job_ctx *j, const char *kind, const char *aspect,
                        const char *severity, const char *note, const cJSON *data)
{
    static const char sql[] =
        "INSERT INTO decisions(goal_id, item_id, run_id, kind, aspect, severity, note, data,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *text = data ? cJSON_PrintUnformatted(data) : NULL;
    int rc = store_prepare(j->st, &s, sql);

    if (rc == 0) {
        store_bind_text(s, 1, j->goal->id);
        store_bind_text(s, 2, j->item->id);
        store_bind_text(s, 3, j->claim.run_id);
        store_bind_text(s, 4, kind);
        store_bind_text(s, 5, aspect);
        store_bind_text(s, 6, severity);
        store_bind_text(s, 7, note);
        store_bind_text(s, 8, text ? text : "{}");
        sqlite3_bind_int64(s, 9, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "decision");
        store_done(s);
    }
    cJSON_free(text);
    return rc;
}

/* The advisory review: findings become decisions; a failed call is noted
 * and does not block. */
static void review(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    strbuf user, diff;
    cJSON *answer = NULL;
    const cJSON *f;
    int turns, rc;

    strbuf_init(&user, 1 << 20);
    strbuf_init(&diff, REVIEW_DIFF_MAX);
    if (ws->wt && vcs_diff_text(&diff, ws->wt) == ERR_TOOBIG)
        strbuf_adds(&diff, "\n[diff cut at 200 KiB]\n");
    strbuf_addf(&user, "Work item: %s\nSummary: %s\nDiff:\n%s\n", j->item->title,
                summary ? summary : "", diff.len ? strbuf_cstr(&diff) : "(no git diff)");
    /* the review has its own budget of turns, but its call still counts
     * among the run's model calls (runs.turns) */
    turns = j->usage.turns;
    j->usage.turns = 0;
    rc = job_ask_json(j, "review", prompt_review, strbuf_cstr(&user), schema_review, &answer);
    j->usage.turns += turns;
    if (rc != 0) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "error_class", j->error_class);
        add_decision(j, "review_unavailable", NULL, NULL, strbuf_cstr(&j->failure), d);
        cJSON_Delete(d);
        j->error_class[0] = '\0';
        strbuf_reset(&j->failure);
        goto out;
    }
    add_decision(j, "review_verdict", NULL, NULL,
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")), answer);
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(answer, "findings"))
    {
        add_decision(j, "review_finding",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "aspect")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "severity")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "note")), f);
    }
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(
            p, "verdict", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "verdict")));
        cJSON_AddNumberToObject(
            p, "findings", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(answer, "findings")));
        store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id, "review.completed", p,
                        NULL);
        cJSON_Delete(p);
    }
out:
    cJSON_Delete(answer);
    strbuf_release(&diff);
    strbuf_release(&user);
}

/* Did the item leave something behind?  A non-empty diff; for doc and
 * analysis items also a file its summary names; without git, a non-empty
 * work folder. */
static int has_artifact(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    int empty = 1;

    if (!ws->wt) {
        int found = 0;
        DIR *d = opendir(ws->root);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                found = 1;
        if (d)
            closedir(d);
        return found;
    }
    if (vcs_diff_is_empty(&empty, ws->wt) != 0)
        return 0;
    if (!empty)
        return 1;
    {
        /* a run that died after committing the item left its change on the
         * branch: that commit is the artifact */
        char sha[VCS_OID_HEX];
        if (vcs_commit_find_by_trailer(sha, ws->wt, j->goal->base_branch, VCS_TRAILER_ITEM,
                                       j->item->id) == 0)
            return 1;
    }
    if ((!strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")) && summary) {
        /* a path named in the summary that exists in the worktree */
        char word[512];
        const char *p = summary;
        while (*p) {
            size_t n = strcspn(p, " \t\n,;:()`'\"");
            if (n > 0 && n < sizeof(word) - 1) {
                char path[4700];
                memcpy(word, p, n);
                word[n] = '\0';
                snprintf(path, sizeof(path), "%s/%s", ws->root, word);
                if (strchr(word, '.') && !strstr(word, "..") && fs_exists(path) &&
                    !fs_is_dir(path))
                    return 1;
            }
            p += n ? n : 1;
        }
    }
    return 0;
}

static int insert_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                           const char *hash, const char *url, const cJSON *meta)
{
    static const char exists[] =
        "SELECT 1 FROM artifacts WHERE goal_id = ? AND type = ? AND ifnull(item_id, '') = ?"
        " AND ifnull(hash, '') = ifnull(?, '') AND ifnull(path, '') = ifnull(?, '')";
    static const char ins[] =
        "INSERT INTO artifacts(goal_id, item_id, run_id, type, ref, path, hash, url, meta,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s;
    char *mt = meta ? cJSON_PrintUnformatted(meta) : NULL;
    int rc, found = 0;

    /* once per item, type, hash and path: a re-run does not record twice */
    if ((rc = store_prepare(j->st, &s, exists)) != 0)
        goto out;
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, type);
    store_bind_text(s, 3, j->item ? j->item->id : "");
    store_bind_text(s, 4, hash);
    store_bind_text(s, 5, path);
    found = sqlite3_step(s) == SQLITE_ROW;
    store_done(s);
    if (found)
        goto out;
    if ((rc = store_prepare(j->st, &s, ins)) != 0)
        goto out;
    store_bind_text(s, 1, j->goal->id);
    store_bind_text(s, 2, j->item ? j->item->id : NULL);
    store_bind_text(s, 3, j->claim.run_id);
    store_bind_text(s, 4, type);
    store_bind_text(s, 5, ref);
    store_bind_text(s, 6, path);
    store_bind_text(s, 7, hash);
    store_bind_text(s, 8, url);
    store_bind_text(s, 9, mt ? mt : "{}");
    sqlite3_bind_int64(s, 10, time_now_ms());
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "artifact");
    store_done(s);
out:
    cJSON_free(mt);
    return rc;
}

int verify_artifact(struct job_ctx *j, const char *type, const char *ref, const char *path,
                    const char *hash, const char *url, const struct cJSON *meta)
{
    return insert_artifact(j, type, ref, path, hash, url, meta);
}

int verify_item(struct job_ctx *j, struct workspace *ws, const char *summary)
{
    struct gate_plan plan = {0};
    struct gate_result *results = NULL;
    struct gates_ctx gc = {j->st,           j->goal->id,    j->item->id,
                           j->claim.run_id, ws->git_common, ws->git_dir};
    char tree[64] = "", gates_line[1024] = "";
    cJSON *evidence = NULL, *crit = NULL;
    strbuf blame;
    int rc = 0, n_det = 0, blamed = 0, verified;

    strbuf_init(&blame, 1 << 20);
    /* in_progress -> verify, with the model's summary */
    {
        static const char sql[] = "UPDATE work_items SET summary = ? WHERE id = ?";
        sqlite3_stmt *s;
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "summary", summary ? summary : "");
        if ((rc = store_tx_begin(j->st)) != 0 || (rc = store_prepare(j->st, &s, sql)) != 0) {
            cJSON_Delete(p);
            goto internal;
        }
        store_bind_text(s, 1, summary);
        store_bind_text(s, 2, j->item->id);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "summary");
        store_done(s);
        if (rc == 0)
            rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "verify", "in_progress", p);
        cJSON_Delete(p);
        if (rc) {
            store_tx_rollback(j->st);
            goto internal;
        }
        if ((rc = store_tx_commit(j->st)) != 0)
            goto internal;
    }
    if ((rc = workspace_state(ws, tree, sizeof(tree))) != 0) {
        /* a change goald will not snapshot (a file over tools.max_file_mb) */
        rc = job_fail(j, rc == ERR_TOOBIG || rc == ERR_POLICY ? "policy" : "vcs", "%s: %s",
                      j->item->key, err_last());
        goto out;
    }

    /* 1. deterministic gates */
    if ((rc = gates_plan_parse(&plan, j->goal->verification)) != 0) {
        rc = job_fail(j, "config", "%s", err_last());
        goto out;
    }
    results = calloc(plan.n + 1, sizeof(*results));
    if (!results)
        abort();
    for (size_t i = 0; i < plan.n; i++) {
        size_t o = strlen(gates_line);
        if (gates_run(&gc, &plan.gates[i], ws->root, &results[i]) != 0) {
            rc = job_fail(j, "sandbox", "%s", err_last());
            goto out;
        }
        n_det++;
        if (!results[i].passed && results[i].must_pass)
            classify(j, ws, &gc, &plan.gates[i], &results[i]);
        if (!strcmp(results[i].classification, "introduced")) {
            size_t len = strlen(results[i].output_tail), from = len > 3000 ? len - 3000 : 0;
            while (from < len && ((unsigned char)results[i].output_tail[from] & 0xc0) == 0x80)
                from++;
            blamed++;
            strbuf_addf(&blame, "gate %s failed (exit %d%s):\n%s\n", results[i].name,
                        results[i].exit_code, results[i].timed_out ? ", timed out" : "",
                        results[i].output_tail + from);
        }
        snprintf(gates_line + o, sizeof(gates_line) - o, "%s%s=%s", o ? " " : "",
                 results[i].name,
                 results[i].passed ? "pass"
                 : results[i].classification[0] ? results[i].classification
                                                 : "fail");
        if ((rc = gates_store(&gc, &results[i], tree, NULL)) != 0)
            goto internal;
    }
    if (blamed) {
        rc = job_fail(j, "gate", "%s", strbuf_cstr(&blame));
        goto out;
    }

    /* 2. the review: advisory, only after the gates */
    review(j, ws, summary);

    /* 3. evaluation: an artifact, and evidence for each criterion */
    if (!has_artifact(j, ws, summary)) {
        rc = job_fail(j, "no_artifact", "the item left no change behind (no diff%s)",
                      !strcmp(j->item->type, "doc") || !strcmp(j->item->type, "analysis")
                          ? " and no file named in its summary"
                          : "");
        goto out;
    }
    /* 1: every must-pass gate passed (a flaky one on its re-run); 0: no
     * deterministic gate at all; -1 (stored as NULL): a must-pass gate
     * failed the same way on the base commit, so nothing proves the item */
    verified = n_det > 0;
    for (size_t i = 0; i < plan.n; i++)
        if (!results[i].passed && results[i].must_pass &&
            !strcmp(results[i].classification, "pre-existing"))
            verified = -1;
    crit = cJSON_Parse(j->goal->success_criteria ? j->goal->success_criteria : "[]");
    {
        const cJSON *c;
        cJSON_ArrayForEach(c, crit)
        {
            cJSON *e = cJSON_CreateObject(), *gs = cJSON_AddArrayToObject(e, "gates");
            cJSON_AddStringToObject(e, "criterion", cJSON_GetStringValue(c));
            for (size_t i = 0; i < plan.n; i++) {
                cJSON *g = cJSON_CreateObject();
                cJSON_AddStringToObject(g, "gate", results[i].name);
                cJSON_AddNumberToObject(g, "exit_code", results[i].exit_code);
                cJSON_AddBoolToObject(g, "passed", results[i].passed);
                cJSON_AddStringToObject(g, "classification", results[i].classification);
                cJSON_AddStringToObject(g, "output_hash", results[i].output_hash);
                cJSON_AddStringToObject(g, "tree_id", tree);
                cJSON_AddItemToArray(gs, g);
            }
            cJSON_AddBoolToObject(e, "unverified", verified == 0);
            if ((rc = add_decision(j, "evidence", NULL, NULL, cJSON_GetStringValue(c), e)) != 0) {
                cJSON_Delete(e);
                goto internal;
            }
            cJSON_Delete(e);
        }
    }

    /* 4. the item's commit (idempotent: found by its Work-Item-Id trailer) */
    {
        struct vcs_commit_result cr = {0};
        char *sha = NULL;
        if (ws->wt) {
            struct vcs_commit_msg msg;
            strbuf body;
            strbuf_init(&body, 1 << 20);
            strbuf_addf(&body, "%s\n\nEvidence: %s%s", summary ? summary : "",
                        gates_line[0] ? gates_line : "no deterministic gate",
                        verified == 0 ? " (UNVERIFIED)" : "");
            memset(&msg, 0, sizeof(msg));
            msg.title = j->item->title;
            msg.body = strbuf_cstr(&body);
            msg.goal_id = j->goal->id;
            msg.work_item_id = j->item->id;
            msg.gates = gates_line[0] ? gates_line : "none";
            rc = vcs_commit_item(&cr, ws->wt, j->goal->base_branch, &msg);
            strbuf_release(&body);
            if (rc) {
                vcs_commit_result_release(&cr);
                rc = rc == ERR_TOOBIG || rc == ERR_POLICY
                         ? job_fail(j, "policy", "%s: %s", j->item->key, err_last())
                         : job_fail(j, "vcs", "commit: %s", err_last());
                goto out;
            }
            if (cr.sha[0]) {
                cJSON *meta = cJSON_CreateObject();
                cJSON_AddBoolToObject(meta, "created", cr.created);
                cJSON_AddStringToObject(meta, "gates", gates_line);
                insert_artifact(j, "commit", j->goal->branch, NULL, cr.sha, NULL, meta);
                cJSON_Delete(meta);
                for (size_t i = 0; i < cr.nfiles; i++) {
                    cJSON *fm = cJSON_CreateObject();
                    char st[2] = {cr.files[i].status, '\0'};
                    cJSON_AddStringToObject(fm, "status", st);
                    cJSON_AddStringToObject(fm, "commit", cr.sha);
                    insert_artifact(j, "file", NULL, cr.files[i].path,
                                    cr.files[i].sha256[0] ? cr.files[i].sha256 : NULL, NULL, fm);
                    cJSON_Delete(fm);
                }
                sha = cr.sha;
            }
        }
        fault_point("verify.after_commit");
        for (size_t i = 0; i < plan.n; i++) {
            if (results[i].counts.format) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddStringToObject(m, "gate", results[i].name);
                cJSON_AddStringToObject(m, "format", results[i].counts.format);
                cJSON_AddNumberToObject(m, "passed", results[i].counts.passed);
                cJSON_AddNumberToObject(m, "failed", results[i].counts.failed);
                cJSON_AddNumberToObject(m, "skipped", results[i].counts.skipped);
                cJSON_AddNumberToObject(m, "total", results[i].counts.total);
                insert_artifact(j, "test_results", results[i].name, NULL,
                                results[i].output_hash, NULL, m);
                cJSON_Delete(m);
            }
        }

        /* 5. done, in one transaction with its evidence flags */
        {
            static const char sql[] = "UPDATE work_items SET verified = ?, commit_sha = ?"
                                      " WHERE id = ?";
            sqlite3_stmt *s;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddBoolToObject(p, "verified", verified == 1);
            cJSON_AddStringToObject(p, "gates", gates_line);
            if (sha)
                cJSON_AddStringToObject(p, "commit", sha);
            if ((rc = store_tx_begin(j->st)) == 0) {
                if ((rc = store_prepare(j->st, &s, sql)) == 0) {
                    if (verified < 0)
                        sqlite3_bind_null(s, 1);
                    else
                        sqlite3_bind_int(s, 1, verified);
                    store_bind_text(s, 2, sha);
                    store_bind_text(s, 3, j->item->id);
                    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "verified");
                    store_done(s);
                }
                if (rc == 0)
                    rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "done", "verify", p);
                if (rc == 0)
                    rc = plan_promote_ready(j->st, j->goal->id, NULL);
                if (rc == 0)
                    rc = store_tx_commit(j->st);
                else
                    store_tx_rollback(j->st);
            }
            cJSON_Delete(p);
        }
        vcs_commit_result_release(&cr);
        if (rc)
            goto internal;
    }

    /* publishing the goal, once every item is finished, is a unit of its
     * own (claim.c), so that a failed push is retried without redoing the
     * item */
    goto out;
internal:
    rc = job_fail(j, "internal", "verification: %s", err_last());
out:
    for (size_t i = 0; results && i < plan.n; i++)
        gate_result_release(&results[i]);
    free(results);
    gates_plan_release(&plan);
    cJSON_Delete(crit);
    cJSON_Delete(evidence);
    strbuf_release(&blame);
    return rc;
}
