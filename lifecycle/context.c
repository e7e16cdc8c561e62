#include "lifecycle/context.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/job.h"
#include "store/event.h"
#include "util/err.h"
#include "util/timeutil.h"

#define MAX_STEPS 40

static int has_string(const cJSON *arr, const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) && !strcmp(it->valuestring, s)) return 1;
    return 0;
}

/* Steps and files from the item's tool calls, in order. */
static int add_steps(store *st, const char *item_id, cJSON *steps, cJSON *files)
{
    static const char sql[] =
        "SELECT type, payload FROM events WHERE item_id = ? AND type IN"
        " ('tool_call.started', 'tool_call.completed', 'tool_call.failed') ORDER BY id";
    sqlite3_stmt *s;
    cJSON *pending = NULL;
    int rc = store_prepare(st, &s, sql);

    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(s, 0);
        cJSON *p = cJSON_Parse((const char *)sqlite3_column_text(s, 1));
        const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "tool"));

        if (!strcmp(type, "tool_call.started")) {
            const char *args =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
            cJSON *a = args ? cJSON_Parse(args) : NULL;
            const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "path"));
            const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "command"));
            char step[300];

            if (tool && (!strcmp(tool, "write") || !strcmp(tool, "edit")) && path &&
                !has_string(files, path))
                cJSON_AddItemToArray(files, cJSON_CreateString(path));
            snprintf(step, sizeof(step), "%s %.200s", tool ? tool : "?",
                     path ? path : cmd ? cmd : "");
            cJSON_Delete(pending);
            pending = cJSON_CreateString(step);
            cJSON_Delete(a);
        } else if (pending) {
            char step[400];
            snprintf(step, sizeof(step), "%s -> %s", pending->valuestring,
                     !strcmp(type, "tool_call.completed") ? "ok" : "failed");
            cJSON_AddItemToArray(steps, cJSON_CreateString(step));
            cJSON_Delete(pending);
            pending = NULL;
            while (cJSON_GetArraySize(steps) > MAX_STEPS)
                cJSON_DeleteItemFromArray(steps, 0);
        }
        cJSON_Delete(p);
    }
    store_done(s);
    cJSON_Delete(pending);
    return 0;
}

int context_pack_build(store *st, const char *item_id, const char *model_summary, cJSON **out)
{
    static const char q_item[] = "SELECT status, ifnull(question, '') FROM work_items WHERE id = ?";
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1) FROM gate_results WHERE id IN"
        " (SELECT max(id) FROM gate_results WHERE item_id = ? GROUP BY name) ORDER BY name";
    static const char q_fail[] =
        "SELECT ifnull(error_class, ''), ifnull(error_signature, ''), ifnull(failure_reason, '')"
        " FROM runs WHERE item_id = ? AND status IN ('failed','timeout','aborted')"
        " ORDER BY created_at DESC, rowid DESC LIMIT 3";
    cJSON *pack = cJSON_CreateObject();
    cJSON *steps = cJSON_CreateArray(), *files = cJSON_CreateArray(), *next = cJSON_CreateArray();
    cJSON *questions = cJSON_CreateArray(), *gates = cJSON_CreateObject(),
          *fails = cJSON_CreateArray();
    char status[32] = "", question[2048] = "", first_failure[1024] = "";
    sqlite3_stmt *s;
    int rc;

    if ((rc = store_prepare(st, &s, q_item)) != 0)
        goto out;
    store_bind_text(s, 1, item_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(status, sizeof(status), "%s", sqlite3_column_text(s, 0));
        snprintf(question, sizeof(question), "%s", sqlite3_column_text(s, 1));
    }
    store_done(s);
    if ((rc = add_steps(st, item_id, steps, files)) != 0)
        goto out;
    if ((rc = store_prepare(st, &s, q_gates)) != 0)
        goto out;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW)
        cJSON_AddStringToObject(gates, (const char *)sqlite3_column_text(s, 0),
                                sqlite3_column_int(s, 1) ? "passed" : "failed");
    store_done(s);
    if ((rc = store_prepare(st, &s, q_fail)) != 0)
        goto out;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "class", (const char *)sqlite3_column_text(s, 0));
        cJSON_AddStringToObject(f, "signature", (const char *)sqlite3_column_text(s, 1));
        if (!first_failure[0])
            snprintf(first_failure, sizeof(first_failure), "%s", sqlite3_column_text(s, 2));
        cJSON_AddItemToArray(fails, f);
    }
    store_done(s);
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
    cJSON_AddStringToObject(pack, "phase", status);
    cJSON_AddItemToObject(pack, "completed_steps", steps);
    cJSON_AddItemToObject(pack, "next_steps", next);
    cJSON_AddItemToObject(pack, "open_questions", questions);
    cJSON_AddItemToObject(pack, "files_touched", files);
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
    cJSON_Delete(pack);
    return rc;
}

int context_pack_write(struct job_ctx *j, const char *model_summary)
{
    static const char sql[] = "INSERT INTO context_packs(goal_id, item_id, run_id, pack,"
                              " created_at) VALUES (?, ?, ?, ?, ?)";
    cJSON *pack = NULL;
    char *text = NULL;
    sqlite3_stmt *s;
    int rc;

    if (!j->item)
        return 0;
    if ((rc = context_pack_build(j->st, j->item->id, model_summary, &pack)) != 0)
        return rc;
    text = cJSON_PrintUnformatted(pack);
    if ((rc = store_prepare(j->st, &s, sql)) == 0) {
        store_bind_text(s, 1, j->goal->id);
        store_bind_text(s, 2, j->item->id);
        store_bind_text(s, 3, j->claim.run_id);
        store_bind_text(s, 4, text);
        sqlite3_bind_int64(s, 5, time_now_ms());
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_err(j->st, "context pack");
        store_done(s);
    }
    cJSON_free(text);
    cJSON_Delete(pack);
    return rc;
}

int context_pack_latest(store *st, const char *item_id, char **out)
{
    static const char sql[] =
        "SELECT pack FROM context_packs WHERE item_id = ? ORDER BY id DESC LIMIT 1";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    *out = NULL;
    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = store_col_strdup(s, 0);
    store_done(s);
    return 0;
}
