/*
 * goald demo : a whole goal end to end on the embedded defaults.
 *
 * In a fresh temporary folder: a git repository holding a small project
 * whose test fails, a bare repository as its `origin`, and a database.  A
 * goal to fix the test is submitted and `goald daemon --once` carries it:
 * elaborate, plan, execute in the sandbox, gates, review, commit, push.
 * The model is the script installed with the binary (no network, no key)
 * unless GOALD_LLM_* names one.  Exit 0 only if the goal completed with
 * its gates passing.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lifecycle/intake.h"
#include "lifecycle/report.h"
#include "store/artifact.h"
#include "store/item.h"
#include "store/status.h"
#include "util/config.h"
#include "util/embedded.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "vcs/repo.h"

static int write_embedded(const char *dir, const char *prefix, char *script, size_t sn)
{
    for (const struct embedded_file *f = embedded_demo; f->name; f++) {
        char path[PATH_MAX], parent[PATH_MAX];
        const char *rel = f->name;
        int rc, w;
        if (!strncmp(rel, prefix, strlen(prefix)))
            rel += strlen(prefix);
        else if (strcmp(rel, "demo.jsonl") != 0)
            continue;
        if (!strcmp(f->name, "demo.jsonl"))
            w = snprintf(path, sizeof(path), "%s", script);
        else
            w = snprintf(path, sizeof(path), "%s/%s", dir, rel);
        if (w < 0 || (size_t)w >= sizeof(path))
            return err_set(ERR_INVALID, "%s/%s: path too long", dir, rel);
        if ((rc = fs_dirname(parent, sizeof(parent), path)) != 0 ||
            (rc = fs_mkdir_p(parent, 0700)) != 0 ||
            (rc = fs_write_atomic(path, f->data, f->len, 0644)) != 0)
            return rc;
        (void)sn;
    }
    return 0;
}

/* Has the user named a model of their own? */
static int model_from_env(void)
{
    static const char *const vars[] = {"GOALD_LLM_PROVIDER", "GOALD_LLM_BASE_URL",
                                       "GOALD_LLM_MODEL", "GOALD_LLM_MODELS", "GOALD_LLM_SCRIPT",
                                       NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]) && *getenv(vars[i]))
            return 1;
    return 0;
}

struct demo_paths {
    char dir[PATH_MAX], repo[PATH_MAX], origin[PATH_MAX], db[PATH_MAX], script[PATH_MAX];
    int keep; /* --keep: the folder stays */
};

/* path (in the demo's folder) as the demo prints it: whole when the
 * folder is kept, else its name in the folder, which is removed at the
 * end (no path is shown that will not be there). */
static const char *shown(const struct demo_paths *d, const char *path)
{
    size_t n = strlen(d->dir);

    if (d->keep || strncmp(path, d->dir, n) != 0 || path[n] != '/')
        return path;
    return path + n + 1;
}

/* 1. the project, its repository and a bare remote; 2. the model: the
 * installed script unless GOALD_LLM_* names one. */
static int demo_setup(struct cli_ctx *c, const struct demo_paths *d)
{
    char script[PATH_MAX];

    if (path_fmt(script, sizeof(script), "%s", d->script) != 0 ||
        write_embedded(d->repo, "demo-project/", script, sizeof(script)) != 0 ||
        vcs_repo_init_commit(d->repo, "main", "A small project whose test fails") != 0 ||
        vcs_repo_init_bare(d->origin) != 0 || vcs_remote_set(d->repo, "origin", d->origin) != 0)
        return cli_fail(EXIT_FAIL, "demo: %s", err_last());
    printf("  project   %s (add.sh subtracts; sh test.sh fails)\n", shown(d, d->repo));
    if (!model_from_env()) {
        setenv("GOALD_LLM_PROVIDER", "script", 1);
        setenv("GOALD_LLM_SCRIPT", d->script, 1);
        printf("  model     the scripted demo model (%s)\n", shown(d, d->script));
    } else {
        printf("  model     from GOALD_LLM_*\n");
    }
    if (config_load(c->config_path) != 0)
        return cli_fail(EXIT_USAGE, "%s", err_last());
    return EXIT_OK;
}

/* 3. the goal, submitted; its id into id. */
static int demo_submit(const struct demo_paths *d, char id[ID_SIZE])
{
    char json[PATH_MAX * 2];
    struct goal *g = NULL;
    store *st = NULL;

    /* truncation: ok, the repo path is under PATH_MAX, the rest fixed */
    snprintf(json, sizeof(json),
             "{\"title\": \"Fix add.sh so that the tests pass\","
             " \"description\": \"add.sh A B must print A + B; sh test.sh must exit 0.\","
             " \"repo\": \"%s\", \"base_branch\": \"main\","
             " \"success_criteria\": [\"sh test.sh exits 0\"],"
             " \"verification\": [{\"name\": \"tests\", \"type\": \"test\", \"command\":"
             " \"sh test.sh\", \"must_pass\": true, \"timeout_s\": 120}],"
             " \"budget\": {\"max_tokens\": 200000},"
             " \"publish\": {\"push\": true, \"remote\": \"origin\", \"pull_request\": false}}",
             d->repo);
    if (intake_parse(&g, json, strlen(json), "demo goal") != 0)
        return cli_fail(EXIT_FAIL, "demo: %s", err_last());
    if (store_open(&st, d->db) != 0 || intake_submit(st, g, id) != 0) {
        store_goal_free(g);
        store_close(st);
        return cli_fail(EXIT_FAIL, "demo: %s", err_last());
    }
    store_goal_free(g);
    store_close(st);
    printf("  goal      %s\n\n", id);
    fflush(stdout);
    return EXIT_OK;
}

static int print_commit(const struct store_artifact *a, void *ctx)
{
    (void)ctx;
    printf("commit   %s\n", a->hash);
    return 0;
}

/* 5. what came of it: the report, the branch and its commits; EXIT_OK
 * only if the goal completed with every item done and verified. */
static int demo_result(const struct demo_paths *d, const char *id)
{
    struct goal *g = NULL;
    store *st = NULL;
    int code = EXIT_FAIL, completed = 0, verified = 0, items = 0;

    if (store_open(&st, d->db) != 0)
        return cli_fail(EXIT_FAIL, "demo: %s", err_last());
    printf("\n");
    report_write_text(st, id, stdout);
    if (store_goal_get(st, id, &g) == 0 &&
        store_item_count_done_verified(st, id, &items, &verified) == 0) {
        const char *branch = g->branch ? g->branch : "";
        completed = goal_status_of(g->status) == GOAL_COMPLETED;
        printf("\nbranch   %s (pushed to %s)\n", branch, shown(d, d->origin));
        if (d->keep)
            printf("see      git -C %s log --stat %s\n", d->repo, branch);
    }
    store_goal_free(g);
    store_artifact_each(st, id, "commit", print_commit, NULL);
    err_clear(); /* what could not be read is simply not shown */
    if (completed && items > 0 && verified == items) {
        printf("\ndemo: the goal completed with its gates passing\n");
        code = EXIT_OK;
    } else if (d->keep) {
        fprintf(stderr, "goald: demo: the goal did not complete with its gates passing "
                        "(see goald --db %s events --goal %.8s)\n",
                d->db, id);
    } else {
        fprintf(stderr, "goald: demo: the goal did not complete with its gates passing "
                        "(goald demo --keep keeps the folder to look into)\n");
    }
    store_close(st);
    return code;
}

/* The demo in dir (made by run()). */
static int demo(struct cli_ctx *c, const char *dir)
{
    struct demo_paths d;
    char id[ID_SIZE];
    struct daemon_opts o;
    int code;

    d.keep = cli_flag(c, "keep");
    if (path_fmt(d.dir, sizeof(d.dir), "%s", dir) != 0 ||
        path_fmt(d.repo, sizeof(d.repo), "%s/project", dir) != 0 ||
        path_fmt(d.origin, sizeof(d.origin), "%s/origin.git", dir) != 0 ||
        path_fmt(d.db, sizeof(d.db), "%s/goald.db", dir) != 0 ||
        path_fmt(d.script, sizeof(d.script), "%s/demo.jsonl", dir) != 0)
        return cli_fail(EXIT_FAIL, "demo: %s", err_last());
    printf("goald demo in %s\n", dir);
    if (!d.keep)
        printf("  (a temporary folder, removed at the end: --keep keeps it)\n");
    if ((code = demo_setup(c, &d)) != EXIT_OK || (code = demo_submit(&d, id)) != EXIT_OK)
        return code;

    /* 4. the daemon, until nothing is runnable */
    memset(&o, 0, sizeof(o));
    o.db_path = d.db;
    o.config_path = c->config_path;
    o.once = 1;
    o.log_level = log_get_level(); /* the command's level: quiet unless asked */
    if (daemon_run(&o) != 0)
        return cli_fail(EXIT_FAIL, "demo: daemon: %s", err_last());
    return demo_result(&d, id);
}

/* Make the temporary folder, run the demo in it, and remove it unless
 * --keep (a demo leaves nothing behind). */
static int run(struct cli_ctx *c)
{
    char dir[] = "/tmp/goald-demo-XXXXXX";
    int code;

    if (!mkdtemp(dir))
        return cli_fail(EXIT_FAIL, "demo: cannot make a temporary folder");
    code = demo(c, dir);
    fflush(stdout);
    if (cli_flag(c, "keep")) {
        printf("kept     %s\n", dir);
    } else if (fs_remove_tree(dir) != 0) {
        fprintf(stderr, "goald: demo: %s\n", err_last());
        if (code == EXIT_OK)
            code = EXIT_FAIL;
    } else {
        printf("removed  the demo's folder (goald demo --keep keeps it)\n");
    }
    return code;
}

const struct cli_command cmd_demo = {
    .name = "demo",
    .args = "",
    .summary = "a whole goal end to end on the embedded defaults (no network, no API key)",
    .details = "Makes a temporary repository whose test fails, submits a goal to fix it and "
               "runs the\ndaemon until it is done, then prints the report, the branch and the "
               "commit.\nWith GOALD_LLM_* set, that model does the work instead of the scripted "
               "one.\nExit 0 only if the goal completed with its gates passing.  The temporary "
               "folder is\nremoved at the end unless --keep.",
    .opts = (const struct cli_opt[]){{"keep", NULL,
                                      "keep the temporary folder (project, origin, database)"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
};
