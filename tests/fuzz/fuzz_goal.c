/*
 * fuzz_goal - lifecycle/intake.c: intake_parse(), the strict validator of
 * a goal's JSON, on any bytes (not NUL-terminated: it takes a length).
 *
 * "repo" is probed with libgit2 on the file system; the harness makes two
 * repositories in the working folder for the seeds to name: fuzz-repo
 * (branches main and dev) and fuzz-unborn (no commit yet).
 *
 * Invariants checked: on success the goal is complete and consistent
 * (title, status queued, priority 0-100, budgets unset or positive, an
 * absolute repo path, a base branch only with a repo, a template iff a
 * schedule that cron_parse accepts, spec and the JSON fields that parse
 * back); on failure nothing is returned and the message names the file.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "lifecycle/intake.h"
#include "store/goal.h"
#include "tests/fuzz/fuzz.h"
#include "util/cron.h"
#include "util/err.h"
#include "vcs/clone.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    /* made once per folder; a rename makes it safe under -jobs */
    if (system("set -e; [ -d fuzz-repo/.git ] && [ -d fuzz-unborn/.git ] && exit 0; "
               "d=$(mktemp -d fuzz-tmp.XXXXXX); git init -q -b main \"$d/r\"; "
               "git -C \"$d/r\" -c user.name=fuzz -c user.email=fuzz@example.com "
               "commit -q --allow-empty -m init; git -C \"$d/r\" branch dev; "
               "git init -q -b trunk \"$d/u\"; "
               "mv -T \"$d/r\" fuzz-repo 2>/dev/null || true; "
               "mv -T \"$d/u\" fuzz-unborn 2>/dev/null || true; rm -rf \"$d\"") != 0) {
        fprintf(stderr, "fuzz_goal: cannot make the test repositories (is git installed?)\n");
        exit(1);
    }
    return 0;
}

static void check_json(const char *text, int want_array, const char *what)
{
    cJSON *j = cJSON_Parse(text);

    FUZZ_CHECK(want_array ? cJSON_IsArray(j) : cJSON_IsObject(j), "%s does not parse back: %s",
               what, text);
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct goal *sentinel = (struct goal *)&sentinel, *g = sentinel;
    int rc = intake_parse(&g, (const char *)data, size, "fuzz.json");

    if (rc != 0) {
        FUZZ_CHECK(rc == ERR_INVALID, "intake_parse returned %d", rc);
        FUZZ_CHECK(g == sentinel, "a refused goal was returned");
        FUZZ_CHECK(!strncmp(err_last(), "fuzz.json: ", 11), "message without the file: %s",
                   err_last());
        return 0;
    }
    FUZZ_CHECK(g && g != sentinel, "accepted without a goal");
    FUZZ_CHECK(g->id[0] == '\0', "id set before submit");
    FUZZ_CHECK(g->title && g->title[0] && g->description, "title or description missing");
    FUZZ_CHECK(g->status && !strcmp(g->status, "queued"), "status %s", g->status);
    FUZZ_CHECK(g->priority >= 0 && g->priority <= 100, "priority %d", g->priority);
    FUZZ_CHECK(g->budget_max_tokens == -1 || g->budget_max_tokens > 0, "max_tokens %lld",
               (long long)g->budget_max_tokens);
    FUZZ_CHECK(g->budget_max_hours == -1 || g->budget_max_hours > 0, "max_hours %g",
               g->budget_max_hours);
    FUZZ_CHECK(g->budget_max_cost_usd == -1 || g->budget_max_cost_usd > 0, "max_cost %g",
               g->budget_max_cost_usd);
    /* a local repository by its absolute path, or a git URL (clone mode) */
    FUZZ_CHECK(!g->repo || g->repo[0] == '/' || vcs_repo_is_url(g->repo),
               "repo neither absolute nor a URL: %s", g->repo);
    FUZZ_CHECK(!g->repo || g->repo[0] != '-', "repo reads as an option: %s", g->repo);
    FUZZ_CHECK(!g->repo || g->repo[0] == '/' || g->base_branch, "URL %s without base_branch",
               g->repo);
    FUZZ_CHECK(!g->base_branch || g->repo, "base_branch %s without a repo", g->base_branch);
    FUZZ_CHECK(!g->parent_id && !g->branch && !g->worktree, "fields set that intake never sets");
    FUZZ_CHECK(g->is_template == (g->schedule != NULL), "template %d, schedule %s", g->is_template,
               g->schedule);
    if (g->schedule) {
        struct cron_expr c;
        FUZZ_CHECK(cron_parse(&c, g->schedule) == 0, "schedule %s does not parse", g->schedule);
    }
    FUZZ_CHECK(g->spec && g->success_criteria, "spec or success_criteria missing");
    check_json(g->spec, 0, "spec");
    check_json(g->success_criteria, 1, "success_criteria");
    if (g->verification)
        check_json(g->verification, 1, "verification");
    if (g->allowed_actions)
        check_json(g->allowed_actions, 1, "allowed_actions");
    if (g->publish)
        check_json(g->publish, 0, "publish");
    store_goal_free(g);
    return 0;
}
