/*
 * compact.c - the conversation of a run kept inside the model's context
 * window: estimate, stubs for old tool outputs, a condensing model call
 * (compact.h has the rules).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/compact.h"
#include "lifecycle/job.h"
#include "lifecycle/prompts.h"
#include "llm/llm.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define STUB_PREFIX "[elided: "
#define SUMMARY_PREFIX "Summary of the earlier turns of this run (compacted):\n"
#define MSG_OVERHEAD 48  /* {"role":"tool","content":...,"tool_call_id":...} */
#define CALL_OVERHEAD 64 /* {"id","type":"function","function":{"name","arguments"}} */
#define LONG_ARG 256     /* an old call's string argument longer than this is elided */
#define LONG_TEXT 4096   /* an old assistant text longer than this is cut */

/* Bytes of s as a JSON string (quotes and escapes included). */
static size_t esc_len(const char *s)
{
    size_t n = 2;

    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '\n' || *p == '\r' || *p == '\t' || *p == '\b' ||
            *p == '\f')
            n += 2;
        else if (*p < 0x20)
            n += 6;
        else
            n++;
    }
    return n;
}

static size_t msg_bytes(const struct llm_message *m)
{
    size_t b = MSG_OVERHEAD + esc_len(m->content) + esc_len(m->tool_call_id);

    for (size_t k = 0; k < m->ncalls; k++)
        b += CALL_OVERHEAD + esc_len(m->calls[k].id) + esc_len(m->calls[k].name) +
             esc_len(m->calls[k].arguments);
    /* thinking blocks go back as they came (never stubbed nor cut: the
     * provider checks their signature), so they count whole */
    for (size_t k = 0; k < m->nthinking; k++)
        b += strlen(m->thinking[k].block);
    return b;
}

static int64_t tokens_of(size_t bytes)
{
    return (int64_t)((bytes + 3) / 4);
}

int64_t compact_estimate(const struct llm_message *m, size_t n, const struct llm_tool_def *tools,
                         size_t ntools)
{
    size_t b = 64; /* {"model":...,"max_tokens":...} */

    for (size_t i = 0; i < n; i++)
        b += msg_bytes(&m[i]);
    for (size_t i = 0; i < ntools; i++)
        b += CALL_OVERHEAD + esc_len(tools[i].name) + esc_len(tools[i].description) +
             (tools[i].parameters_json ? strlen(tools[i].parameters_json) : 16);
    return tokens_of(b);
}

/* ---- stubs ---------------------------------------------------------------- */

/* The call a tool result answers, searched in the assistant messages
 * before it. */
static const struct llm_tool_call *call_of(const struct llm_message *m, size_t at)
{
    const char *id = m[at].tool_call_id;

    for (size_t i = at; id && i-- > 0;) {
        if (m[i].role != LLM_ASSISTANT)
            continue;
        for (size_t k = 0; k < m[i].ncalls; k++)
            if (m[i].calls[k].id && !strcmp(m[i].calls[k].id, id))
                return &m[i].calls[k];
        break; /* a result follows its own assistant message */
    }
    return NULL;
}

/* What a call was about, in a few words: its path, command or pattern. */
static void call_gist(strbuf *sb, const struct llm_tool_call *c)
{
    static const char *const keys[] = {"path", "command", "pattern", "query", "url", NULL};
    cJSON *a = c && c->arguments ? cJSON_Parse(c->arguments) : NULL;
    const char *what = NULL;

    for (int i = 0; keys[i] && !what; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, keys[i]);
        if (cJSON_IsString(v))
            what = v->valuestring;
    }
    strbuf_addf_cut(sb, "%s", c && c->name ? c->name : "tool");
    if (what) {
        size_t n = strlen(what), cut = utf8_cut_back(what, n > 100 ? 100 : n);
        strbuf_addf_cut(sb, " %.*s%s", (int)cut, what, cut < n ? "..." : "");
    }
    cJSON_Delete(a);
}

static void set_content(struct llm_message *m, strbuf *sb)
{
    char *t = xstrdup(strbuf_cstr(sb));

    free(m->content);
    m->content = t;
}

/* Replace the long string values of a call's arguments (a write's content)
 * by a note of their size; 1 when something changed. */
static int thin_args(struct llm_tool_call *c)
{
    cJSON *a, *v;
    char *t;
    int changed = 0;

    if (!c->arguments || strlen(c->arguments) <= LONG_ARG ||
        !cJSON_IsObject(a = cJSON_Parse(c->arguments)))
        return 0;
    cJSON_ArrayForEach(v, a)
    {
        size_t n;
        char note[64];
        if (!cJSON_IsString(v) || (n = strlen(v->valuestring)) <= LONG_ARG ||
            !strncmp(v->valuestring, STUB_PREFIX, strlen(STUB_PREFIX)))
            continue;
        /* truncation: ok, a note with a number */
        snprintf(note, sizeof(note), STUB_PREFIX "%zu bytes]", n);
        cJSON_SetValuestring(v, note);
        changed = 1;
    }
    if (changed && (t = cJSON_PrintUnformatted(a))) {
        free(c->arguments);
        c->arguments = xstrdup(t);
        cJSON_free(t);
    }
    cJSON_Delete(a);
    return changed;
}

/* Stub messages [from, to); the number of tool outputs stubbed.  An
 * assistant's thinking blocks are left as they are: the provider refuses
 * a changed one, so a turn keeps them whole or goes whole. */
static int stub_range(struct llm_message *m, size_t from, size_t to, int *changed)
{
    strbuf sb = STRBUF_INIT;
    int stubbed = 0;

    for (size_t i = from; i < to; i++) {
        if (m[i].role == LLM_TOOL && m[i].content &&
            strncmp(m[i].content, STUB_PREFIX, strlen(STUB_PREFIX)) != 0) {
            size_t len = strlen(m[i].content);
            strbuf_reset(&sb);
            strbuf_adds_cut(&sb, STUB_PREFIX);
            call_gist(&sb, call_of(m, i));
            strbuf_addf_cut(&sb, " -> %zu bytes%s]", len, m[i].is_error ? ", an error" : "");
            if (sb.len < len) {
                set_content(&m[i], &sb);
                stubbed++;
                *changed = 1;
            }
        } else if (m[i].role == LLM_ASSISTANT) {
            for (size_t k = 0; k < m[i].ncalls; k++)
                *changed |= thin_args(&m[i].calls[k]);
            if (m[i].content && strlen(m[i].content) > LONG_TEXT) {
                size_t len = strlen(m[i].content), cut = utf8_cut_back(m[i].content, LONG_TEXT);
                strbuf_reset(&sb);
                strbuf_addf_cut(&sb, "%.*s " STUB_PREFIX "%zu more bytes]", (int)cut, m[i].content,
                                len - cut);
                set_content(&m[i], &sb);
                *changed = 1;
            }
        }
    }
    strbuf_release(&sb);
    return stubbed;
}

/* ---- condensing ------------------------------------------------------------ */

static void add_cut(strbuf *sb, const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0, cut = s ? utf8_cut_back(s, n > max ? max : n) : 0;

    strbuf_add_cut(sb, s ? s : "", cut);
    if (cut < n)
        strbuf_addf_cut(sb, " [... %zu more bytes]", n - cut);
    strbuf_adds_cut(sb, "\n");
}

/* The condense stage: the old turns as text to the model; *summary the
 * answer (caller frees), or an error with its reason in the error slot. */
static int condense_call(struct job_ctx *j, const struct llm_message *m, size_t from, size_t to,
                         const char *old_summary, size_t max_bytes, char **summary)
{
    strbuf text;
    cJSON *ans = NULL;
    const cJSON *s;
    int rc;

    *summary = NULL;
    strbuf_init(&text, max_bytes + 4096); /* the old turns, cut at the cap */
    if (old_summary)
        strbuf_addf_cut(&text, "The summary of the turns before these:\n%s\n\n", old_summary);
    strbuf_adds_cut(&text, "The turns to summarise:\n");
    for (size_t i = from; i < to; i++) {
        if (m[i].role == LLM_ASSISTANT) {
            if (m[i].content && *m[i].content) {
                strbuf_adds_cut(&text, "assistant: ");
                add_cut(&text, m[i].content, 1000);
            }
            for (size_t k = 0; k < m[i].ncalls; k++) {
                strbuf_addf_cut(&text, "call %s: ", m[i].calls[k].name ? m[i].calls[k].name : "");
                add_cut(&text, m[i].calls[k].arguments, 300);
            }
        } else if (m[i].role == LLM_TOOL) {
            strbuf_adds_cut(&text, m[i].is_error ? "tool error: " : "tool result: ");
            add_cut(&text, m[i].content, 800);
        } else {
            strbuf_adds_cut(&text, "user: ");
            add_cut(&text, m[i].content, 800);
        }
    }
    /* the run's limits, budget, lease and breakers as for any call; a
     * failure only drops the turns instead (the caller) */
    if ((rc = job_try_json(j, "condense", prompt_condense, strbuf_cstr(&text), schema_condense,
                           &ans, NULL)) != 0) {
        rc = err_set(ERR_FAIL, "condense: %s", err_last());
        goto out;
    }
    s = cJSON_GetObjectItemCaseSensitive(ans, "summary");
    if (!cJSON_IsString(s) || !*s->valuestring) {
        rc = err_set(ERR_FAIL, "condense: summary: expected a non-empty string");
        goto out;
    }
    *summary = xstrdup(s->valuestring);
out:
    cJSON_Delete(ans);
    strbuf_release(&text);
    return rc;
}

/* ---- the whole of it -------------------------------------------------------- */

static int64_t range_tokens(const struct llm_message *m, size_t from, size_t to)
{
    size_t b = 0;

    for (size_t i = from; i < to; i++)
        b += msg_bytes(&m[i]);
    return tokens_of(b);
}

/* The shape of the history: the head (before the first assistant message,
 * with an earlier summary at summary_at, 0 when none) and the turns, each
 * starting at an assistant message (starts[nturns] is the end). */
struct shape {
    size_t head_end, summary_at, nturns;
    size_t *starts; /* nturns + 1, malloc'd */
};

static void shape_read(struct shape *sh, const struct llm_message *m, size_t n)
{
    memset(sh, 0, sizeof(*sh));
    while (sh->head_end < n && m[sh->head_end].role != LLM_ASSISTANT)
        sh->head_end++;
    for (size_t i = 1; i < sh->head_end; i++)
        if (m[i].role == LLM_USER && m[i].content &&
            !strncmp(m[i].content, SUMMARY_PREFIX, strlen(SUMMARY_PREFIX)))
            sh->summary_at = i;
    sh->starts = xcalloc(n + 1, sizeof(*sh->starts));
    for (size_t i = sh->head_end; i < n; i++)
        if (m[i].role == LLM_ASSISTANT)
            sh->starts[sh->nturns++] = i;
    sh->starts[sh->nturns] = n;
}

/* How many of the last turns stay verbatim: at least one, at most
 * llm.compact_keep_turns, while head + tail fit the target; *tail_t their
 * tokens. */
static size_t keep_turns(const struct shape *sh, const struct llm_message *m, int64_t head_t,
                         int64_t target, int64_t *tail_t)
{
    int64_t keep_max = config_int(CFG_LLM_COMPACT_KEEP_TURNS);
    size_t keep = 0, nt = sh->nturns;

    *tail_t = 0;
    while (keep < nt && (int64_t)keep < keep_max) {
        int64_t t = range_tokens(m, sh->starts[nt - 1 - keep], sh->starts[nt - keep]);
        if (keep >= 1 && head_t + *tail_t + t > target)
            break;
        *tail_t += t;
        keep++;
    }
    return keep;
}

/* What a compaction did, for its event. */
struct compacted {
    int turn, force;
    const char *how;
    int64_t before, after, window, threshold;
    size_t keep;
    int stubbed, condensed;
    const char *cond_error;
};

/* Condense the old turns [head_end, old_end) (and an earlier summary) into
 * one user message (at most 2 * r->window bytes), or drop them when the
 * condense call fails: r->how says which, *cond_error (caller frees) why
 * it failed.  The turns before the r->keep last ones are those dropped. */
static void condense_old(struct job_ctx *j, struct llm_message *m, size_t *n,
                         const struct shape *sh, size_t old_end, struct compacted *r,
                         char **cond_error)
{
    size_t dropped_turns = sh->nturns - r->keep;
    size_t from = sh->summary_at ? sh->summary_at : sh->head_end, drop;
    strbuf sb = STRBUF_INIT;
    char *summary = NULL;

    if (condense_call(j, m, sh->head_end, old_end,
                      sh->summary_at ? m[sh->summary_at].content : NULL, (size_t)r->window * 2,
                      &summary) == 0) {
        strbuf_addf_cut(&sb, SUMMARY_PREFIX "%s", summary);
        r->how = "condense";
    } else {
        *cond_error = xstrdup(err_last());
        log_warn("%s: %s", j->item ? j->item->key : "run", *cond_error);
        strbuf_addf_cut(&sb,
                        SUMMARY_PREFIX STUB_PREFIX
                        "%zu earlier turns were dropped to fit the "
                        "context window; what they changed is in the worktree]",
                        dropped_turns);
        r->how = "drop";
    }
    /* messages [from, old_end) become one: the summary at from */
    for (size_t i = from; i < old_end; i++)
        llm_message_release(&m[i]);
    llm_message_init(&m[from], LLM_USER, strbuf_cstr(&sb));
    strbuf_release(&sb);
    drop = old_end - from - 1;
    memmove(&m[from + 1], &m[old_end], (*n - old_end) * sizeof(*m));
    *n -= drop;
    free(summary);
}

static int compacted_event(struct job_ctx *j, const struct compacted *r)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddNumberToObject(p, "turn", r->turn);
    cJSON_AddStringToObject(p, "reason", r->force ? "context_length" : "threshold");
    cJSON_AddStringToObject(p, "how", r->how);
    cJSON_AddNumberToObject(p, "tokens_before", (double)r->before);
    cJSON_AddNumberToObject(p, "tokens_after", (double)r->after);
    cJSON_AddNumberToObject(p, "window", (double)r->window);
    cJSON_AddNumberToObject(p, "threshold", (double)r->threshold);
    cJSON_AddNumberToObject(p, "kept_turns", (double)r->keep);
    cJSON_AddNumberToObject(p, "stubbed", r->stubbed);
    cJSON_AddNumberToObject(p, "condensed_turns", r->condensed);
    if (r->cond_error)
        cJSON_AddStringToObject(p, "condense_error", r->cond_error);
    rc = store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                         "context.compacted", p, NULL);
    cJSON_Delete(p);
    return rc;
}

int compact_history(struct job_ctx *j, struct llm_message *m, size_t *n,
                    const struct llm_tool_def *tools, size_t ntools, int turn, int force,
                    int *changed)
{
    struct llm_model_info info;
    struct compacted r = {.turn = turn, .force = force, .how = "stubs"};
    struct shape sh = {0};
    int64_t target, head_t, tail_t = 0;
    size_t old_end;
    char *cond_error = NULL;
    int rc = 0;

    *changed = 0;
    if (llm_client_model(j->llm, (size_t)j->model_index, &info) != 0)
        return 0;
    r.before = compact_estimate(m, *n, tools, ntools);
    r.window = info.context_window;
    if (r.window <= 0 && !force)
        return 0; /* unbounded (a script model with no window configured) */
    if (r.window <= 0)
        r.window = r.before;
    r.threshold = r.window * config_int(CFG_LLM_COMPACT_AT_PCT) / 100;
    if (r.before <= r.threshold && !force)
        return 0;
    target = r.threshold / 2;

    shape_read(&sh, m, *n);
    head_t = range_tokens(m, 0, sh.head_end) + compact_estimate(NULL, 0, tools, ntools);
    /* the verbatim tail: the last turns that fit half the threshold */
    r.keep = keep_turns(&sh, m, head_t, target, &tail_t);
    if (r.keep == sh.nturns)
        goto out; /* nothing older than the tail */
    old_end = sh.starts[sh.nturns - r.keep];

    r.stubbed = stub_range(m, sh.head_end, old_end, changed);
    r.after = compact_estimate(m, *n, tools, ntools);
    if ((r.after > r.threshold || (force && !*changed)) && head_t + tail_t < r.threshold) {
        condense_old(j, m, n, &sh, old_end, &r, &cond_error);
        r.condensed = (int)(sh.nturns - r.keep);
        *changed = 1;
    }
    if (!*changed)
        goto out;
    r.after = compact_estimate(m, *n, tools, ntools);
    r.cond_error = cond_error;
    rc = compacted_event(j, &r);
out:
    free(sh.starts);
    free(cond_error);
    return rc;
}
