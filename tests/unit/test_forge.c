/* Unit tests: vcs/forge pull requests and webhooks against
 * tests/fakes/fake_forge on loopback, and https token pushes against its
 * git door. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "tests/unit/vcshelp.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "vcs/commit.h"
#include "vcs/forge.h"
#include "vcs/push.h"
#include "vcs/repo.h"
#include "vcs/worktree.h"

#define SECRET "s3cr3t-forge-token-value"

static pid_t forge_pid;
static unsigned forge_port;
static char log_path[600];

/* Start fake_forge (next to this test binary, or in $GOALD_BUILD_DIR/tests). */
static void forge_start(const char *name, const char *token)
{
    char exe[PATH_MAX], bin[PATH_MAX + 32], pf[600], rel[128];
    const char *bd = getenv("GOALD_BUILD_DIR");
    ssize_t n;

    if (bd && *bd) {
        snprintf(bin, sizeof(bin), "%s/tests/fake_forge", bd);
    } else {
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        assert_true(n > 0);
        exe[n] = '\0';
        *strrchr(exe, '/') = '\0';
        snprintf(bin, sizeof(bin), "%s/fake_forge", exe);
    }
    snprintf(rel, sizeof(rel), "%s.port", name);
    testutil_tmp_path(pf, sizeof(pf), rel);
    snprintf(rel, sizeof(rel), "%s.jsonl", name);
    testutil_tmp_path(log_path, sizeof(log_path), rel);
    unlink(pf);
    unlink(log_path);
    forge_pid = fork();
    assert_true(forge_pid >= 0);
    if (forge_pid == 0) {
        /* a failed assertion must not leave the fake running */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (token)
            execl(bin, bin, "--port-file", pf, "--log", log_path, "--require-token", token,
                  (char *)NULL);
        else
            execl(bin, bin, "--port-file", pf, "--log", log_path, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && access(pf, F_OK) != 0; i++)
        time_sleep_ms(10);
    FILE *f = fopen(pf, "r");
    if (!f)
        fail_msg("fake_forge did not start (%s)", bin);
    assert_int_equal(fscanf(f, "%u", &forge_port), 1);
    fclose(f);
}

static void forge_stop(void)
{
    int st;
    pid_t pid = forge_pid;

    forge_pid = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* After each test: stop a fake that a failed assertion left running. */
static int teardown(void **state)
{
    (void)state;
    if (forge_pid > 0) {
        kill(forge_pid, SIGTERM);
        waitpid(forge_pid, NULL, 0);
        forge_pid = 0;
    }
    return 0;
}

/* The fake's log as a JSON array of entries (free with cJSON_Delete). */
static cJSON *forge_log(void)
{
    strbuf sb = STRBUF_INIT;
    cJSON *arr = cJSON_CreateArray();
    char *line, *save = NULL;

    assert_int_equal(fs_read_file(&sb, log_path, 16 << 20), 0);
    for (line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *e = cJSON_Parse(line);
        assert_non_null(e);
        cJSON_AddItemToArray(arr, e);
    }
    strbuf_release(&sb);
    return arr;
}

static const char *jget(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int count_requests(const cJSON *log, const char *method, const char *path)
{
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, log)
    {
        if (!strcmp(jget(e, "method", NULL), method) && !strcmp(jget(e, "path", NULL), path))
            n++;
    }
    return n;
}

static void set_base(const char *suffix)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", forge_port, suffix);
    setenv("GOALD_FORGE_BASE_URL", url, 1);
    assert_int_equal(config_load(NULL), 0);
}

static void test_parse_remote(void **state)
{
    char o[64], r[64];
    static const char *ok[][3] = {
        {"https://github.com/acme/widgets.git", "acme", "widgets"},
        {"https://github.com/acme/widgets", "acme", "widgets"},
        {"https://x-access-token@ghe.example.com/acme/widgets/", "acme", "widgets"},
        {"git@github.com:acme/widgets.git", "acme", "widgets"},
        {"ssh://git@gitea.example.com:2222/acme/widgets.git", "acme", "widgets"},
        {"file:///srv/git/acme/widgets.git", "acme", "widgets"},
        {"/srv/git/acme/widgets", "acme", "widgets"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (vcs_forge_parse_remote(o, sizeof(o), r, sizeof(r), ok[i][0]) != 0)
            fail_msg("%s: %s", ok[i][0], err_last());
        assert_string_equal(o, ok[i][1]);
        assert_string_equal(r, ok[i][2]);
    }
    assert_int_equal(vcs_forge_parse_remote(o, sizeof(o), r, sizeof(r), "https://github.com/x"),
                     ERR_INVALID);
    assert_int_equal(vcs_forge_parse_remote(o, sizeof(o), r, sizeof(r), "git@host:widgets.git"),
                     ERR_INVALID);
    assert_int_equal(vcs_forge_parse_remote(o, sizeof(o), r, sizeof(r), "widgets"), ERR_INVALID);
}

static void test_forge_from_config(void **state)
{
    struct vcs_forge f;
    (void)state;
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
    assert_int_equal(vcs_forge_from_config(&f, "git@github.com:acme/widgets.git"), 0);
    assert_string_equal(f.base_url, "https://api.github.com");
    assert_string_equal(f.owner, "acme");
    assert_string_equal(f.repo, "widgets");
    vcs_forge_release(&f);
    /* configured owner/repo win over the URL; base URL loses its final / */
    setenv("GOALD_FORGE_OWNER", "org", 1);
    setenv("GOALD_FORGE_REPO", "proj", 1);
    setenv("GOALD_FORGE_BASE_URL", "https://gitea.example.com/api/v1/", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(vcs_forge_from_config(&f, NULL), 0);
    assert_string_equal(f.base_url, "https://gitea.example.com/api/v1");
    assert_string_equal(f.owner, "org");
    assert_string_equal(f.repo, "proj");
    vcs_forge_release(&f);
    unsetenv("GOALD_FORGE_OWNER");
    unsetenv("GOALD_FORGE_REPO");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
    assert_int_equal(vcs_forge_from_config(&f, "not-a-url"), ERR_INVALID);
    assert_true(strstr(err_last(), "forge.owner") != NULL);
}

/* Two publishes open one pull request, with what was asked. */
static void pr_once(const char *suffix, const char *token)
{
    struct vcs_forge f;
    struct vcs_pr a = {0}, b = {0};
    const char *body = "| criterion | evidence |\n|---|---|\n| tests pass | `make test` ok |\n";
    cJSON *log, *e, *post = NULL;
    char want[256];

    forge_start(suffix[0] ? "gitea" : "github", token);
    set_base(suffix);
    if (token) {
        setenv("GOALD_FORGE_TOKEN", token, 1);
    }
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/acme/widgets.git"), 0);
    if (vcs_forge_pr_ensure(&a, &f, "Fix the failing test", "goald/fix-tests-0123abcd", "main",
                            body) != 0)
        fail_msg("ensure: %s", err_last());
    assert_int_equal(a.created, 1);
    assert_int_equal(a.number, 1);
    snprintf(want, sizeof(want), "http://127.0.0.1:%u/acme/widgets/pull/1", forge_port);
    assert_string_equal(a.url, want);
    /* a re-run finds it */
    assert_int_equal(vcs_forge_pr_ensure(&b, &f, "Fix the failing test (again)",
                                         "goald/fix-tests-0123abcd", "main", "other body"),
                     0);
    assert_int_equal(b.created, 0);
    assert_int_equal(b.number, 1);
    assert_string_equal(b.url, a.url);
    vcs_pr_release(&b);
    /* another branch is another pull request */
    assert_int_equal(vcs_forge_pr_ensure(&b, &f, "Other", "goald/other-aaaabbbb", "main", NULL), 0);
    assert_int_equal(b.created, 1);
    assert_int_equal(b.number, 2);
    vcs_pr_release(&b);
    assert_int_equal(vcs_forge_pr_find(&b, &f, "goald/none-00000000", "main"), ERR_NOTFOUND);
    vcs_pr_release(&b);

    log = forge_log();
    snprintf(want, sizeof(want), "%s/repos/acme/widgets/pulls", suffix);
    assert_int_equal(count_requests(log, "POST", want), 2);
    /* GitHub lists with a head filter; Gitea asks by base and head */
    assert_int_equal(count_requests(log, "GET", want), suffix[0] ? 0 : 4);
    if (suffix[0]) {
        snprintf(want, sizeof(want), "%s/repos/acme/widgets/pulls/main/goald/fix-tests-0123abcd",
                 suffix);
        assert_int_equal(count_requests(log, "GET", want), 2);
    }
    cJSON_ArrayForEach(e, log)
    {
        if (!strcmp(jget(e, "method", NULL), "POST")) {
            post = e;
            break;
        }
    }
    assert_non_null(post);
    assert_string_equal(jget(post, "json", "title"), "Fix the failing test");
    assert_string_equal(jget(post, "json", "head"), "goald/fix-tests-0123abcd");
    assert_string_equal(jget(post, "json", "base"), "main");
    assert_string_equal(jget(post, "json", "body"), body);
    assert_string_equal(jget(post, "headers", "Content-Type"), "application/json");
    /* the look-up asked for the head and base the GitHub way, with
     * GitHub's headers; Gitea's list has no head filter: page by page */
    cJSON_ArrayForEach(e, log)
    {
        if (!strcmp(jget(e, "method", NULL), "GET")) {
            if (suffix[0]) {
                assert_null(jget(e, "query", "page"));
                assert_null(jget(e, "headers", "X-GitHub-Api-Version"));
            } else {
                assert_string_equal(jget(e, "query", "state"), "open");
                assert_string_equal(jget(e, "query", "head"), "acme:goald/fix-tests-0123abcd");
                assert_string_equal(jget(e, "query", "base"), "main");
                assert_string_equal(jget(e, "headers", "X-GitHub-Api-Version"), "2022-11-28");
                assert_string_equal(jget(e, "headers", "Accept"), "application/vnd.github+json");
            }
            break;
        }
    }
    if (token) {
        cJSON_ArrayForEach(e, log)
        {
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "auth_ok")));
        }
    }
    cJSON_Delete(log);
    /* the token never reaches the log (the fake shows only the scheme) */
    assert_string_equal(cap("grep -c '%s' '%s'", SECRET, log_path), "0");
    vcs_pr_release(&a);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_FORGE_TOKEN");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

static void test_pr_github_once(void **state)
{
    (void)state;
    pr_once("", NULL);
}

static void test_pr_gitea_path_with_token(void **state)
{
    (void)state;
    pr_once("/api/v1", SECRET);
}

static void test_pr_bad_token(void **state)
{
    struct vcs_forge f;
    struct vcs_pr pr = {0};
    cJSON *log;

    (void)state;
    forge_start("badtoken", SECRET);
    set_base("");
    setenv("GOALD_FORGE_TOKEN", "wrong-token-value", 1);
    setenv("GOALD_FORGE_AUTH_SCHEME", "bearer", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(vcs_forge_from_config(&f, "git@h:acme/widgets.git"), 0);
    assert_int_equal(vcs_forge_pr_ensure(&pr, &f, "t", "goald/x-1", "main", "b"), ERR_FAIL);
    assert_true(strstr(err_last(), "HTTP 401") != NULL);
    assert_true(strstr(err_last(), "Bad credentials") != NULL);
    assert_null(strstr(err_last(), "wrong-token-value"));
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 1); /* no POST after a failed look-up */
    assert_string_equal(jget(cJSON_GetArrayItem(log, 0), "headers", "Authorization"), "Bearer ***");
    cJSON_Delete(log);
    vcs_pr_release(&pr);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_FORGE_TOKEN");
    unsetenv("GOALD_FORGE_AUTH_SCHEME");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

static void test_webhook(void **state)
{
    char url[256];
    int sent = -1;
    cJSON *log;
    const char *payload = "{\"event\":\"goal.completed\",\"goal\":{\"id\":\"g1\"}}";

    (void)state;
    forge_start("hook", NULL);
    /* not configured: nothing sent, not an error */
    config_reset();
    assert_int_equal(vcs_webhook_post(&sent, NULL, payload), 0);
    assert_int_equal(sent, 0);
    /* configured */
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", forge_port);
    setenv("GOALD_NOTIFY_WEBHOOK_URL", url, 1);
    assert_int_equal(config_load(NULL), 0);
    if (vcs_webhook_post(&sent, NULL, payload) != 0)
        fail_msg("webhook: %s", err_last());
    assert_int_equal(sent, 1);
    /* a failing receiver is an error value, and the message hides the path */
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook/fail", forge_port);
    assert_int_equal(vcs_webhook_post(&sent, url, payload), ERR_FAIL);
    assert_int_equal(sent, 0);
    assert_true(strstr(err_last(), "HTTP 500") != NULL);
    assert_null(strstr(err_last(), "/hook/fail"));
    log = forge_log();
    assert_int_equal(count_requests(log, "POST", "/hook"), 1);
    assert_string_equal(jget(cJSON_GetArrayItem(log, 0), "body", NULL), payload);
    assert_string_equal(jget(cJSON_GetArrayItem(log, 0), "json", "event"), "goal.completed");
    assert_string_equal(jget(cJSON_GetArrayItem(log, 0), "headers", "Content-Type"),
                        "application/json");
    cJSON_Delete(log);
    forge_stop();
    /* nobody listening: an error, quickly */
    int64_t t0 = time_mono_ms();
    assert_int_not_equal(vcs_webhook_post(&sent, url, payload), 0);
    assert_true(strstr(err_last(), "webhook") != NULL);
    assert_true(time_mono_ms() - t0 < 5000);
    unsetenv("GOALD_NOTIFY_WEBHOOK_URL");
    config_reset();
}

/* https-style push: the remote asks for Basic auth and gets the token
 * from the variable named in the config, never more than once. */
static void test_push_token_auth(void **state)
{
    char repo[600], url[256];
    cJSON *log, *e;
    int with_auth = 0;

    (void)state;
    testutil_tmp_path(repo, sizeof(repo), "tokrepo");
    assert_int_equal(make_repo(repo), 0);
    forge_start("gitdoor", SECRET);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/git/acme/widgets.git", forge_port);
    assert_int_equal(sh("git -C '%s' remote add origin '%s'", repo, url), 0);

    /* no variable set: a clear error naming the variable */
    unsetenv("GOALD_PUSH_TOKEN");
    setenv("GOALD_VCS_PUSH_TOKEN_ENV", "GOALD_PUSH_TOKEN", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_not_equal(vcs_push(repo, "origin", "main"), 0);
    assert_true(strstr(err_last(), "push to origin") != NULL);
    assert_true(strstr(err_last(), "GOALD_PUSH_TOKEN is not set") != NULL);

    /* set: offered once as Basic x-access-token:<token>; the fake then
     * answers 404 (it has no git), which is the error we get */
    setenv("GOALD_PUSH_TOKEN", SECRET, 1);
    assert_int_not_equal(vcs_push(repo, "origin", "main"), 0);
    assert_true(strstr(err_last(), "push to origin") != NULL);
    assert_null(strstr(err_last(), SECRET));
    log = forge_log();
    cJSON_ArrayForEach(e, log)
    {
        if (jget(e, "headers", "Authorization")) {
            with_auth++;
            assert_string_equal(jget(e, "headers", "Authorization"), "Basic ***");
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "auth_ok")));
        }
    }
    assert_int_equal(with_auth, 1);
    cJSON_Delete(log);

    /* a wrong token is offered once, then the push gives up */
    setenv("GOALD_PUSH_TOKEN", "not-the-token", 1);
    assert_int_not_equal(vcs_push(repo, "origin", "main"), 0);
    assert_true(strstr(err_last(), "rejected") != NULL);
    assert_null(strstr(err_last(), "not-the-token"));
    forge_stop();
    unsetenv("GOALD_PUSH_TOKEN");
    unsetenv("GOALD_VCS_PUSH_TOKEN_ENV");
    config_reset();
}

/* The whole publishing path as the lifecycle will drive it, with a
 * "crash" (everything run twice) after each step: one commit, one push,
 * one pull request. */
static void test_publish_flow_twice(void **state)
{
    char repo[600], bare[600], wtp[600], url[700], br[128], head[VCS_OID_HEX];
    struct vcs_commit_msg m = {.title = "Fix the failing test",
                               .body = "Evidence: make test passes",
                               .goal_id = "0123abcd-0000-4000-8000-000000000001",
                               .work_item_id = "wi-1",
                               .gates = "tests=pass"};
    struct vcs_commit_result r1 = {0}, r2 = {0};
    struct vcs_forge f;
    struct vcs_pr p1 = {0}, p2 = {0};
    vcs_worktree *wt = NULL;
    cJSON *log;
    int sent = 0;

    (void)state;
    testutil_tmp_path(repo, sizeof(repo), "flow/repo");
    testutil_tmp_path(bare, sizeof(bare), "flow/srv/acme/widgets.git");
    testutil_tmp_path(wtp, sizeof(wtp), "flow/worktrees/0123abcd");
    assert_int_equal(make_repo(repo), 0);
    assert_int_equal(sh("git init -q --bare '%s' && git -C '%s' remote add origin 'file://%s'",
                        bare, repo, bare),
                     0);
    assert_int_equal(vcs_branch_name_for_goal(br, sizeof(br), m.title, m.goal_id), 0);
    assert_string_equal(br, "goald/fix-the-failing-test-0123abcd");
    forge_start("flow", NULL);
    set_base("");

    for (int run = 0; run < 2; run++) {
        struct vcs_commit_result *r = run ? &r2 : &r1;
        struct vcs_pr *pr = run ? &p2 : &p1;
        char p[700];

        assert_int_equal(vcs_worktree_create(&wt, repo, "main", br, wtp), 0);
        if (run == 0) {
            snprintf(p, sizeof(p), "%s/fix.txt", wtp);
            write_text(p, "fixed\n");
        }
        assert_int_equal(vcs_commit_item(r, wt, "main", &m), 0);
        assert_int_equal(r->created, run == 0);
        assert_int_equal(vcs_worktree_head(head, wt), 0);
        assert_int_equal(vcs_push(repo, "origin", br), 0);
        assert_int_equal(vcs_remote_url(url, sizeof(url), repo, "origin"), 0);
        assert_int_equal(vcs_forge_from_config(&f, url), 0);
        assert_string_equal(f.owner, "acme");
        assert_string_equal(f.repo, "widgets");
        if (vcs_forge_pr_ensure(pr, &f, m.title, br, "main", "evidence table") != 0)
            fail_msg("pr: %s", err_last());
        assert_int_equal(pr->created, run == 0);
        vcs_forge_release(&f);
        vcs_worktree_free(wt);
        wt = NULL;
    }
    assert_string_equal(r1.sha, r2.sha);
    assert_string_equal(head, r1.sha);
    assert_int_equal(p1.number, p2.number);
    assert_string_equal(p1.url, p2.url);
    assert_string_equal(cap("git -C '%s' rev-list --count main..%s", repo, br), "1");
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/%s", bare, br), r1.sha);
    assert_string_equal(cap("git -C '%s' log -1 --format=%%B refs/heads/%s | "
                            "git interpret-trailers --parse",
                            bare, br),
                        "Goal-Id: 0123abcd-0000-4000-8000-000000000001\nWork-Item-Id: wi-1\n"
                        "Gates: tests=pass");

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", forge_port);
    assert_int_equal(vcs_webhook_post(&sent, url, "{\"event\":\"goal.completed\"}"), 0);
    assert_int_equal(sent, 1);
    log = forge_log();
    assert_int_equal(count_requests(log, "POST", "/repos/acme/widgets/pulls"), 1);
    assert_int_equal(count_requests(log, "POST", "/hook"), 1);
    cJSON_Delete(log);

    assert_int_equal(vcs_worktree_remove(repo, wtp), 0);
    assert_int_not_equal(access(wtp, F_OK), 0);
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/%s", repo, br), r1.sha);
    vcs_commit_result_release(&r1);
    vcs_commit_result_release(&r2);
    vcs_pr_release(&p1);
    vcs_pr_release(&p2);
    forge_stop();
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

/* POST a control request to the fake (/_fake/seed, /_fake/inject). */
static void fake_post(const char *what, const char *json)
{
    const char *r = cap("curl -s -o /dev/null -w '%%{http_code}' -X POST "
                        "http://127.0.0.1:%u/_fake/%s -d '%s'",
                        forge_port, what, json);
    assert_string_equal(r, "200");
}

/* The PR look-up picks the goal's PR among: the same branch into another
 * base, a fork's same-named branch, and 60 newer pull requests (Gitea:
 * asked by base and head, not read from the list page by page). */
static void lookup_among(const char *suffix)
{
    struct vcs_forge f;
    struct vcs_pr pr = {0};
    strbuf many = STRBUF_INIT;
    cJSON *log;

    forge_start(suffix[0] ? "lookup-gitea" : "lookup-github", NULL);
    set_base(suffix);
    fake_post("seed", "{\"repo\":\"acme/widgets\",\"prs\":["
                      "{\"head\":\"goald/fix-1\",\"base\":\"develop\"},"
                      "{\"head\":\"goald/fix-1\",\"base\":\"main\",\"head_owner\":\"mallory\"},"
                      "{\"head\":\"goald/fix-1\",\"base\":\"main\",\"title\":\"ours\"}]}");
    assert_int_equal(strbuf_adds(&many, "{\"repo\":\"acme/widgets\",\"prs\":["), 0);
    for (int i = 0; i < 60; i++)
        assert_int_equal(
            strbuf_addf(&many, "%s{\"head\":\"feature/n%d\",\"base\":\"main\"}", i ? "," : "", i),
            0);
    assert_int_equal(strbuf_adds(&many, "]}"), 0);
    fake_post("seed", strbuf_cstr(&many));
    strbuf_release(&many);
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/acme/widgets.git"), 0);
    if (vcs_forge_pr_ensure(&pr, &f, "t", "goald/fix-1", "main", "b") != 0)
        fail_msg("ensure: %s", err_last());
    assert_int_equal(pr.created, 0);
    assert_int_equal(pr.number, 3); /* not #1 (develop) nor #2 (the fork's) */
    vcs_pr_release(&pr);
    /* into develop: that one */
    assert_int_equal(vcs_forge_pr_find(&pr, &f, "goald/fix-1", "develop"), 0);
    assert_int_equal(pr.number, 1);
    vcs_pr_release(&pr);
    /* a branch only a fork has: none of ours, a new one is opened */
    fake_post("seed", "{\"repo\":\"acme/widgets\",\"prs\":[{\"head\":\"goald/only-fork\","
                      "\"base\":\"main\",\"head_owner\":\"mallory\"}]}");
    assert_int_equal(vcs_forge_pr_ensure(&pr, &f, "t", "goald/only-fork", "main", "b"), 0);
    assert_int_equal(pr.created, 1);
    vcs_pr_release(&pr);
    log = forge_log();
    if (suffix[0]) {
        /* Gitea: one request by base and head each, never the list */
        assert_int_equal(count_requests(log, "GET", "/api/v1/repos/acme/widgets/pulls"), 0);
        assert_int_equal(
            count_requests(log, "GET", "/api/v1/repos/acme/widgets/pulls/main/goald/fix-1"), 1);
    }
    cJSON_Delete(log);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

static void test_lookup_github(void **state)
{
    (void)state;
    lookup_among("");
}

static void test_lookup_gitea_base_head(void **state)
{
    (void)state;
    lookup_among("/api/v1");
}

static double log_t(const cJSON *log, int i)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(log, i), "t_ms"));
}

/* Retry-After: 5 waits 5 s (scaled); 403 with x-ratelimit-remaining: 0 is a
 * rate limit, retried at its reset; a reset an hour away fails now naming
 * the wait; a 401 is requested once, class auth; a 422 keeps its reason. */
static void test_retry_policy(void **state)
{
    struct vcs_forge f;
    struct vcs_pr pr = {0};
    cJSON *log;
    double dt;

    (void)state;
    setenv("GOALD_TIME_SCALE", "0.05", 1);
    forge_start("retry", NULL);
    set_base("");
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/acme/widgets.git"), 0);

    fake_post("inject", "{\"status\":503,\"headers\":{\"Retry-After\":\"5\"},"
                        "\"body\":{\"message\":\"busy\"}}");
    if (vcs_forge_pr_find(&pr, &f, "goald/a-1", "main") != ERR_NOTFOUND)
        fail_msg("find after a 503: %s", err_last());
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 3); /* the injection, the 503, the retry */
    dt = log_t(log, 2) - log_t(log, 1);
    /* 5 s x 0.05 = 250 ms (a fixed 2 s backoff scaled would be 100 ms) */
    if (dt < 240 || dt > 1500)
        fail_msg("waited %.0f ms after Retry-After: 5 at scale 0.05", dt);
    cJSON_Delete(log);

    /* GitHub's primary rate limit: 403, remaining 0, reset in 4 s */
    fake_post("inject", "{\"status\":403,\"headers\":{\"x-ratelimit-remaining\":\"0\"},"
                        "\"reset_in\":4,\"body\":{\"message\":\"API rate limit exceeded\"}}");
    if (vcs_forge_pr_find(&pr, &f, "goald/a-1", "main") != ERR_NOTFOUND)
        fail_msg("find after a rate limit: %s", err_last());
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 6);
    dt = log_t(log, 5) - log_t(log, 4);
    if (dt < 100 || dt > 1500) /* (3..4 s) x 0.05, not class auth */
        fail_msg("waited %.0f ms for a reset 4 s away at scale 0.05", dt);
    cJSON_Delete(log);

    /* a reset an hour away: no sleep, no retry, the wait named */
    fake_post("inject", "{\"status\":429,\"headers\":{\"x-ratelimit-remaining\":\"0\"},"
                        "\"reset_in\":3600,\"body\":{\"message\":\"API rate limit exceeded\"}}");
    assert_int_equal(vcs_forge_pr_ensure(&pr, &f, "t", "goald/a-1", "main", "b"), ERR_FAIL);
    assert_non_null(strstr(err_last(), "API rate limit exceeded"));
    assert_non_null(strstr(err_last(), "resets in 3"));
    assert_non_null(strstr(err_last(), "forge.retry_max_wait_s"));
    assert_string_equal(pr.failure.cls, "forge");
    assert_true(pr.failure.wait_ms > 3500 * 1000LL && pr.failure.wait_ms <= 3600 * 1000LL);
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 8);
    cJSON_Delete(log);

    /* 401: once, class auth, naming the forge and the variable */
    fake_post("inject", "{\"status\":401,\"times\":5,\"body\":{\"message\":\"Bad credentials\"}}");
    assert_int_equal(vcs_forge_pr_ensure(&pr, &f, "t", "goald/a-1", "main", "b"), ERR_FAIL);
    assert_string_equal(pr.failure.cls, "auth");
    assert_non_null(strstr(err_last(), "Bad credentials"));
    assert_non_null(strstr(err_last(), "GOALD_FORGE_TOKEN"));
    assert_non_null(strstr(err_last(), "forge.token_env"));
    assert_non_null(strstr(err_last(), f.base_url));
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 10); /* the injection and one request */
    cJSON_Delete(log);
    /* 403 without a rate limit: auth too, once */
    fake_post("inject", "{\"status\":403,\"times\":5,\"headers\":{\"x-ratelimit-remaining\":"
                        "\"4999\"},\"body\":{\"message\":\"Resource not accessible by token\"}}");
    assert_int_equal(vcs_forge_pr_find(&pr, &f, "goald/a-1", "main"), ERR_FAIL);
    assert_string_equal(pr.failure.cls, "auth");
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 12);
    cJSON_Delete(log);
    forge_stop();

    /* a 422 keeps its real reason */
    forge_start("r422", NULL);
    set_base("");
    vcs_forge_release(&f);
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/acme/widgets.git"), 0);
    fake_post("inject", "{\"status\":422,\"method\":\"POST\",\"body\":{\"message\":"
                        "\"Validation Failed\",\"errors\":[{\"resource\":\"PullRequest\","
                        "\"code\":\"custom\",\"message\":\"No commits between main and "
                        "goald/a-1\"}]}}");
    assert_int_equal(vcs_forge_pr_ensure(&pr, &f, "t", "goald/a-1", "main", "b"), ERR_FAIL);
    assert_non_null(strstr(err_last(), "HTTP 422"));
    assert_non_null(strstr(err_last(), "No commits between main and goald/a-1"));
    assert_string_equal(pr.failure.cls, "forge");
    vcs_pr_release(&pr);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_TIME_SCALE");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

/* A push remote that is a fork of forge.owner/forge.repo: the pull request
 * comes from "FORKOWNER:branch" (POST, GitHub's head= query, Gitea's
 * base/head path), and only the fork's pull request is found, not the
 * base owner's branch of the same name; a closed one is not found. */
static void fork_pr(const char *suffix)
{
    struct vcs_forge f;
    struct vcs_pr pr = {0};
    cJSON *log, *e;
    char want[256];
    int posts = 0;

    forge_start(suffix[0] ? "fork-gitea" : "fork-github", NULL);
    set_base(suffix);
    setenv("GOALD_FORGE_OWNER", "acme", 1);
    setenv("GOALD_FORGE_REPO", "widgets", 1);
    config_reset();
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/Me/widgets.git"), 0);
    assert_string_equal(f.owner, "acme");
    assert_string_equal(f.head_owner, "Me");
    fake_post("seed", "{\"repo\":\"acme/widgets\",\"prs\":["
                      "{\"head\":\"goald/x-1\",\"base\":\"main\"},"
                      "{\"head\":\"goald/x-1\",\"base\":\"main\",\"head_owner\":\"Me\","
                      "\"state\":\"closed\"}]}");
    if (vcs_forge_pr_ensure(&pr, &f, "t", "goald/x-1", "main", "b") != 0)
        fail_msg("ensure: %s", err_last());
    assert_int_equal(pr.created, 1);
    assert_int_equal(pr.number, 3);
    vcs_pr_release(&pr);
    if (vcs_forge_pr_ensure(&pr, &f, "t", "goald/x-1", "main", "b") != 0)
        fail_msg("ensure again: %s", err_last());
    assert_int_equal(pr.created, 0);
    assert_int_equal(pr.number, 3);
    vcs_pr_release(&pr);
    log = forge_log();
    cJSON_ArrayForEach(e, log)
    {
        const char *m = jget(e, "method", NULL), *path = jget(e, "path", NULL);
        if (!strcmp(m, "POST") && strstr(path, "/repos/acme/widgets/pulls")) {
            assert_string_equal(jget(e, "json", "head"), "Me:goald/x-1");
            posts++;
        } else if (!strcmp(m, "GET") && !suffix[0]) {
            assert_string_equal(jget(e, "query", "head"), "Me:goald/x-1");
        } else if (!strcmp(m, "GET")) {
            snprintf(want, sizeof(want), "%s/repos/acme/widgets/pulls/main/Me:goald/x-1", suffix);
            assert_string_equal(path, want);
        }
    }
    assert_int_equal(posts, 1);
    cJSON_Delete(log);
    vcs_forge_release(&f);
    /* the base repository itself, or a local path: no fork */
    assert_int_equal(vcs_forge_from_config(&f, "git@example.com:ACME/widgets.git"), 0);
    assert_null(f.head_owner);
    vcs_forge_release(&f);
    assert_int_equal(vcs_forge_from_config(&f, "/srv/git/someone/widgets.git"), 0);
    assert_null(f.head_owner);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_FORGE_OWNER");
    unsetenv("GOALD_FORGE_REPO");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

static void test_fork_pr_github(void **state)
{
    (void)state;
    fork_pr("");
}

static void test_fork_pr_gitea(void **state)
{
    (void)state;
    fork_pr("/api/v1");
}

/* GitHub's secondary rate limit (a 403 whose body says so, no header) and
 * a bare 429 are rate limits waited out for a minute (scaled), not a bad
 * token; a secondary limit with Retry-After waits that. */
static void test_secondary_rate_limit(void **state)
{
    struct vcs_forge f;
    struct vcs_pr pr = {0};
    cJSON *log;
    double dt;

    (void)state;
    setenv("GOALD_TIME_SCALE", "0.01", 1);
    forge_start("secondary", NULL);
    set_base("");
    assert_int_equal(vcs_forge_from_config(&f, "https://example.com/acme/widgets.git"), 0);
    fake_post("inject", "{\"status\":403,\"body\":{\"message\":\"You have exceeded a "
                        "secondary rate limit. Please wait a few minutes before you try "
                        "again.\"}}");
    if (vcs_forge_pr_find(&pr, &f, "goald/a-1", "main") != ERR_NOTFOUND)
        fail_msg("find after a secondary rate limit: %s", err_last());
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 3); /* the injection, the 403, the retry */
    dt = log_t(log, 2) - log_t(log, 1);
    if (dt < 550 || dt > 3000) /* 60 s x 0.01 */
        fail_msg("waited %.0f ms after a secondary rate limit at scale 0.01", dt);
    cJSON_Delete(log);
    fake_post("inject", "{\"status\":429,\"body\":{\"message\":\"Too Many Requests\"}}");
    if (vcs_forge_pr_find(&pr, &f, "goald/a-1", "main") != ERR_NOTFOUND)
        fail_msg("find after a bare 429: %s", err_last());
    vcs_pr_release(&pr);
    log = forge_log();
    assert_int_equal(cJSON_GetArraySize(log), 6);
    dt = log_t(log, 5) - log_t(log, 4);
    if (dt < 550 || dt > 3000)
        fail_msg("waited %.0f ms after a bare 429 at scale 0.01", dt);
    cJSON_Delete(log);
    fake_post("inject", "{\"status\":403,\"headers\":{\"Retry-After\":\"10\"},\"body\":"
                        "{\"message\":\"You have exceeded a secondary rate limit.\"}}");
    if (vcs_forge_pr_find(&pr, &f, "goald/a-1", "main") != ERR_NOTFOUND)
        fail_msg("find after a secondary rate limit with Retry-After: %s", err_last());
    vcs_pr_release(&pr);
    log = forge_log();
    dt = log_t(log, 8) - log_t(log, 7);
    if (dt < 90 || dt > 500) /* 10 s x 0.01, not a minute */
        fail_msg("waited %.0f ms for Retry-After: 10 at scale 0.01", dt);
    cJSON_Delete(log);
    vcs_forge_release(&f);
    forge_stop();
    unsetenv("GOALD_TIME_SCALE");
    unsetenv("GOALD_FORGE_BASE_URL");
    config_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_parse_remote, teardown),
        cmocka_unit_test_teardown(test_forge_from_config, teardown),
        cmocka_unit_test_teardown(test_pr_github_once, teardown),
        cmocka_unit_test_teardown(test_pr_gitea_path_with_token, teardown),
        cmocka_unit_test_teardown(test_pr_bad_token, teardown),
        cmocka_unit_test_teardown(test_lookup_github, teardown),
        cmocka_unit_test_teardown(test_lookup_gitea_base_head, teardown),
        cmocka_unit_test_teardown(test_retry_policy, teardown),
        cmocka_unit_test_teardown(test_fork_pr_github, teardown),
        cmocka_unit_test_teardown(test_fork_pr_gitea, teardown),
        cmocka_unit_test_teardown(test_secondary_rate_limit, teardown),
        cmocka_unit_test_teardown(test_webhook, teardown),
        cmocka_unit_test_teardown(test_push_token_auth, teardown),
        cmocka_unit_test_teardown(test_publish_flow_twice, teardown),
    };
    char home[600];

    testutil_setup("forge");
    testutil_tmp_path(home, sizeof(home), "home");
    fs_mkdir_p(home, 0700);
    setenv("HOME", home, 1);
    setenv("XDG_CONFIG_HOME", home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    unsetenv("GOALD_FORGE_TOKEN");
    unsetenv("GOALD_FORGE_BASE_URL");
    unsetenv("GOALD_NOTIFY_WEBHOOK_URL");
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("https_proxy");
    unsetenv("HTTPS_PROXY");
    unsetenv("ALL_PROXY");
    unsetenv("all_proxy");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
