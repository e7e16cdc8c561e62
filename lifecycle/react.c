/*
 * react.c - the ReAct loop of the execute stage (execute.c): a model
 * calling tools in the goal's worktree, until it calls complete (then the
 * item goes to verification), ask_human (the item waits for a human) or a
 * limit stops it.
 *
 * Every model call is preceded by the run limits and the goal budget
 * (control.h); every turn is logged (turn.started, turn.completed) and
 * fingerprinted, and K identical fingerprints in a row stop the run as
 * `stalled`.  Several tool calls in one message run in order.
 *
 * The history keeps a byte-stable prefix for the providers' prompt caches:
 * the system prompt and the task come first and never change within a
 * run; nothing that changes per turn (turn counters, budgets, clocks) is
 * put into it.  Before each call it is compacted when it nears the
 * model's context window (compact.h); a context_length answer compacts it
 * once more and the same turn is retried.
 */
#include "lifecycle/react.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/compact.h"
#include "lifecycle/control.h"
#include "lifecycle/job.h"
#include "lifecycle/prompts.h"
#include "lifecycle/run_at_start.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "gates/gates.h"
#include "llm/llm.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "tools/tool.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

#define MAX_HISTORY 4096

struct exec_state {
    struct job_ctx *j;
    struct workspace *ws;
    struct react_outcome *out;
};

/* ---- the caller's tools: complete, ask_human, run_gates ---- */

/* A non-empty string argument key of args, or NULL. */
static const char *arg_text(const cJSON *args, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

struct gates_report {
    strbuf *out;
    int all; /* every must-pass gate passed */
    struct job_ctx *j;
    const char *base_tree; /* the item's start, "" when unknown */
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The test cases of r that its cached baseline on the item's start does
 * not have (a model sees that its new tests were collected); nothing when
 * goald has not run the gate there or the formats differ. */
static void gate_new_cases(strbuf *out, const struct gates_report *gr, const struct gate_result *r)
{
    char *format = NULL, *json = NULL;
    int found = 0, passed = 0;
    cJSON *base = NULL;
    const char **ids = NULL;
    size_t nb = 0, added = 0;
    const cJSON *it;

    if (!gr->base_tree[0] || !r->cases.format ||
        store_gate_baseline_get(gr->j->st,
                                &(struct store_gate_baseline){.goal_id = gr->j->goal->id,
                                                              .gate = r->name,
                                                              .command = r->command,
                                                              .baseline = gr->base_tree},
                                &found, &passed, &format, &json) != 0 ||
        !found || !format || strcmp(format, r->cases.format))
        goto out;
    base = cJSON_Parse(json ? json : "[]");
    ids = xcalloc((size_t)cJSON_GetArraySize(base) + 1, sizeof(*ids));
    cJSON_ArrayForEach(it, base)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetArrayItem(it, 0));
        if (id)
            ids[nb++] = id;
    }
    qsort(ids, nb, sizeof(*ids), cmp_str);
    for (size_t i = 0; i < r->cases.n; i++) {
        const char *id = r->cases.v[i].id;
        if (nb && bsearch(&id, ids, nb, sizeof(*ids), cmp_str))
            continue;
        if (++added <= 20)
            strbuf_addf_cut(out, "%s%s", added == 1 ? "  new since the item's start: " : ", ", id);
    }
    if (added > 20)
        strbuf_addf_cut(out, " (+%zu more)", added - 20);
    if (added)
        strbuf_adds_cut(out, "\n");
    else
        strbuf_addf_cut(out, "  no test case is new since the item's start (%zu cases then)\n", nb);
out:
    err_clear();
    free(ids);
    cJSON_Delete(base);
    free(format);
    free(json);
}

/* What a passing gate ran, so that the model sees its tests collected:
 * the counts parsed from its output ("3 passed, 1 skipped (tap)"), else
 * the last line it printed. */
static void gate_pass_summary(strbuf *out, const struct gate_result *r)
{
    const struct test_counts *c = &r->counts;
    const char *t = r->output_tail ? r->output_tail : "";
    size_t n = strlen(t), from;

    if (c->passed >= 0 || c->failed >= 0 || c->skipped >= 0) {
        strbuf_addf_cut(out, "  %d passed", c->passed > 0 ? c->passed : 0);
        if (c->failed > 0)
            strbuf_addf_cut(out, ", %d failed", c->failed);
        if (c->skipped > 0)
            strbuf_addf_cut(out, ", %d skipped", c->skipped);
        strbuf_addf_cut(out, " (%s)\n", c->format ? c->format : "parsed");
        return;
    }
    while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
        n--;
    for (from = n; from && t[from - 1] != '\n';)
        from--;
    if (n > from)
        strbuf_addf_cut(out, "  last line: %.*s\n", n - from > 300 ? 300 : (int)(n - from),
                        t + from);
}

/* One gate's line (and its failing output's last 4000 bytes) for the
 * model. */
static int gate_reported(void *arg, size_t i, struct gate_result *r)
{
    struct gates_report *gr = arg;

    (void)i;
    if (!r->passed && r->must_pass)
        gr->all = 0;
    /* a tool result for the model: cut at its cap like any other */
    /* a pass that was the tree's first run is not run again: it says so */
    strbuf_addf_cut(gr->out, "gate %s (%s): %s, exit %d%s, %lld ms%s%s%s\n", r->name, r->command,
                    r->passed ? "PASS" : "FAIL", r->exit_code, r->timed_out ? " (timed out)" : "",
                    (long long)r->duration_ms, r->note[0] ? " (" : "", r->note,
                    r->note[0] ? ")" : "");
    if (r->passed) {
        gate_pass_summary(gr->out, r);
        gate_new_cases(gr->out, gr, r);
    }
    if (!r->passed) {
        size_t n = strlen(r->output_tail);
        size_t from = utf8_cut_forward(r->output_tail, n > 4000 ? n - 4000 : 0, n);
        strbuf_addf_cut(gr->out, "--- output (last %zu bytes) ---\n%s\n---\n", n - from,
                        r->output_tail + from);
    }
    gate_result_release(r);
    return 0;
}

/* run_gates: the goal's gates on a throw-away copy of the worktree (what
 * a gate changes is not committed), through verification's gate loop. */
static int run_gates(struct exec_state *x, struct tool_result *res)
{
    struct gate_plan plan;
    char base[VCS_OID_HEX], base_tree[VCS_OID_HEX] = "";
    struct gates_report gr = {&res->output, 1, x->j, base_tree};
    char tree[64] = ""; /* the snapshot, stored once for all the gates */

    if (verify_plan(x->j, &plan) != 0)
        return tool_fail(res, TOOL_VALIDATION, "run_gates: %s", err_last());
    if (plan.n == 0)
        strbuf_adds_cut(&res->output, "This goal has no verification gates.\n");
    /* the item's start, to name the test cases added since */
    if (x->ws->wt && x->j->repo && vcs_worktree_head(base, x->ws->wt) == 0 &&
        vcs_rev_tree(base_tree, x->j->repo, base) != 0)
        base_tree[0] = '\0';
    err_clear();
    if (verify_gates_each(x->j, x->ws, &plan, tree, VERIFY_BY_MODEL, gate_reported, &gr) != 0) {
        gates_plan_release(&plan);
        return tool_fail(res, TOOL_POLICY, "run_gates: %s", err_last());
    }
    gates_plan_release(&plan);
    res->ok = 1;
    res->exit_code = gr.all ? 0 : 1;
    return 0;
}

/* A control tool (complete, ask_human): its key argument, a non-empty
 * string, replaces *field, capped at UTF8_TEXT_MAX bytes with a note
 * (it becomes an event, a column, a commit message); *flag is set and
 * res answers with reply. */
static int hook_record(struct tool_result *res, const cJSON *args, const char *tool,
                       const char *key, char **field, int *flag, const char *reply)
{
    const char *v = arg_text(args, key);

    if (!v)
        return tool_fail(res, TOOL_VALIDATION, "%s: %s: expected a non-empty string", tool,
                         key);
    free(*field);
    *field = utf8_cap_dup(v, strlen(v), UTF8_TEXT_MAX);
    *flag = 1;
    res->ok = 1;
    strbuf_adds_cut(&res->output, reply);
    return 0;
}

static int hook(void *arg, struct tool_ctx *ctx, const char *name, const cJSON *args,
                struct tool_result *res)
{
    struct exec_state *x = arg;

    (void)ctx;
    if (!strcmp(name, "complete"))
        return hook_record(res, args, name, "summary", &x->out->summary, &x->out->completed,
                           "Recorded. The item goes to verification: the gates run "
                           "now. Do not call more tools.");
    if (!strcmp(name, "ask_human"))
        return hook_record(res, args, name, "question", &x->out->question, &x->out->blocked,
                           "Question recorded. The item waits for a human answer.");
    if (!strcmp(name, "run_gates"))
        return run_gates(x, res);
    if (!strcmp(name, "run_at_start"))
        return run_at_start(x->j, x->ws, args, res);
    return tool_fail(res, TOOL_VALIDATION, "%s: not a hooked tool", name);
}

/* ---- the tools offered, the history ---- */

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

/* The tools the goal allows, as the model sees them.  The strings of
 * defs point into schemas and params (freed by tools_release). */
struct tools {
    cJSON *schemas, *allowed_keep, *spec;
    const char *const *allowed;
    const char **protected_paths;
    struct llm_tool_def *defs;
    char **params;
    size_t ndefs;
};

static void tools_init(struct tools *t, const struct goal *g)
{
    const cJSON *pp, *it;
    size_t n = 0;

    memset(t, 0, sizeof(*t));
    t->allowed = allowed_list(g->allowed_actions, &t->allowed_keep);
    t->schemas = tool_schemas(t->allowed);
    t->ndefs = (size_t)cJSON_GetArraySize(t->schemas);
    t->defs = xcalloc(t->ndefs + 1, sizeof(*t->defs));
    t->params = xcalloc(t->ndefs + 1, sizeof(*t->params));
    for (size_t i = 0; i < t->ndefs; i++) {
        const cJSON *s = cJSON_GetArrayItem(t->schemas, (int)i);
        t->defs[i].name = cJSON_GetObjectItemCaseSensitive(s, "name")->valuestring;
        t->defs[i].description = cJSON_GetObjectItemCaseSensitive(s, "description")->valuestring;
        t->params[i] = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(s, "parameters"));
        t->defs[i].parameters_json = t->params[i];
    }
    /* the goal's protected_paths: write and edit refuse them */
    t->spec = g->spec ? cJSON_Parse(g->spec) : NULL;
    pp = cJSON_GetObjectItemCaseSensitive(t->spec, "protected_paths");
    t->protected_paths = xcalloc((size_t)cJSON_GetArraySize(pp) + 1, sizeof(*t->protected_paths));
    cJSON_ArrayForEach(it, pp) if (cJSON_IsString(it)) t->protected_paths[n++] = it->valuestring;
}

static void tools_release(struct tools *t)
{
    for (size_t i = 0; i < t->ndefs; i++)
        cJSON_free(t->params[i]);
    free(t->params);
    free(t->defs);
    cJSON_Delete(t->schemas);
    cJSON_Delete(t->allowed_keep);
    cJSON_Delete(t->spec);
    free(t->protected_paths);
}

static void tool_ctx_setup(struct tool_ctx *tctx, const struct tools *t, struct exec_state *x)
{
    struct job_ctx *j = x->j;

    memset(tctx, 0, sizeof(*tctx));
    tctx->root = x->ws->root;
    tctx->git_common = x->ws->git_common;
    tctx->git_dir = x->ws->git_dir;
    tctx->allowed = t->allowed;
    tctx->st = j->st;
    tctx->goal_id = j->goal->id;
    tctx->item_id = j->item->id;
    tctx->run_id = j->claim.run_id;
    tctx->hook = hook;
    tctx->hook_arg = x;
    tctx->protected_paths = t->protected_paths;
}

struct history {
    struct llm_message *m;
    size_t n, cap;
};

static struct llm_message *history_push(struct history *h)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 32;
        h->m = xrealloc(h->m, h->cap * sizeof(*h->m));
    }
    memset(&h->m[h->n], 0, sizeof(h->m[0]));
    return &h->m[h->n++];
}

/* ---- one turn ---- */

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
    job_event_or_warn(j, type, p);
    cJSON_Delete(p);
}

/* Before a model call: the run still ours, its limits, the goal's
 * budget.  0, or ERR_FAIL after job_fail(). */
static int turn_allowed(struct job_ctx *j)
{
    const char *limit = NULL;

    if (job_check_live(j) != 0)
        return ERR_FAIL;
    if (control_check_run(j->st, j->goal->id, j->item->id, j->claim.run_id, &j->usage,
                          time_mono_ms(), &limit) != 0)
        return job_fail(j, "limit", "%s", err_last());
    if (control_check_budget(j->st, j->goal->id, j->item->id, j->claim.run_id, j->last_call_tokens,
                             j->last_call_cost, &limit) != 0)
        return job_fail(j, "budget", "%s", err_last());
    return 0;
}

/* The model call of turn, the history compacted first when it nears the
 * context window, and once more (the same turn retried) when the provider
 * answers context_length.  0 with *resp, or the call's failure in *err. */
static int model_call(struct job_ctx *j, struct history *h, const struct tools *t, int turn,
                      struct llm_response *resp, struct llm_error *err)
{
    struct llm_request req;
    int index = j->model_index, changed = 0, retried = 0, crc;

    memset(&req, 0, sizeof(req));
    req.stage = "execute";
    req.run_id = j->claim.run_id;
    req.goal_id = j->goal->id;
    req.item_id = j->item->id;
    req.tools = t->defs;
    req.ntools = t->ndefs;
    if (compact_history(j, h->m, &h->n, t->defs, t->ndefs, turn, 0, &changed) != 0)
        log_warn("%s: context.compacted event: %s", j->item->key, err_last());
    for (;;) {
        req.messages = h->m;
        req.nmessages = h->n;
        crc = llm_chat_chain(j->llm, j->model_index, &req, resp, err, &index);
        j->model_index = index;
        if (!crc || err->cls != LLM_ERR_CONTEXT_LENGTH || retried)
            break;
        /* the provider counted more than the estimate: compact once more
         * and retry the same turn */
        retried = 1;
        if (compact_history(j, h->m, &h->n, t->defs, t->ndefs, turn, 1, &changed) != 0)
            log_warn("%s: context.compacted event: %s", j->item->key, err_last());
        if (!changed)
            break;
        llm_response_release(resp);
        llm_error_release(err);
    }
    return crc;
}

/* One turn's model call, accounted; the answer joins the history (moved,
 * not copied) and its hash goes into reply_hash.  0, or ERR_FAIL after
 * job_fail(). */
static int turn_ask(struct job_ctx *j, struct history *h, const struct tools *t, int turn,
                    char reply_hash[HASH_HEX_SIZE])
{
    struct llm_response resp;
    struct llm_error err;
    int rc = 0;

    j->usage.turns++;
    if (model_call(j, h, t, turn, &resp, &err) != 0) {
        job_breaker_failed(j, llm_error_class_name(err.cls), err.message);
        rc = job_fail(j, llm_error_class_name(err.cls), "execute: %s",
                      err.message ? err.message : "model call failed");
        goto out;
    }
    breaker_record(j->st, NULL, j->claim.run_id, time_now_ms());
    j->usage.tokens += resp.usage.input + resp.usage.output;
    j->last_call_tokens = resp.usage.input + resp.usage.output;
    j->last_call_cost = resp.cost_usd;
    turn_event(j, "turn.completed", turn, &resp, resp.message.ncalls);
    hash_sha256_hex(reply_hash, resp.message.content ? resp.message.content : "",
                    resp.message.content ? strlen(resp.message.content) : 0);
    *history_push(h) = resp.message;
    memset(&resp.message, 0, sizeof(resp.message));
out:
    llm_response_release(&resp);
    llm_error_release(&err);
    return rc;
}

/* Run the tool calls of the last assistant message in order, their
 * results joining the history; sig receives their signature and
 * *last_error the class of the last failing one. */
static void turn_tools(struct tool_ctx *tctx, struct history *h, const struct exec_state *x,
                       strbuf *sig, const char **last_error)
{
    size_t ai = h->n - 1, ncalls = h->m[ai].ncalls;

    if (ncalls == 0)
        llm_message_init(history_push(h), LLM_USER,
                         "Use the tools to do the work. Call complete when the item is "
                         "done, or ask_human if you need a decision.");
    for (size_t i = 0; i < ncalls && h->n < MAX_HISTORY; i++) {
        /* copy the call first: pushing a result may move the history */
        const struct llm_tool_call *call = &h->m[ai].calls[i];
        char *name = xstrdup(call->name ? call->name : "");
        char *id = xstrdup(call->id ? call->id : "");
        /* moved out of the history, not copied: a write's content is held
         * once; a compact copy comes back */
        char *args = h->m[ai].calls[i].arguments;
        struct tool_result res;

        h->m[ai].calls[i].arguments = NULL;
        if (!args)
            args = xstrdup("{}");
        strbuf_addf_cut(sig, "%s:%.4096s:%zu;", name, args, strlen(args)); /* hashed */
        tool_call_take(tctx, name, &args, &res);
        /* the history holds it again (the compact copy for a big one) */
        h->m[ai].calls[i].arguments = args;
        if (!res.ok)
            *last_error = tool_class_name(res.error_class);
        /* a command that exited non-zero is a result the model reads (its
         * exit code is in the text), not a failure of the tool */
        llm_message_tool_result(history_push(h), id, strbuf_cstr(&res.output),
                                !res.ok && res.error_class != TOOL_EXIT);
        tool_result_release(&res);
        free(name);
        free(id);
        if (x->out->completed || x->out->blocked)
            break;
    }
}

/* After the turn's tools: the worktree's state joins the fingerprint, and
 * K identical fingerprints in a row stop the run.  0, or ERR_FAIL after
 * job_fail(). */
static int turn_progress(struct exec_state *x, struct progress_detector *pd, const strbuf *sig,
                         const char *last_error, const char *reply_hash)
{
    struct job_ctx *j = x->j;
    char fp[HASH_HEX_SIZE], tree[64] = "";
    cJSON *p;
    int crc;

    if (x->ws->wt && (crc = workspace_state(x->ws, tree, sizeof(tree))) != 0) {
        /* a change goald will not snapshot (a file over tools.max_file_mb):
         * this attempt ends here, and the stage's reset removes the change
         * so the retry starts clean */
        x->out->completed = x->out->blocked = 0;
        return job_fail(j, crc == ERR_TOOBIG || crc == ERR_POLICY ? "policy" : "vcs", "%s: %s",
                        j->item->key, err_last());
    }
    progress_fingerprint(fp, tree, strbuf_cstr(sig), last_error, reply_hash);
    if (x->out->completed || x->out->blocked || !progress_observe(pd, fp))
        return 0;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "task_id", j->item->id);
    cJSON_AddStringToObject(p, "fingerprint", fp);
    cJSON_AddNumberToObject(p, "repeats", pd->same);
    cJSON_AddNumberToObject(p, "threshold", pd->k);
    job_event_or_warn(j, "progress.stalled", p);
    cJSON_Delete(p);
    return job_fail(j, "stalled", "no progress: %d identical turns in a row", pd->same);
}

/* ---- the loop ---- */

int react_run(struct react_outcome *out, struct job_ctx *j, struct workspace *ws, const char *user)
{
    struct exec_state x = {j, ws, out};
    struct history h = {0};
    struct tool_ctx tctx;
    struct tools t;
    struct progress_detector pd;
    int rc = 0, turn = 0;

    memset(out, 0, sizeof(*out));
    tools_init(&t, j->goal);
    tool_ctx_setup(&tctx, &t, &x);
    llm_message_init(history_push(&h), LLM_SYSTEM, prompt_execute);
    llm_message_init(history_push(&h), LLM_USER, user);
    progress_init(&pd, 0);
    while (!out->completed && !out->blocked) {
        char reply_hash[HASH_HEX_SIZE];
        const char *last_error = NULL;
        strbuf sig;

        if ((rc = turn_allowed(j)) != 0)
            break;
        fault_point("execute.turn");
        job_renew_lease(j);
        turn++;
        turn_event(j, "turn.started", turn, NULL, 0);
        if ((rc = turn_ask(j, &h, &t, turn, reply_hash)) != 0)
            break;
        strbuf_init(&sig, 1 << 20);
        turn_tools(&tctx, &h, &x, &sig, &last_error);
        rc = turn_progress(&x, &pd, &sig, last_error, reply_hash);
        strbuf_release(&sig);
        if (rc)
            break;
    }
    llm_messages_free(h.m, h.n);
    tools_release(&t);
    return rc;
}

void react_outcome_release(struct react_outcome *o)
{
    free(o->summary);
    free(o->question);
    memset(o, 0, sizeof(*o));
}
