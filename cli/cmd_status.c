/* goald status [--json] : the daemon's heartbeat, lanes, queues, breakers. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/report.h"
#include "util/termesc.h"
#include "util/config.h"
#include "util/timeutil.h"

static int64_t count(store *st, const char *sql)
{
    sqlite3_stmt *s;
    int64_t n = 0;

    if (store_prepare(st, &s, sql) != 0)
        return -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    store_done(s);
    return n;
}

static int run(struct cli_ctx *c)
{
    cJSON *o = cJSON_CreateObject(), *d, *q, *jobs, *br, *lanes = NULL;
    sqlite3_stmt *s;
    store *st;
    int64_t now = time_now_ms();
    int rc, code;

    if ((rc = cli_store(c, &st)) != 0) {
        cJSON_Delete(o);
        return rc;
    }
    d = cJSON_AddObjectToObject(o, "daemon");
    if (store_prepare(st, &s, "SELECT pid, started_at, last_tick, lanes FROM daemon_heartbeat"
                              " WHERE id = 1") == 0) {
        if (sqlite3_step(s) == SQLITE_ROW) {
            char t[TIME_RFC3339_MAX];
            long pid = (long)sqlite3_column_int64(s, 0);
            int64_t age = now - sqlite3_column_int64(s, 2);
            int alive = age <= config_int(CFG_DAEMON_STALE_S) * 1000 && kill((pid_t)pid, 0) == 0;
            cJSON_AddStringToObject(d, "state", alive ? "running" : "stale");
            cJSON_AddNumberToObject(d, "pid", (double)pid);
            cJSON_AddStringToObject(d, "started_at",
                                    time_format_rfc3339_ms(t, sizeof(t), sqlite3_column_int64(s, 1)));
            cJSON_AddStringToObject(d, "last_tick",
                                    time_format_rfc3339_ms(t, sizeof(t), sqlite3_column_int64(s, 2)));
            cJSON_AddNumberToObject(d, "tick_age_ms", (double)age);
            lanes = cJSON_Parse((const char *)sqlite3_column_text(s, 3));
        } else {
            cJSON_AddStringToObject(d, "state", "not running");
        }
        store_done(s);
    }
    q = cJSON_AddObjectToObject(o, "queues");
    cJSON_AddNumberToObject(q, "plan",
                            (double)count(st, "SELECT count(*) FROM goals g WHERE is_template = 0"
                                              " AND (status = 'queued' OR (status = 'active' AND"
                                              " NOT EXISTS (SELECT 1 FROM work_items w WHERE"
                                              " w.goal_id = g.id)))"));
    cJSON_AddNumberToObject(q, "work",
                            (double)count(st, "SELECT count(*) FROM work_items w JOIN goals g ON"
                                              " g.id = w.goal_id WHERE w.status = 'ready' AND"
                                              " g.status = 'active'"));
    cJSON_AddNumberToObject(q, "waiting_on_dependencies",
                            (double)count(st, "SELECT count(*) FROM work_items WHERE status ="
                                              " 'queued'"));
    cJSON_AddItemToObject(o, "lanes", lanes ? lanes : cJSON_CreateObject());
    jobs = cJSON_AddArrayToObject(o, "running");
    if (store_prepare(st, &s, "SELECT r.id, r.goal_id, ifnull(r.item_id, ''), r.kind, r.lane,"
                              " ifnull(r.pid, 0), r.started_at, g.title, ifnull(w.key, '')"
                              " FROM runs r JOIN goals g ON g.id = r.goal_id"
                              " LEFT JOIN work_items w ON w.id = r.item_id"
                              " WHERE r.status = 'running' ORDER BY r.started_at") == 0) {
        while (sqlite3_step(s) == SQLITE_ROW) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "run_id", (const char *)sqlite3_column_text(s, 0));
            cJSON_AddStringToObject(j, "goal_id", (const char *)sqlite3_column_text(s, 1));
            cJSON_AddStringToObject(j, "goal_title", (const char *)sqlite3_column_text(s, 7));
            cJSON_AddStringToObject(j, "item_id", (const char *)sqlite3_column_text(s, 2));
            cJSON_AddStringToObject(j, "item_key", (const char *)sqlite3_column_text(s, 8));
            cJSON_AddStringToObject(j, "kind", (const char *)sqlite3_column_text(s, 3));
            cJSON_AddStringToObject(j, "lane", (const char *)sqlite3_column_text(s, 4));
            cJSON_AddNumberToObject(j, "pid", (double)sqlite3_column_int64(s, 5));
            cJSON_AddNumberToObject(j, "age_s", (double)(now - sqlite3_column_int64(s, 6)) / 1000);
            cJSON_AddItemToArray(jobs, j);
        }
        store_done(s);
    }
    /* what each running job is doing now: its turn and last tool call */
    {
        cJSON *it;
        cJSON_ArrayForEach(it, jobs)
        {
            struct report_activity a;
            if (report_activity(st, cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_id")),
                                &a) != 0) {
                err_clear();
                continue;
            }
            cJSON_AddNumberToObject(it, "turn", a.turn);
            if (a.tool[0])
                cJSON_AddStringToObject(it, "last_tool", a.tool);
            else
                cJSON_AddNullToObject(it, "last_tool");
            cJSON_AddStringToObject(it, "last_tool_arg", a.tool_arg);
        }
    }
    /* the last error of any goal: a failed run or tool call */
    if (store_prepare(st, &s, "SELECT goal_id FROM events WHERE type IN ('run.failed',"
                              " 'run.timeout', 'run.aborted', 'tool_call.failed')"
                              " AND goal_id IS NOT NULL ORDER BY id DESC LIMIT 1") == 0) {
        char gid[ID_SIZE] = "";
        struct report_activity a;
        if (sqlite3_step(s) == SQLITE_ROW)
            snprintf(gid, sizeof(gid), "%s", (const char *)sqlite3_column_text(s, 0));
        store_done(s);
        if (gid[0] && report_activity(st, gid, &a) == 0 && a.last_error[0]) {
            char t[TIME_RFC3339_MAX];
            cJSON *e = cJSON_AddObjectToObject(o, "last_error");
            cJSON_AddStringToObject(e, "goal_id", gid);
            cJSON_AddStringToObject(e, "time",
                                    time_format_rfc3339_ms(t, sizeof(t), a.last_error_at));
            cJSON_AddStringToObject(e, "message", a.last_error);
        } else {
            cJSON_AddNullToObject(o, "last_error");
        }
    }
    br = cJSON_AddArrayToObject(o, "breakers");
    if (store_prepare(st, &s, "SELECT error_class, state, failures FROM breakers WHERE state <>"
                              " 'closed' ORDER BY error_class") == 0) {
        while (sqlite3_step(s) == SQLITE_ROW) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "error_class", (const char *)sqlite3_column_text(s, 0));
            cJSON_AddStringToObject(b, "state", (const char *)sqlite3_column_text(s, 1));
            cJSON_AddNumberToObject(b, "failures", sqlite3_column_int(s, 2));
            cJSON_AddItemToArray(br, b);
        }
        store_done(s);
    }
    cJSON_AddNumberToObject(o, "open_escalations",
                            (double)count(st, "SELECT count(*) FROM escalations WHERE status ="
                                              " 'open'"));
    if (cli_flag(c, "json")) {
        cli_print_json(o);
    } else {
        const cJSON *it;
        printf("daemon     %s", cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")));
        if (cJSON_GetObjectItem(d, "pid"))
            printf(" (pid %.0f, last tick %s)", cJSON_GetNumberValue(cJSON_GetObjectItem(d, "pid")),
                   cJSON_GetStringValue(cJSON_GetObjectItem(d, "last_tick")));
        printf("\nqueues     plan %.0f, work %.0f, waiting on dependencies %.0f\n",
               cJSON_GetNumberValue(cJSON_GetObjectItem(q, "plan")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(q, "work")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(q, "waiting_on_dependencies")));
        printf("running    %d job%s\n", cJSON_GetArraySize(jobs),
               cJSON_GetArraySize(jobs) == 1 ? "" : "s");
        cJSON_ArrayForEach(it, jobs)
        {
            /* named by goal and item; then what it does (80 columns) */
            char l[1024];
            const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(it, "item_key"));
            const char *tool = cJSON_GetStringValue(cJSON_GetObjectItem(it, "last_tool"));
            snprintf(l, sizeof(l), "%s %s%s%s (goal %.8s), %.0f s",
                     cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")), key, *key ? " of " : "",
                     cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_title")),
                     cJSON_GetStringValue(cJSON_GetObjectItem(it, "goal_id")),
                     cJSON_GetNumberValue(cJSON_GetObjectItem(it, "age_s")));
            printf("           %s\n", term_fit(l, 80 - 11));
            snprintf(l, sizeof(l), "turn %.0f%s%s%s%s",
                     cJSON_GetNumberValue(cJSON_GetObjectItem(it, "turn")), tool ? ", last " : "",
                     tool ? tool : "", tool ? ": " : "",
                     tool ? cJSON_GetStringValue(cJSON_GetObjectItem(it, "last_tool_arg")) : "");
            printf("             %s\n", term_fit(l, 80 - 13));
        }
        printf("breakers   ");
        if (cJSON_GetArraySize(br) == 0)
            printf("all closed");
        cJSON_ArrayForEach(it, br) printf("%s %s  ",
                                          cJSON_GetStringValue(cJSON_GetObjectItem(it, "error_class")),
                                          cJSON_GetStringValue(cJSON_GetObjectItem(it, "state")));
        printf("\nescalations %.0f open\n",
               cJSON_GetNumberValue(cJSON_GetObjectItem(o, "open_escalations")));
        if (cJSON_IsObject(cJSON_GetObjectItem(o, "last_error"))) {
            const cJSON *e = cJSON_GetObjectItem(o, "last_error");
            char l[1024];
            snprintf(l, sizeof(l), "goal %.8s at %s",
                     cJSON_GetStringValue(cJSON_GetObjectItem(e, "goal_id")),
                     cJSON_GetStringValue(cJSON_GetObjectItem(e, "time")));
            printf("last error %s\n           %s\n", l,
                   term_fit(cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")), 80 - 11));
        }
    }
    /* like an init script's status: 3 when the daemon is not running */
    code = strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")), "running") ? 3 : EXIT_OK;
    cJSON_Delete(o);
    return code;
}

const struct cli_command cmd_status = {
    .name = "status",
    .args = "",
    .summary = "daemon heartbeat, running jobs and what they do, queues, last error",
    .details = "Each running job is named by its goal and item, with its turn and last\n"
               "tool call; the last failed run or tool call of any goal is shown.\n"
               "Exit 0 when the daemon is running, 3 when it is not (or stale),\n"
               "as an init script's status does; the output is printed either way.",
    .opts = (const struct cli_opt[]){{"json", NULL, "print JSON"}, {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "{\"daemon\": {\"state\": \"running|stale|not running\", \"pid\", \"started_at\", "
                  "\"last_tick\", \"tick_age_ms\"}, \"queues\": {\"plan\", \"work\", "
                  "\"waiting_on_dependencies\"}, \"lanes\": {...}, \"running\": [{\"run_id\", "
                  "\"goal_id\", \"goal_title\", \"item_id\", \"item_key\", \"kind\", \"lane\", \"pid\", "
                  "\"age_s\", \"turn\", \"last_tool\", \"last_tool_arg\"}], \"breakers\": "
                  "[{\"error_class\", \"state\", \"failures\"}], \"open_escalations\", "
                  "\"last_error\": {\"goal_id\", \"time\", \"message\"} or null}",
    .readonly = 1,
};
