#include "lifecycle/context.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/job.h"
#include "store/context_pack.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "store/status.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define MAX_STEPS 40

static int has_string(const cJSON *arr, const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) && !strcmp(it->valuestring, s)) return 1;
    return 0;
}

#define STEP_TEXT_MAX 200 /* a step's path or command, in bytes */

struct steps {
    cJSON *steps, *files;
    cJSON *discarded, *discarded_files; /* the steps and files the last reset discarded */
    int earlier;                        /* attempts discarded before those */
    cJSON *pending;                     /* the started call waiting for its end */
    char pending_tool[32];
};

/* A worktree reset: the steps since the last one were discarded with their
 * changes; only the latest discarded attempt is listed, the ones before
 * it counted. */
static void steps_reset(struct steps *sp)
{
    cJSON *it;

    if (cJSON_GetArraySize(sp->steps) == 0 && cJSON_GetArraySize(sp->files) == 0)
        goto out; /* nothing since the last reset: what it discarded stays */
    if (cJSON_GetArraySize(sp->discarded) > 0 || cJSON_GetArraySize(sp->discarded_files) > 0)
        sp->earlier++;
    while ((it = cJSON_DetachItemFromArray(sp->discarded, 0)) != NULL)
        cJSON_Delete(it);
    while ((it = cJSON_DetachItemFromArray(sp->discarded_files, 0)) != NULL)
        cJSON_Delete(it);
    while ((it = cJSON_DetachItemFromArray(sp->steps, 0)) != NULL)
        cJSON_AddItemToArray(sp->discarded, it);
    while ((it = cJSON_DetachItemFromArray(sp->files, 0)) != NULL)
        cJSON_AddItemToArray(sp->discarded_files, it);
out:
    cJSON_Delete(sp->pending);
    sp->pending = NULL;
}

/* text on one line, at most STEP_TEXT_MAX bytes: cut at a space (or,
 * without one, at a character boundary) with "…". */
static void step_text(char *out, size_t n, const char *text)
{
    size_t len = strlen(text), cut = len, k = 0;

    if (len > STEP_TEXT_MAX) {
        cut = utf8_cut_back(text, STEP_TEXT_MAX);
        for (size_t i = cut; i > STEP_TEXT_MAX / 2; i--)
            if (text[i - 1] == ' ' || text[i - 1] == '\n' || text[i - 1] == '\t') {
                cut = i - 1;
                break;
            }
    }
    for (size_t i = 0; i < cut && k + 1 < n; i++)
        out[k++] = text[i] == '\n' || text[i] == '\t' || text[i] == '\r' ? ' ' : text[i];
    out[k] = '\0';
    if (cut < len && k + 4 < n)
        snprintf(out + k, n - k, "\xe2\x80\xa6"); /* truncation: ok, room for it is checked */
}

/* How a call ended: ok or failed; a complete whose run failed was
 * refused at verification. */
static void step_end(struct steps *sp, const struct store_step_event *e)
{
    char step[400];
    enum run_status rs = run_status_of(e->run_status);
    int failed_run = rs == RUN_FAILED || rs == RUN_TIMEOUT || rs == RUN_ABORTED;

    if (!strcmp(e->type, "tool_call.completed") && !strcmp(sp->pending_tool, "complete") &&
        failed_run)
        /* truncation: ok, a step shown to the model */
        snprintf(step, sizeof(step), "%s -> refused at verification%s%s%s",
                 sp->pending->valuestring, e->run_error_class[0] ? " (" : "",
                 e->run_error_class, e->run_error_class[0] ? ")" : "");
    else
        /* truncation: ok, a step shown to the model */
        snprintf(step, sizeof(step), "%s -> %s", sp->pending->valuestring,
                 !strcmp(e->type, "tool_call.completed") ? "ok" : "failed");
    cJSON_AddItemToArray(sp->steps, cJSON_CreateString(step));
    cJSON_Delete(sp->pending);
    sp->pending = NULL;
    while (cJSON_GetArraySize(sp->steps) > MAX_STEPS)
        cJSON_DeleteItemFromArray(sp->steps, 0);
}

/* One tool call event: a start names a step (and a file written), an end
 * closes it; a worktree reset discards what came before. */
static int add_step(const struct store_step_event *e, void *ctx)
{
    struct steps *sp = ctx;
    cJSON *p = cJSON_Parse(e->payload);
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "tool"));

    if (!strcmp(e->type, "worktree.reset")) {
        steps_reset(sp);
    } else if (!strcmp(e->type, "tool_call.started")) {
        const char *args = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
        cJSON *a = args ? cJSON_Parse(args) : NULL;
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "path"));
        const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "command"));
        char text[STEP_TEXT_MAX + 8], step[300];

        if (tool && (!strcmp(tool, "write") || !strcmp(tool, "edit")) && path &&
            !has_string(sp->files, path))
            cJSON_AddItemToArray(sp->files, cJSON_CreateString(path));
        step_text(text, sizeof(text), path ? path : cmd ? cmd : "");
        /* truncation: ok, a step shown to the model */
        snprintf(step, sizeof(step), "%s%s%s", tool ? tool : "?", text[0] ? " " : "", text);
        /* truncation: ok, compared only with short tool names */
        snprintf(sp->pending_tool, sizeof(sp->pending_tool), "%s", tool ? tool : "");
        cJSON_Delete(sp->pending);
        sp->pending = cJSON_CreateString(step);
        cJSON_Delete(a);
    } else if (sp->pending) {
        step_end(sp, e);
    }
    cJSON_Delete(p);
    return 0;
}

/* Steps and files from the item's tool calls, in order: those since the
 * last worktree reset, and those it discarded (*earlier: the attempts
 * discarded before those). */
static int add_steps(store *st, const char *item_id, cJSON *steps, cJSON *files, cJSON *discarded,
                     cJSON *discarded_files, int *earlier)
{
    struct steps sp = {steps, files, discarded, discarded_files, 0, NULL, ""};
    int rc = store_event_item_steps_each(st, item_id, add_step, &sp);

    cJSON_Delete(sp.pending);
    *earlier = sp.earlier;
    return rc;
}

static int add_gate(const char *name, int passed, void *ctx)
{
    cJSON_AddStringToObject((cJSON *)ctx, name, passed ? "passed" : "failed");
    return 0;
}

struct fails {
    cJSON *arr;
    char *first;
    size_t first_n;
};

/* The first line of a failure reason, without the colon that introduced
 * the output after it: "tests weakened: ...:" reads "tests weakened: ...". */
static void first_line(char *out, size_t n, const char *reason)
{
    size_t len = strcspn(reason, "\n");

    while (len > 0 && (reason[len - 1] == ':' || reason[len - 1] == ' '))
        len--;
    if (len >= n)
        len = utf8_cut_back(reason, n - 1);
    memcpy(out, reason, len);
    out[len] = '\0';
}

/* The item's last failures, newest first: each signature once, with how
 * many of them it was. */
static int add_failure(const struct store_run_failure *f, void *ctx)
{
    struct fails *fl = ctx;
    const cJSON *it;
    cJSON *o;
    char what[STEP_TEXT_MAX + 8], line[1024];

    cJSON_ArrayForEach(it, fl->arr)
    {
        const cJSON *sig = cJSON_GetObjectItemCaseSensitive(it, "signature");
        if (cJSON_IsString(sig) && !strcmp(sig->valuestring, f->error_signature)) {
            cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "times");
            cJSON_SetNumberValue(t, t->valuedouble + 1);
            return 0;
        }
    }
    first_line(line, sizeof(line), f->failure_reason);
    if (!fl->first[0]) /* its first line: a gate's output is in the task once, digested */
        snprintf(fl->first, fl->first_n, "%s", line); /* truncation: ok, a line shown */
    step_text(what, sizeof(what), line);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "class", f->error_class);
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddNumberToObject(o, "times", 1);
    cJSON_AddStringToObject(o, "signature", f->error_signature);
    cJSON_AddItemToArray(fl->arr, o);
    return 0;
}

/* The failures as the model sees them: the signatures (hashes) left out. */
static void failures_shown(cJSON *arr)
{
    cJSON *it;

    cJSON_ArrayForEach(it, arr)
        cJSON_DeleteItemFromObjectCaseSensitive(it, "signature");
}

/* What the next run should do, from the item's status and the ledger. */
static void add_next(cJSON *next, cJSON *questions, const char *status, const char *question,
                     const char *first_failure)
{
    if (question[0] && item_status_of(status) == ITEM_BLOCKED) {
        cJSON_AddItemToArray(questions, cJSON_CreateString(question));
        cJSON_AddItemToArray(next, cJSON_CreateString("wait for the human answer"));
    } else if (item_status_finished(item_status_of(status))) {
        /* nothing left */
    } else if (first_failure[0]) {
        char step[1100];
        /* truncation: ok, a step shown to the model */
        snprintf(step, sizeof(step), "fix what failed last: %s.", first_failure);
        cJSON_AddItemToArray(next, cJSON_CreateString(step));
    } else {
        cJSON_AddItemToArray(next, cJSON_CreateString("continue the item, then call complete"));
    }
}

int context_pack_build(store *st, const char *item_id, const char *model_summary, cJSON **out)
{
    cJSON *pack = cJSON_CreateObject();
    cJSON *steps = cJSON_CreateArray(), *files = cJSON_CreateArray(), *next = cJSON_CreateArray();
    cJSON *questions = cJSON_CreateArray(), *gates = cJSON_CreateObject(),
          *fails = cJSON_CreateArray();
    cJSON *discarded = cJSON_CreateArray(), *discarded_files = cJSON_CreateArray();
    char status[32] = "", question[2048] = "", first_failure[1024] = "";
    struct fails fl = {fails, first_failure, sizeof(first_failure)};
    struct work_item *wi = NULL;
    int earlier = 0, rc;

    if ((rc = store_item_get(st, item_id, &wi)) == 0) {
        snprintf(status, sizeof(status), "%s", wi->status); /* truncation: ok, a status shown */
        /* truncation: ok, a question shown */
        snprintf(question, sizeof(question), "%s", wi->question ? wi->question : "");
        store_item_free(wi);
    } else if (rc == ERR_NOTFOUND) {
        err_clear(); /* no item: an empty phase, as before */
    } else {
        goto out;
    }
    if ((rc = add_steps(st, item_id, steps, files, discarded, discarded_files, &earlier)) != 0 ||
        (rc = store_gate_result_latest_by_item_each(st, item_id, add_gate, gates)) != 0 ||
        (rc = store_run_item_failures_each(st, item_id, add_failure, &fl)) != 0)
        goto out;
    add_next(next, questions, status, question, first_failure);
    failures_shown(fails);
    cJSON_AddStringToObject(pack, "phase", status);
    cJSON_AddItemToObject(pack, "completed_steps", steps);
    cJSON_AddItemToObject(pack, "next_steps", next);
    cJSON_AddItemToObject(pack, "open_questions", questions);
    cJSON_AddItemToObject(pack, "files_touched", files);
    if (cJSON_GetArraySize(discarded) > 0 || cJSON_GetArraySize(discarded_files) > 0) {
        char note[300];
        snprintf(note, sizeof(note), /* truncation: ok, a note shown */
                 "reset after a run that did not finish: the discarded steps' changes are not "
                 "in it (the latest discarded attempt's steps%s%.0d%s)",
                 earlier ? "; earlier discarded attempts, not listed: " : "", earlier, "");
        cJSON_AddStringToObject(pack, "worktree", note);
        cJSON_AddItemToObject(pack, "discarded_steps", discarded);
        cJSON_AddItemToObject(pack, "discarded_files", discarded_files);
        discarded = discarded_files = NULL;
    }
    cJSON_AddItemToObject(pack, "gate_status", gates);
    cJSON_AddItemToObject(pack, "last_failures", fails);
    cJSON_AddStringToObject(pack, "summary", model_summary ? model_summary : "");
    steps = files = next = questions = gates = fails = NULL;
    *out = pack;
    pack = NULL;
out:
    cJSON_Delete(steps);
    cJSON_Delete(files);
    cJSON_Delete(next);
    cJSON_Delete(questions);
    cJSON_Delete(gates);
    cJSON_Delete(fails);
    cJSON_Delete(discarded);
    cJSON_Delete(discarded_files);
    cJSON_Delete(pack);
    return rc;
}

int context_pack_write(struct job_ctx *j, const char *model_summary)
{
    cJSON *pack = NULL;
    char *text = NULL;
    int rc;

    if (!j->item)
        return 0;
    if ((rc = context_pack_build(j->st, j->item->id, model_summary, &pack)) != 0)
        return rc;
    text = cJSON_PrintUnformatted(pack);
    xcheck(text);
    rc = store_context_pack_insert(j->st, j->goal->id, j->item->id, j->claim.run_id, text,
                                   time_now_ms());
    cJSON_free(text);
    cJSON_Delete(pack);
    return rc;
}

/* ---- what a human decided --------------------------------------------- */

#define ANSWERS_MAX 20         /* the answers listed, newest first */
#define ANSWER_QUESTION_MAX 300 /* a question, in bytes */
#define ANSWER_INPUT_MAX 2000  /* a human's words, in bytes */

struct answers {
    strbuf *sb;
    const char *intro;
    int n;
};

/* s quoted, cut at max bytes (a character boundary) with "…". */
static void add_quoted(strbuf *sb, const char *s, size_t max)
{
    size_t len = strlen(s), cut = len > max ? utf8_cut_back(s, max) : len;

    strbuf_addf_cut(sb, "\"%.*s%s\"", (int)cut, s, cut < len ? "\xe2\x80\xa6" : "");
}

/* s on the line, its line breaks as spaces, cut at max bytes with "…". */
static void add_flat(strbuf *sb, const char *s, size_t max)
{
    size_t len = strlen(s), cut = len > max ? utf8_cut_back(s, max) : len;

    for (size_t i = 0; i < cut; i++)
        strbuf_addc_cut(sb, s[i] == '\n' || s[i] == '\r' ? ' ' : s[i]);
    if (cut < len)
        strbuf_adds_cut(sb, "\xe2\x80\xa6");
}

/* What an action did, in words, before the human's input (if any). */
static const char *answer_words(const char *act, int has_input)
{
    if (!strcmp(act, "retry"))
        return has_input ? "A human answered: " : "try again (the human gave no words)";
    if (!strcmp(act, "alternative"))
        return "another approach to follow: ";
    if (!strcmp(act, "accept_test_changes"))
        return "the human accepted the change of these test cases (the verification no longer "
               "counts it against the item): ";
    if (!strcmp(act, "accept_best_attempt"))
        return "the human accepted the item's best attempt (its gates passed; goald applies it "
               "again, verifies and commits it)";
    if (!strcmp(act, "increase_budget"))
        return "the human raised the budget: ";
    return has_input ? "the human said: " : "";
}

static int add_answer(const struct store_escalation *e, void *ctx)
{
    struct answers *a = ctx;
    strbuf *sb = a->sb;
    const char *act = e->resolution, *in = e->resolution_input;
    int input = in[0] && strcmp(act, "accept_best_attempt") != 0;

    if (!strcmp(act, "pause"))
        return 0;
    if (a->n++ == 0)
        strbuf_addf_cut(sb, "%s\n", a->intro);
    strbuf_addf_cut(sb, "- %s", act);
    if (e->question[0]) {
        strbuf_addf_cut(sb, " (to %s ", !strcmp(e->type, "ask_human") ? "the agent's question"
                                                                     : "the escalation");
        add_quoted(sb, e->question, ANSWER_QUESTION_MAX);
        strbuf_adds_cut(sb, ")");
    }
    strbuf_addf_cut(sb, ": %s", answer_words(act, input));
    if (input)
        add_flat(sb, in, ANSWER_INPUT_MAX);
    strbuf_adds_cut(sb, "\n");
    return 0;
}

int context_human_answers(strbuf *sb, store *st, const char *item_id, const char *intro)
{
    struct answers a = {sb, intro, 0};

    if (store_escalation_each_answered(st, item_id, ANSWERS_MAX, add_answer, &a) != 0)
        err_clear(); /* a help: the prompt goes on without it */
    return a.n;
}

int context_pack_latest(store *st, const char *item_id, char **out)
{
    return store_context_pack_latest(st, item_id, out);
}
