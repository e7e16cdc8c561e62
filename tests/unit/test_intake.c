/* Unit tests: goal JSON validation, rule by rule, with the exact messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/internal.h"
#include "lifecycle/intake.h"
#include "lifecycle/report.h"
#include "store/goal.h"
#include "store/item.h"
#include "tests/unit/testutil.h"
#include "util/err.h"
#include "vcs/repo.h"

static char repo[512];

struct bad_case {
    const char *json;
    const char *msg; /* exact */
};

static void test_rules_with_exact_messages(void **state)
{
    char json_repo[1024], json_branch[1024], want_branch[1024];
    struct bad_case cases[] = {
        {"", "g.json: not valid JSON (line 1, column 1)"},
        {"{\"title\": \"x\",\n  \"priority\": }", "g.json: not valid JSON (line 2, column 15)"},
        {"[1]", "g.json: expected a JSON object"},
        {"{\"title\":\"a\"} x", "g.json: unexpected text after the goal (line 1, column 15)"},
        {"{}", "g.json: title: required"},
        {"{\"title\": 5}", "g.json: title: expected a string, got 5"},
        {"{\"title\": \"  \"}", "g.json: title: must not be empty"},
        {"{\"title\": \"a\", \"colour\": 1}", "g.json: colour: unknown key"},
        {"{\"title\": \"a\", \"title\": \"b\"}", "g.json: title: duplicate key"},
        {"{\"title\": \"a\", \"description\": []}",
         "g.json: description: expected a string, got an array"},
        {"{\"title\": \"a\", \"priority\": 101}",
         "g.json: priority: expected an integer from 0 to 100, got 101"},
        {"{\"title\": \"a\", \"priority\": -1}",
         "g.json: priority: expected an integer from 0 to 100, got -1"},
        {"{\"title\": \"a\", \"priority\": 2.5}",
         "g.json: priority: expected an integer from 0 to 100, got 2.5"},
        {"{\"title\": \"a\", \"priority\": \"high\"}",
         "g.json: priority: expected an integer from 0 to 100, got \"high\""},
        {"{\"title\": \"a\", \"budget\": 5}", "g.json: budget: expected an object, got 5"},
        {"{\"title\": \"a\", \"budget\": {\"max_tokens\": \"abc\"}}",
         "g.json: budget.max_tokens: expected a positive integer, got \"abc\""},
        {"{\"title\": \"a\", \"budget\": {\"max_tokens\": 0}}",
         "g.json: budget.max_tokens: expected a positive integer, got 0"},
        {"{\"title\": \"a\", \"budget\": {\"max_tokens\": 1.5}}",
         "g.json: budget.max_tokens: expected a positive integer, got 1.5"},
        {"{\"title\": \"a\", \"budget\": {\"max_hours\": -2}}",
         "g.json: budget.max_hours: expected a positive number, got -2"},
        {"{\"title\": \"a\", \"budget\": {\"max_cost_usd\": \"1\"}}",
         "g.json: budget.max_cost_usd: expected a positive number, got \"1\""},
        {"{\"title\": \"a\", \"budget\": {\"max_dollars\": 1}}",
         "g.json: budget.max_dollars: unknown key"},
        {"{\"title\": \"a\", \"deadline\": \"tomorrow\"}",
         "g.json: deadline: expected an RFC 3339 date-time such as 2026-12-01T18:00:00Z, got "
         "\"tomorrow\""},
        {"{\"title\": \"a\", \"deadline\": \"2026-02-30T10:00:00Z\"}",
         "g.json: deadline: expected an RFC 3339 date-time such as 2026-12-01T18:00:00Z, got "
         "\"2026-02-30T10:00:00Z\""},
        {"{\"title\": \"a\", \"deadline\": \"2026-12-01T18:00:00\"}",
         "g.json: deadline: expected an RFC 3339 date-time such as 2026-12-01T18:00:00Z, got "
         "\"2026-12-01T18:00:00\""},
        {"{\"title\": \"a\", \"repo\": \"/nonexistent/repo\"}",
         "g.json: repo: not a git repository: /nonexistent/repo"},
        {"{\"title\": \"a\", \"base_branch\": \"main\"}", "g.json: base_branch: needs \"repo\""},
        {"{\"title\": \"a\", \"base_branch\": \"a..b\"}",
         "g.json: base_branch: expected a valid branch name, got \"a..b\""},
        {"{\"title\": \"a\", \"success_criteria\": \"x\"}",
         "g.json: success_criteria: expected an array of strings, got \"x\""},
        {"{\"title\": \"a\", \"success_criteria\": [\"ok\", \"\"]}",
         "g.json: success_criteria[1]: expected a non-empty string, got \"\""},
        {"{\"title\": \"a\", \"verification\": {}}",
         "g.json: verification: expected an array of gates, got an object"},
        {"{\"title\": \"a\", \"verification\": [{\"command\": \"make\"}]}",
         "g.json: verification[0].name: required"},
        {"{\"title\": \"a\", \"verification\": [{\"name\": \"t\"}]}",
         "g.json: verification[0].command: required"},
        {"{\"title\": \"a\", \"verification\": [{\"name\": \"t\", \"command\": \"make\", "
         "\"type\": \"smoke\"}]}",
         "g.json: verification[0].type: expected one of test, build, lint, typecheck, custom, "
         "got \"smoke\""},
        {"{\"title\": \"a\", \"verification\": [{\"name\": \"t\", \"command\": \"make\", "
         "\"must_pass\": 1}]}",
         "g.json: verification[0].must_pass: expected true or false, got 1"},
        {"{\"title\": \"a\", \"verification\": [{\"name\": \"t\", \"command\": \"make\", "
         "\"timeout_s\": 0}]}",
         "g.json: verification[0].timeout_s: expected an integer from 1 to 86400, got 0"},
        {"{\"title\": \"a\", \"verification\": [{\"name\": \"t\", \"command\": \"make\", "
         "\"retries\": 2}]}",
         "g.json: verification[0].retries: unknown key"},
        {"{\"title\": \"a\", \"allowed_actions\": [\"read\", \"rm\"]}",
         "g.json: allowed_actions[1]: unknown action (expected one of ls, find, grep, read, "
         "write, edit, bash, run_gates, complete, ask_human), got \"rm\""},
        {"{\"title\": \"a\", \"schedule\": \"0 9 * *\"}",
         "g.json: schedule: expected 5 fields (minute hour day-of-month month day-of-week), got "
         "4"},
        {"{\"title\": \"a\", \"schedule\": \"0 24 * * *\"}",
         "g.json: schedule: hour: 24 is out of range 0-23"},
        {"{\"title\": \"a\", \"schedule\": \"@often\"}",
         "g.json: schedule: unknown alias \"@often\""},
        {"{\"title\": \"a\", \"publish\": {\"push\": \"yes\"}}",
         "g.json: publish.push: expected true or false, got \"yes\""},
        {"{\"title\": \"a\", \"publish\": {\"forge\": 1}}", "g.json: publish.forge: unknown key"},
        {json_repo, want_branch},
        {json_branch, "g.json: repo: expected a string, got 3"},
    };
    (void)state;

    snprintf(json_repo, sizeof(json_repo),
             "{\"title\": \"a\", \"repo\": \"%s\", \"base_branch\": \"nope\"}", repo);
    snprintf(want_branch, sizeof(want_branch),
             "g.json: base_branch: no branch \"nope\" in %s (its branches: main)", repo);
    snprintf(json_branch, sizeof(json_branch), "{\"title\": \"a\", \"repo\": 3}");

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct goal *g = NULL;
        int rc = intake_parse(&g, cases[i].json, strlen(cases[i].json), "g.json");
        if (rc != ERR_INVALID)
            fail_msg("case %zu (%s): expected ERR_INVALID, got %d", i, cases[i].json, rc);
        assert_null(g);
        if (strcmp(err_last(), cases[i].msg) != 0)
            fail_msg("case %zu: expected\n  %s\ngot\n  %s", i, cases[i].msg, err_last());
    }
}

static void test_title_length(void **state)
{
    char json[1024];
    char title[300];
    struct goal *g = NULL;
    (void)state;

    memset(title, 'x', 200);
    title[200] = '\0';
    snprintf(json, sizeof(json), "{\"title\": \"%s\"}", title);
    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    store_goal_free(g);
    g = NULL;
    memset(title, 'x', 201);
    title[201] = '\0';
    snprintf(json, sizeof(json), "{\"title\": \"%s\"}", title);
    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), ERR_INVALID);
    assert_string_equal(err_last(), "g.json: title: expected at most 200 characters, got 201");
    /* characters, not bytes: 200 two-byte characters are fine */
    {
        char *p = title;
        for (int i = 0; i < 100; i++) {
            memcpy(p, "\xc3\xa9", 2); /* é */
            p += 2;
        }
        *p = '\0';
    }
    snprintf(json, sizeof(json), "{\"title\": \"%s%s\"}", title, title);
    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    store_goal_free(g);
}

static void test_valid_goal_fields(void **state)
{
    char json[2048];
    struct goal *g = NULL;
    (void)state;

    snprintf(json, sizeof(json),
             "{\"title\": \"Add a --version flag\", \"description\": \"d\", \"priority\": 80,"
             " \"budget\": {\"max_tokens\": 500000, \"max_hours\": 4, \"max_cost_usd\": 2.0},"
             " \"deadline\": \"2026-12-01T18:00:00Z\", \"repo\": \"%s\","
             " \"success_criteria\": [\"a\", \"b\"],"
             " \"verification\": [{\"name\": \"tests\", \"type\": \"test\", \"command\": "
             "\"make test\", \"must_pass\": true, \"timeout_s\": 600}],"
             " \"allowed_actions\": [\"read\", \"edit\"], \"schedule\": \"0 9 * * MON\","
             " \"publish\": {\"push\": true, \"remote\": \"origin\", \"pull_request\": false}}",
             repo);
    assert_int_equal(intake_parse(&g, json, strlen(json), "g.json"), 0);
    assert_string_equal(g->title, "Add a --version flag");
    assert_int_equal(g->priority, 80);
    assert_int_equal(g->budget_max_tokens, 500000);
    assert_true(g->budget_max_hours == 4.0);
    assert_true(g->budget_max_cost_usd == 2.0);
    assert_int_equal(g->deadline_at, 1796148000000LL); /* 2026-12-01T18:00:00Z */
    assert_string_equal(g->repo, repo);
    assert_string_equal(g->base_branch, "main"); /* the repo's HEAD branch */
    assert_string_equal(g->success_criteria, "[\"a\",\"b\"]");
    assert_string_equal(g->allowed_actions, "[\"read\",\"edit\"]");
    assert_non_null(strstr(g->verification, "\"make test\""));
    assert_int_equal(g->is_template, 1);
    assert_string_equal(g->status, "queued");
    store_goal_free(g);

    /* defaults */
    assert_int_equal(intake_parse(&g, "{\"title\":\"t\"}", 13, "g.json"), 0);
    assert_int_equal(g->priority, 50);
    assert_int_equal(g->budget_max_tokens, -1);
    assert_null(g->repo);
    assert_string_equal(g->success_criteria, "[]");
    store_goal_free(g);
}

static void test_branch_name(void **state)
{
    char b[128];
    (void)state;

    assert_int_equal(
        vcs_branch_name_for_goal(b, sizeof(b), "Add a --version flag!", "d78bb826-7d69-427c-9b04"),
        0);
    assert_string_equal(b, "goald/add-a-version-flag-d78bb826");
    assert_int_equal(vcs_branch_name_for_goal(b, sizeof(b), "***", "abcdef01-2345"), 0);
    assert_string_equal(b, "goald/goal-abcdef01");
}

static void test_effort_points_and_percent(void **state)
{
    (void)state;
    assert_int_equal(item_effort_points("S"), 1);
    assert_int_equal(item_effort_points("M"), 3);
    assert_int_equal(item_effort_points("L"), 5);
    assert_int_equal(item_effort_points("XL"), 8);
    assert_int_equal(item_effort_points("XXL"), 0);
    assert_true(report_percent(4, 11) == 36.4);
    assert_true(report_percent(0, 0) == 0.0);
    assert_true(report_percent(11, 11) == 100.0);
    assert_true(report_percent(1, 3) == 33.3);
}

/* Progress of a stored goal: done counts, skipped apart, others not. */
static void test_report_progress(void **state)
{
    static const char *const items[][2] = {{"S", "done"},   {"M", "skipped"}, {"M", "in_progress"},
                                           {"M", "queued"}, {"S", "failed"},  {"XL", "done"}};
    char path[512];
    store *st = NULL;
    struct goal *g = NULL;
    char id[ID_SIZE];
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem;
    struct report_progress pr;
    (void)state;

    testutil_db(path, sizeof(path), "report.db");
    assert_int_equal(store_open(&st, path), 0);
    assert_int_equal(intake_parse(&g, "{\"title\":\"t\"}", 13, "g.json"), 0);
    assert_int_equal(intake_submit(st, g, id), 0);
    for (int i = 0; i < 6; i++) {
        struct work_item wi;
        char key[16];
        memset(&wi, 0, sizeof(wi));
        id_new(wi.id);
        memcpy(wi.goal_id, id, ID_SIZE);
        snprintf(key, sizeof(key), "wi-%d", i + 1);
        wi.key = key;
        wi.title = "x";
        wi.effort = (char *)items[i][0];
        wi.status = (char *)items[i][1];
        wi.verified = -1;
        assert_int_equal(store_item_insert(st, &wi), 0);
    }
    /* done S(1) + done XL(8) = 9 of 1+3+3+3+1+8 = 19; the skipped M(3) is
     * counted apart, never as done */
    assert_int_equal(report_progress(st, id, &pr), 0);
    assert_int_equal(pr.done_points, 9);
    assert_int_equal(pr.skipped_points, 3);
    assert_int_equal(pr.total_points, 19);
    assert_true(pr.percent == 47.4);
    assert_int_equal(pr.items_total, 6);
    assert_int_equal(pr.items_done, 2);
    assert_int_equal(pr.items_skipped, 1);
    mem = open_memstream(&text, &tlen);
    assert_int_equal(report_write_json(st, id, mem), 0);
    fclose(mem);
    {
        cJSON *r = cJSON_Parse(text);
        cJSON *p = cJSON_GetObjectItem(r, "progress");
        assert_non_null(r);
        assert_int_equal(cJSON_GetObjectItem(p, "done_points")->valueint, 9);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "work_items")), 6);
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "work_items"), 5),
                                "effort")
                ->valuestring,
            "XL");
        cJSON_Delete(r);
    }
    free(text);
    store_goal_free(g);
    store_close(st);
}

static void test_id_prefixes(void **state)
{
    char path[512], out[ID_SIZE];
    store *st = NULL;
    store_stmt *s;
    static const char *ids[] = {"aaaaaaaa-1111-4000-8000-000000000001",
                                "aaaaaaaa-1112-4000-8000-000000000002",
                                "bbbbbbbb-0000-4000-8000-000000000003"};
    (void)state;

    testutil_db(path, sizeof(path), "prefix.db");
    assert_int_equal(store_open(&st, path), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(store_prepare_uncached(st, &s,
                                                "INSERT INTO goals(id, title, spec, created_at, "
                                                "updated_at) VALUES (?, 't', '{}', 0, 0)"),
                         0);
        store_bind_text(s, 1, ids[i]);
        assert_int_equal(store_step(s), STORE_DONE);
        store_finalize(s);
    }
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "bbbbbbbb", out), 0);
    assert_string_equal(out, ids[2]);
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "BBBBBBBB-0000", out), 0);
    assert_string_equal(out, ids[2]);
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, ids[0], out), 0);
    assert_string_equal(out, ids[0]);
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "aaaaaaaa-111", out), ERR_AMBIGUOUS);
    assert_string_equal(err_last(), "goal id aaaaaaaa-111 is ambiguous: give more characters");
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "aaaaaaaa-1112", out), 0);
    assert_string_equal(out, ids[1]);
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "cccccccc", out), ERR_NOTFOUND);
    assert_string_equal(err_last(), "goal cccccccc: not found");
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "bbbb", out), ERR_INVALID);
    assert_string_equal(err_last(), "goal id \"bbbb\": give at least 8 characters");
    assert_int_equal(store_resolve_id(st, STORE_KIND_GOAL, "bbbbbbbz", out), ERR_INVALID);
    assert_string_equal(err_last(), "goal id \"bbbbbbbz\": expected hexadecimal characters");
    assert_int_equal(store_resolve_id(st, STORE_KIND_ESCALATION, "bbbbbbbb", out), ERR_NOTFOUND);
    assert_string_equal(err_last(), "escalation bbbbbbbb: not found");
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_with_exact_messages),
        cmocka_unit_test(test_title_length),
        cmocka_unit_test(test_valid_goal_fields),
        cmocka_unit_test(test_branch_name),
        cmocka_unit_test(test_effort_points_and_percent),
        cmocka_unit_test(test_report_progress),
        cmocka_unit_test(test_id_prefixes),
    };
    char cmd[1200];

    testutil_setup("intake");
    testutil_tmp_path(repo, sizeof(repo), "repo");
    snprintf(cmd, sizeof(cmd),
             "git init -q -b main '%s' && git -C '%s' -c user.email=t@e -c user.name=t "
             "commit -q --allow-empty -m init",
             repo, repo);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make a test repository\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
