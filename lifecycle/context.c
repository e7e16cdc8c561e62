#include "lifecycle/context.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/job.h"
#include "store/context_pack.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "store/item.h"
#include "store/run.h"
#include "util/err.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define MAX_STEPS 40

static int has_string(const cJSON *arr, const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) && !strcmp(it->valuestring, s)) return 1;
    return 0;
}

struct steps {
    cJSON *steps, *files;
    cJSON *discarded, *discarded_files; /* the steps and files before the last reset */
    cJSON *pending;                     /* the started call waiting for its end */
};

/* A worktree reset: the steps so far were discarded with their changes. */
static void steps_reset(struct steps *sp)
{
    cJSON *it;

    while ((it = cJSON_DetachItemFromArray(sp->steps, 0)) != NULL)
        cJSON_AddItemToArray(sp->discarded, it);
    while ((it = cJSON_DetachItemFromArray(sp->files, 0)) != NULL) {
        if (has_string(sp->discarded_files, it->valuestring))
            cJSON_Delete(it);
        else
            cJSON_AddItemToArray(sp->discarded_files, it);
    }
    while (cJSON_GetArraySize(sp->discarded) > MAX_STEPS)
        cJSON_DeleteItemFromArray(sp->discarded, 0);
    cJSON_Delete(sp->pending);
    sp->pending = NULL;
}

/* One tool call event: a start names a step (and a file written), an end
 * closes it as ok or failed; a worktree reset discards what came before. */
static int add_step(const char *type, const char *payload, void *ctx)
{
    struct steps *sp = ctx;
    cJSON *p = cJSON_Parse(payload);
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "tool"));

    if (!strcmp(type, "worktree.reset")) {
        steps_reset(sp);
    } else if (!strcmp(type, "tool_call.started")) {
        const char *args = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
        cJSON *a = args ? cJSON_Parse(args) : NULL;
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "path"));
        const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "command"));
        char step[300];

        if (tool && (!strcmp(tool, "write") || !strcmp(tool, "edit")) && path &&
            !has_string(sp->files, path))
            cJSON_AddItemToArray(sp->files, cJSON_CreateString(path));
        snprintf(step, sizeof(step), "%s %.200s", tool ? tool : "?", path ? path : cmd ? cmd : "");
        cJSON_Delete(sp->pending);
        sp->pending = cJSON_CreateString(step);
        cJSON_Delete(a);
    } else if (sp->pending) {
        char step[400];
        snprintf(step, sizeof(step), "%s -> %s", sp->pending->valuestring,
                 !strcmp(type, "tool_call.completed") ? "ok" : "failed");
        cJSON_AddItemToArray(sp->steps, cJSON_CreateString(step));
        cJSON_Delete(sp->pending);
        sp->pending = NULL;
        while (cJSON_GetArraySize(sp->steps) > MAX_STEPS)
            cJSON_DeleteItemFromArray(sp->steps, 0);
    }
    cJSON_Delete(p);
    return 0;
}

/* Steps and files from the item's tool calls, in order: those since the
 * last worktree reset, and those it discarded. */
static int add_steps(store *st, const char *item_id, cJSON *steps, cJSON *files, cJSON *discarded,
                     cJSON *discarded_files)
{
    struct steps sp = {steps, files, discarded, discarded_files, NULL};
    int rc = store_event_item_tool_calls_each(st, item_id, add_step, &sp);

    cJSON_Delete(sp.pending);
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

static int add_failure(const struct store_run_failure *f, void *ctx)
{
    struct fails *fl = ctx;
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "class", f->error_class);
    cJSON_AddStringToObject(o, "signature", f->error_signature);
    if (!fl->first[0]) /* its first line: a gate's output is in the task once, digested */
        snprintf(fl->first, fl->first_n, "%.*s", (int)strcspn(f->failure_reason, "\n"),
                 f->failure_reason);
    cJSON_AddItemToArray(fl->arr, o);
    return 0;
}

/* What the next run should do, from the item's status and the ledger. */
static void add_next(cJSON *next, cJSON *questions, const char *status, const char *question,
                     const char *first_failure)
{
    if (question[0] && !strcmp(status, "blocked")) {
        cJSON_AddItemToArray(questions, cJSON_CreateString(question));
        cJSON_AddItemToArray(next, cJSON_CreateString("wait for the human answer"));
    } else if (!strcmp(status, "done") || !strcmp(status, "skipped") ||
               !strcmp(status, "cancelled")) {
        /* nothing left */
    } else if (first_failure[0]) {
        char step[1100];
        snprintf(step, sizeof(step), "fix what failed last: %s", first_failure);
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
    int rc;

    if ((rc = store_item_get(st, item_id, &wi)) == 0) {
        snprintf(status, sizeof(status), "%s", wi->status);
        snprintf(question, sizeof(question), "%s", wi->question ? wi->question : "");
        store_item_free(wi);
    } else if (rc == ERR_NOTFOUND) {
        err_clear(); /* no item: an empty phase, as before */
    } else {
        goto out;
    }
    if ((rc = add_steps(st, item_id, steps, files, discarded, discarded_files)) != 0 ||
        (rc = store_gate_result_latest_by_item_each(st, item_id, add_gate, gates)) != 0 ||
        (rc = store_run_item_failures_each(st, item_id, add_failure, &fl)) != 0)
        goto out;
    add_next(next, questions, status, question, first_failure);
    cJSON_AddStringToObject(pack, "phase", status);
    cJSON_AddItemToObject(pack, "completed_steps", steps);
    cJSON_AddItemToObject(pack, "next_steps", next);
    cJSON_AddItemToObject(pack, "open_questions", questions);
    cJSON_AddItemToObject(pack, "files_touched", files);
    if (cJSON_GetArraySize(discarded) > 0 || cJSON_GetArraySize(discarded_files) > 0) {
        cJSON_AddStringToObject(pack, "worktree",
                                "reset to the item's start after a run that did not finish: "
                                "the discarded steps' changes are not in it");
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

int context_pack_latest(store *st, const char *item_id, char **out)
{
    return store_context_pack_latest(st, item_id, out);
}
