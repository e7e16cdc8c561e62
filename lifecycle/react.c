/*
 * react.c - stage 4: one work item worked by a model calling tools in the
 * goal's worktree, until it calls complete (then verification), ask_human
 * (the item waits for a human) or a limit stops it.
 *
 * Every model call is preceded by the run limits and the goal budget
 * (control.h); every turn is logged (turn.started, turn.completed) and
 * fingerprinted, and K identical fingerprints in a row stop the run as
 * `stalled`.  Several tool calls in one message run in order.  A failed
 * run's changes are saved as a patch artifact and the worktree is reset,
 * so the next attempt starts from the branch head.
 *
 * The history keeps a byte-stable prefix for the providers' prompt caches:
 * the system prompt and the task come first and never change within a
 * run; nothing that changes per turn (turn counters, budgets, clocks) is
 * put into it.  Before each call it is compacted when it nears the
 * model's context window (compact.h); a context_length answer compacts it
 * once more and the same turn is retried.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/compact.h"
#include "lifecycle/context.h"
#include "lifecycle/escalate.h"
#include "lifecycle/prompts.h"
#include "lifecycle/stages.h"
#include "lifecycle/transitions.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "gates/gates.h"
#include "llm/llm.h"
#include "store/event.h"
#include "tools/tool.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_HISTORY 4096

struct exec_state {
    struct job_ctx *j;
    struct workspace *ws;
    int completed;
    int blocked;
    char *summary;
    char *question;
};

/* ---- the caller's tools: complete, ask_human, run_gates ---- */

static int hook(void *arg, struct tool_ctx *ctx, const char *name, const cJSON *args,
                struct tool_result *res)
{
    struct exec_state *x = arg;
    const cJSON *v;

    (void)ctx;
    if (!strcmp(name, "complete")) {
        v = cJSON_GetObjectItemCaseSensitive(args, "summary");
        if (!cJSON_IsString(v) || !v->valuestring[0])
            return tool_fail(res, TOOL_VALIDATION, "complete: summary: expected a non-empty "
                                                   "string");
        free(x->summary);
        x->summary = strdup(v->valuestring);
        x->completed = 1;
        res->ok = 1;
        strbuf_adds(&res->output, "Recorded. The item goes to verification: the gates run "
                                  "now. Do not call more tools.");
        return 0;
    }
    if (!strcmp(name, "ask_human")) {
        v = cJSON_GetObjectItemCaseSensitive(args, "question");
        if (!cJSON_IsString(v) || !v->valuestring[0])
            return tool_fail(res, TOOL_VALIDATION, "ask_human: question: expected a non-empty "
                                                   "string");
        free(x->question);
        x->question = strdup(v->valuestring);
        x->blocked = 1;
        res->ok = 1;
        strbuf_adds(&res->output, "Question recorded. The item waits for a human answer.");
        return 0;
    }
    if (!strcmp(name, "run_gates")) {
        struct gate_plan plan;
        char tree[64] = ""; /* the snapshot, stored once for all the gates */
        int all = 1;

        if (verify_plan(x->j, &plan) != 0)
            return tool_fail(res, TOOL_VALIDATION, "run_gates: %s", err_last());
        if (plan.n == 0)
            strbuf_adds(&res->output, "This goal has no verification gates.\n");
        for (size_t i = 0; i < plan.n; i++) {
            struct gate_result r;
            size_t tail_from;
            /* on a throw-away copy: what the gate changes is not committed */
            if (verify_gate_run(x->j, x->ws, &plan.gates[i], tree, &r) != 0) {
                gates_plan_release(&plan);
                return tool_fail(res, TOOL_POLICY, "run_gates: %s", err_last());
            }
            if (!r.passed && r.must_pass)
                all = 0;
            strbuf_addf(&res->output, "gate %s (%s): %s, exit %d%s, %lld ms\n", r.name,
                        r.command, r.passed ? "PASS" : "FAIL", r.exit_code,
                        r.timed_out ? " (timed out)" : "", (long long)r.duration_ms);
            if (!r.passed) {
                size_t n = strlen(r.output_tail);
                tail_from = n > 4000 ? n - 4000 : 0;
                while (tail_from < n && ((unsigned char)r.output_tail[tail_from] & 0xc0) == 0x80)
                    tail_from++;
                strbuf_addf(&res->output, "--- output (last %zu bytes) ---\n%s\n---\n",
                            n - tail_from, r.output_tail + tail_from);
            }
            gate_result_release(&r);
        }
        gates_plan_release(&plan);
        res->ok = 1;
        res->exit_code = all ? 0 : 1;
        return 0;
    }
    return tool_fail(res, TOOL_VALIDATION, "%s: not a hooked tool", name);
}

/* ---- the prompt ---- */

static void add_list(strbuf *sb, const char *title, const char *json)
{
    cJSON *arr = json ? cJSON_Parse(json) : NULL;
    const cJSON *it;

    if (cJSON_GetArraySize(arr) > 0) {
        strbuf_addf(sb, "%s:\n", title);
        cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it)) strbuf_addf(sb, "- %s\n",
                                                                        it->valuestring);
    }
    cJSON_Delete(arr);
}

/* The last failure of this item and the failing gates it left, so that a
 * retry starts from what went wrong. */
static void add_feedback(strbuf *sb, struct job_ctx *j)
{
    static const char q_run[] =
        "SELECT error_class, failure_reason FROM runs WHERE item_id = ? AND id <> ?"
        " AND status <> 'success' AND status <> 'running' ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1";
    static const char q_gates[] =
        "SELECT name, exit_code, output_tail FROM gate_results WHERE item_id = ? AND passed = 0"
        " AND ifnull(classification, 'introduced') = 'introduced' AND run_id = (SELECT run_id"
        " FROM gate_results WHERE item_id = ? ORDER BY id DESC LIMIT 1) ORDER BY id";
    sqlite3_stmt *s;

    if (store_prepare(j->st, &s, q_run) == 0) {
        store_bind_text(s, 1, j->item->id);
        store_bind_text(s, 2, j->claim.run_id);
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 1))
            strbuf_addf(sb, "\nThe previous attempt failed (%s): %s\n",
                        sqlite3_column_text(s, 0) ? (const char *)sqlite3_column_text(s, 0) : "",
                        sqlite3_column_text(s, 1));
        store_done(s);
    }
    if (store_prepare(j->st, &s, q_gates) == 0) {
        store_bind_text(s, 1, j->item->id);
        store_bind_text(s, 2, j->item->id);
        while (sqlite3_step(s) == SQLITE_ROW) {
            const char *tail = (const char *)sqlite3_column_text(s, 2);
            size_t n = tail ? strlen(tail) : 0, from = n > 6000 ? n - 6000 : 0;
            while (from < n && ((unsigned char)tail[from] & 0xc0) == 0x80)
                from++;
            strbuf_addf(sb, "\nGate %s failed (exit %d) after the last attempt. Its output:\n%s\n",
                        sqlite3_column_text(s, 0), sqlite3_column_int(s, 1),
                        tail ? tail + from : "");
        }
        store_done(s);
    }
}

static void build_user(strbuf *sb, struct job_ctx *j)
{
    const struct goal *g = j->goal;
    const struct work_item *wi = j->item;
    char *pack = NULL;

    strbuf_addf(sb, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf(sb, "%s\n", g->description);
    add_list(sb, "\nSuccess criteria", g->success_criteria);
    strbuf_addf(sb, "\nYour work item %s: %s (%s, effort %s)\n", wi->key, wi->title, wi->type,
                wi->effort);
    if (wi->description && *wi->description)
        strbuf_addf(sb, "%s\n", wi->description);
    if (g->verification && strcmp(g->verification, "[]") != 0)
        strbuf_addf(sb, "\nVerification gates (run_gates runs them): %s\n", g->verification);
    else
        strbuf_adds(sb, "\nThis goal has no deterministic gate: check your work with bash.\n");
    if (wi->strategy)
        strbuf_addf(sb, "\nStrategy to follow (earlier ones failed): %s\n", wi->strategy);
    if (wi->human_input)
        strbuf_addf(sb, "\nA human answered: %s\n", wi->human_input);
    if (context_pack_latest(j->st, wi->id, &pack) == 0 && pack)
        strbuf_addf(sb, "\nWhere earlier runs of this item left off (context pack):\n%s\n", pack);
    free(pack);
    add_feedback(sb, j);
}

/* ---- the loop ---- */

static const char *const *allowed_list(const char *json, cJSON **keep)
{
    static const char *list[32];
    const cJSON *it;
    int n = 0;

    *keep = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsArray(*keep))
        return NULL;
    cJSON_ArrayForEach(it, *keep) if (cJSON_IsString(it) && n < 31) list[n++] = it->valuestring;
    list[n] = NULL;
    return list;
}

struct history {
    struct llm_message *m;
    size_t n, cap;
};

static struct llm_message *history_push(struct history *h)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 32;
        h->m = realloc(h->m, h->cap * sizeof(*h->m));
        if (!h->m)
            abort();
    }
    memset(&h->m[h->n], 0, sizeof(h->m[0]));
    return &h->m[h->n++];
}

static void turn_event(struct job_ctx *j, const char *type, int turn, const struct llm_response *r,
                       size_t calls)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddNumberToObject(p, "turn", turn);
    if (r) {
        cJSON_AddNumberToObject(p, "tokens_in", (double)r->usage.input);
        cJSON_AddNumberToObject(p, "tokens_out", (double)r->usage.output);
        cJSON_AddNumberToObject(p, "latency_ms", (double)r->latency_ms);
        cJSON_AddNumberToObject(p, "tool_calls", (double)calls);
    }
    store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id, type, p, NULL);
    cJSON_Delete(p);
}

static int finish_blocked(struct job_ctx *j, const char *question)
{
    static const char sql[] = "UPDATE work_items SET question = ?, updated_at = ? WHERE id = ?";
    sqlite3_stmt *s;
    cJSON *p = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(p, "question", question);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_prepare(j->st, &s, sql)) != 0)
        goto fail;
    store_bind_text(s, 1, question);
    sqlite3_bind_int64(s, 2, time_now_ms());
    store_bind_text(s, 3, j->item->id);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "ask_human");
    store_done(s);
    if (rc || (rc = transition_apply(j->st, ENTITY_ITEM, j->item->id, "blocked", "in_progress", p)))
        goto fail;
    if ((rc = store_tx_commit(j->st)) != 0)
        goto out;
    free(j->item->question);
    j->item->question = strdup(question);
    rc = escalate_open(j, "ask_human");
    goto out;
fail:
    store_tx_rollback(j->st);
out:
    cJSON_Delete(p);
    return rc;
}

int stage_execute(struct job_ctx *j)
{
    struct exec_state x;
    struct workspace ws;
    struct history h = {0};
    struct tool_ctx tctx;
    struct llm_tool_def *defs = NULL;
    struct progress_detector pd;
    cJSON *schemas = NULL, *allowed_keep = NULL, *spec = NULL;
    const char *const *allowed;
    const char **protected_paths = NULL;
    strbuf user;
    char **params = NULL;
    size_t ndefs = 0;
    int rc = 0, turn = 0;

    memset(&x, 0, sizeof(x));
    x.j = j;
    x.ws = &ws;
    strbuf_init(&user, 4 << 20);
    if (workspace_open(&ws, j) != 0) {
        rc = job_fail(j, "workspace", "%s", err_last());
        strbuf_release(&user);
        return rc;
    }
    allowed = allowed_list(j->goal->allowed_actions, &allowed_keep);
    schemas = tool_schemas(allowed);
    ndefs = (size_t)cJSON_GetArraySize(schemas);
    defs = calloc(ndefs + 1, sizeof(*defs));
    params = calloc(ndefs + 1, sizeof(*params));
    if (!defs || !params)
        abort();
    for (size_t i = 0; i < ndefs; i++) {
        const cJSON *t = cJSON_GetArrayItem(schemas, (int)i);
        defs[i].name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
        defs[i].description = cJSON_GetObjectItemCaseSensitive(t, "description")->valuestring;
        params[i] = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t, "parameters"));
        defs[i].parameters_json = params[i];
    }
    memset(&tctx, 0, sizeof(tctx));
    tctx.root = ws.root;
    tctx.git_common = ws.git_common;
    tctx.git_dir = ws.git_dir;
    tctx.allowed = allowed;
    tctx.st = j->st;
    tctx.goal_id = j->goal->id;
    tctx.item_id = j->item->id;
    tctx.run_id = j->claim.run_id;
    tctx.hook = hook;
    tctx.hook_arg = &x;
    /* the goal's protected_paths: write and edit refuse them */
    spec = j->goal->spec ? cJSON_Parse(j->goal->spec) : NULL;
    {
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(spec, "protected_paths"), *it;
        size_t n = 0;
        protected_paths = calloc((size_t)cJSON_GetArraySize(pp) + 1, sizeof(*protected_paths));
        if (!protected_paths)
            abort();
        cJSON_ArrayForEach(it, pp) if (cJSON_IsString(it)) protected_paths[n++] = it->valuestring;
        tctx.protected_paths = protected_paths;
    }

    build_user(&user, j);
    llm_message_init(history_push(&h), LLM_SYSTEM, prompt_execute);
    llm_message_init(history_push(&h), LLM_USER, strbuf_cstr(&user));
    progress_init(&pd, 0);

    while (!x.completed && !x.blocked) {
        struct llm_request req;
        struct llm_response resp;
        struct llm_error err;
        const char *limit = NULL;
        char reply_hash[HASH_HEX_SIZE], fp[HASH_HEX_SIZE], tree[64] = "";
        const char *last_error = NULL;
        strbuf sig;
        int index = j->model_index, crc;

        if (job_check_live(j) != 0) {
            rc = ERR_FAIL;
            break;
        }
        if (control_check_run(j->st, j->goal->id, j->item->id, j->claim.run_id, &j->usage,
                              time_mono_ms(), &limit) != 0) {
            rc = job_fail(j, "limit", "%s", err_last());
            break;
        }
        if (control_check_budget(j->st, j->goal->id, j->item->id, j->claim.run_id,
                                 j->last_call_tokens, j->last_call_cost, &limit) != 0) {
            rc = job_fail(j, "budget", "%s", err_last());
            break;
        }
        fault_point("execute.turn");
        job_renew_lease(j);
        turn++;
        turn_event(j, "turn.started", turn, NULL, 0);
        memset(&req, 0, sizeof(req));
        req.stage = "execute";
        req.run_id = j->claim.run_id;
        req.goal_id = j->goal->id;
        req.item_id = j->item->id;
        req.messages = h.m;
        req.nmessages = h.n;
        req.tools = defs;
        req.ntools = ndefs;
        {
            int changed = 0, retried = 0;
            if (compact_history(j, h.m, &h.n, defs, ndefs, turn, 0, &changed) != 0)
                log_warn("%s: context.compacted event: %s", j->item->key, err_last());
            for (;;) {
                req.messages = h.m;
                req.nmessages = h.n;
                crc = llm_chat_chain(j->llm, j->model_index, &req, &resp, &err, &index);
                j->model_index = index;
                if (!crc || err.cls != LLM_ERR_CONTEXT_LENGTH || retried)
                    break;
                /* the provider counted more than the estimate: compact
                 * once more and retry the same turn */
                retried = 1;
                if (compact_history(j, h.m, &h.n, defs, ndefs, turn, 1, &changed) != 0)
                    log_warn("%s: context.compacted event: %s", j->item->key, err_last());
                if (!changed)
                    break;
                llm_response_release(&resp);
                llm_error_release(&err);
            }
        }
        j->usage.turns++;
        if (crc) {
            job_breaker_failed(j, llm_error_class_name(err.cls), err.message);
            rc = job_fail(j, llm_error_class_name(err.cls), "execute: %s",
                          err.message ? err.message : "model call failed");
            llm_response_release(&resp);
            llm_error_release(&err);
            break;
        }
        breaker_record(j->st, NULL, j->claim.run_id, time_now_ms());
        j->usage.tokens += resp.usage.input + resp.usage.output;
        j->last_call_tokens = resp.usage.input + resp.usage.output;
        j->last_call_cost = resp.cost_usd;
        turn_event(j, "turn.completed", turn, &resp, resp.message.ncalls);
        hash_sha256_hex(reply_hash, resp.message.content ? resp.message.content : "",
                        resp.message.content ? strlen(resp.message.content) : 0);

        /* the assistant message joins the history (moved, not copied) */
        *history_push(&h) = resp.message;
        memset(&resp.message, 0, sizeof(resp.message));
        llm_response_release(&resp);
        llm_error_release(&err);

        strbuf_init(&sig, 1 << 20);
        {
            size_t ai = h.n - 1, ncalls = h.m[ai].ncalls;
            if (ncalls == 0)
                llm_message_init(history_push(&h), LLM_USER,
                                 "Use the tools to do the work. Call complete when the item is "
                                 "done, or ask_human if you need a decision.");
            for (size_t i = 0; i < ncalls && h.n < MAX_HISTORY; i++) {
                /* copy the call first: pushing a result may move the history */
                const struct llm_tool_call *call = &h.m[ai].calls[i];
                char *name = strdup(call->name ? call->name : "");
                char *id = strdup(call->id ? call->id : "");
                /* moved out of the history, not copied: a write's content
                 * is held once; a compact copy comes back */
                char *args = h.m[ai].calls[i].arguments;
                struct tool_result res;

                h.m[ai].calls[i].arguments = NULL;
                if (!args && !(args = strdup("{}")))
                    abort();
                if (!name || !id)
                    abort();
                strbuf_addf(&sig, "%s:%.4096s:%zu;", name, args, strlen(args));
                tool_call_take(&tctx, name, &args, &res);
                /* the history holds it again (the compact copy for a big one) */
                h.m[ai].calls[i].arguments = args;
                args = NULL;
                if (!res.ok)
                    last_error = tool_class_name(res.error_class);
                llm_message_tool_result(history_push(&h), id, strbuf_cstr(&res.output), !res.ok);
                tool_result_release(&res);
                free(name);
                free(id);
                free(args);
                if (x.completed || x.blocked)
                    break;
            }
        }
        if (ws.wt && (crc = workspace_state(&ws, tree, sizeof(tree))) != 0) {
            /* a change goald will not snapshot (a file over
             * tools.max_file_mb): this attempt ends here, and the reset
             * below removes the change so the retry starts clean */
            strbuf_release(&sig);
            x.completed = x.blocked = 0;
            rc = job_fail(j, crc == ERR_TOOBIG || crc == ERR_POLICY ? "policy" : "vcs", "%s: %s",
                          j->item->key, err_last());
            break;
        }
        progress_fingerprint(fp, tree, strbuf_cstr(&sig), last_error, reply_hash);
        strbuf_release(&sig);
        if (!x.completed && !x.blocked && progress_observe(&pd, fp)) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "task_id", j->item->id);
            cJSON_AddStringToObject(p, "fingerprint", fp);
            cJSON_AddNumberToObject(p, "repeats", pd.same);
            cJSON_AddNumberToObject(p, "threshold", pd.k);
            store_event_add(j->st, j->goal->id, j->item->id, j->claim.run_id, "progress.stalled",
                            p, NULL);
            cJSON_Delete(p);
            rc = job_fail(j, "stalled", "no progress: %d identical turns in a row", pd.same);
            break;
        }
    }

    if (x.completed) {
        strbuf_adds(&j->summary, x.summary);
        rc = verify_item(j, &ws, x.summary);
    } else if (x.blocked) {
        strbuf_addf(&j->summary, "asked a human: %s", x.question);
        if ((rc = finish_blocked(j, x.question)) != 0)
            rc = job_fail(j, "internal", "%s", err_last());
    }
    if (rc)
        workspace_discard(&ws, j); /* the next attempt starts from the branch head */

    workspace_close(&ws);
    for (size_t i = 0; i < ndefs; i++)
        cJSON_free(params[i]);
    free(params);
    free(defs);
    cJSON_Delete(schemas);
    cJSON_Delete(allowed_keep);
    cJSON_Delete(spec);
    free(protected_paths);
    llm_messages_free(h.m, h.n);
    free(x.summary);
    free(x.question);
    strbuf_release(&user);
    return rc;
}
