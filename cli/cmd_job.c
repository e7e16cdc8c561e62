/* goald job RUN_ID / goald claim --lane L : run one unit of work. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli/cli.h"
#include "lifecycle/claim.h"
#include "lifecycle/control.h"
#include "lifecycle/job.h"
#include "lifecycle/stages.h"
#include "util/timeutil.h"

static int run_job(struct cli_ctx *c)
{
    char id[ID_SIZE];
    struct job_outcome o;
    store *st;
    int rc;

    /* The job holds the API key in its memory and starts the model's
     * commands: not dumpable, its /proc/PID/{environ,mem,fd} and ptrace are
     * closed to other processes of the same user (root excepted). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if ((rc = cli_resolve(c, STORE_KIND_RUN, c->pos[0], id)) != 0)
        return rc;
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = job_run(st, id, &o)) != 0)
        return cli_fail(EXIT_FAIL, "job %s: %s", id, err_last());
    if (cli_flag(c, "json")) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "run_id", id);
        cJSON_AddStringToObject(j, "status", o.status);
        cJSON_AddStringToObject(j, "error_class", o.error_class);
        cJSON_AddStringToObject(j, "next", o.next);
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        printf("run %s: %s%s%s%s%s\n", id, o.status, o.error_class[0] ? " (" : "", o.error_class,
               o.error_class[0] ? ")" : "", o.next[0] ? "" : "");
        if (o.next[0])
            printf("next: %s\n", o.next);
    }
    /* the run was carried through: a failed run is not a failed job */
    return EXIT_OK;
}

const struct cli_command cmd_job = {
    .name = "job",
    .args = "RUN_ID",
    .summary = "run one claimed unit of work (elaborate, plan, execute, publish) in this process",
    .details = "The daemon starts one `goald job` process per claimed run; `goald claim` claims "
               "one by hand.\nExit 0 when the run reached a terminal state, failed or not.",
    .opts =
        (const struct cli_opt[]){{"json", NULL, "print the outcome as JSON"}, {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run_job,
    .json_shape = "{\"run_id\", \"status\", \"error_class\", \"next\"}",
    .hidden = 1, /* internal: the daemon runs it */
};

static int run_claim(struct cli_ctx *c)
{
    const char *lane = cli_opt(c, "lane");
    struct claim cl;
    struct claim_scope scope = {0};
    char blocked[64], node[STORE_NODE_ID_MAX];
    store *st;
    int rc;

    if (!lane || (strcmp(lane, "plan") && strcmp(lane, "work")))
        return cli_fail(EXIT_USAGE, "claim: --lane: expected plan or work");
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    /* as the daemon does every tick: a configuration error's breaker
     * closes when the configuration changed (breaker_gate() only reads) */
    if ((rc = breaker_config_sweep(st, time_now_ms())) < 0)
        return cli_fail_err(rc);
    /* the run is this node's: its daemon recovers it by its pid */
    if ((rc = store_node_id(node, sizeof(node), store_path(st))) != 0)
        return cli_fail_err(rc);
    scope.node_id = node;
    rc = claim_next(st, lane, CLAIM_NOW, &scope, &cl, blocked, sizeof(blocked));
    if (rc == ERR_NOTFOUND) {
        if (blocked[0])
            fprintf(stderr, "goald: claims paused: the %s breaker is open\n", blocked);
        return EXIT_FAIL;
    }
    if (rc)
        return cli_fail_err(rc);
    if (cli_flag(c, "json")) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "run_id", cl.run_id);
        cJSON_AddStringToObject(j, "goal_id", cl.goal_id);
        cJSON_AddStringToObject(j, "item_id", cl.item_id);
        cJSON_AddStringToObject(j, "kind", cl.kind);
        cJSON_AddStringToObject(j, "lane", cl.lane);
        cJSON_AddNumberToObject(j, "attempt", cl.attempt);
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        printf("%s\n", cl.run_id);
    }
    return EXIT_OK;
}

const struct cli_command cmd_claim = {
    .name = "claim",
    .args = "",
    .summary = "claim the next unit of work of a lane; prints the run id (exit 1: none)",
    .details = "For tests and debugging: the daemon claims by itself. Run the claimed unit with "
               "`goald job RUN_ID`.",
    .opts = (const struct cli_opt[]){{"lane", "L", "plan or work"},
                                     {"json", NULL, "print the claim as JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run_claim,
    .json_shape = "{\"run_id\", \"goal_id\", \"item_id\", \"kind\", \"lane\", \"attempt\", ...}",
    .hidden = 1,
};
