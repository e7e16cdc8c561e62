/*
 * bench_turns - orchestration overhead per turn of an execute run against
 * fake_llm on loopback answering at once.
 *
 *   bench_turns [--fake PATH] [--runs N] [--turns T] [--warmup N]
 *
 * Starts tests/fakes/fake_llm with a script of (warmup + runs) execute runs
 * of T turns each: turn 1 writes a file, turns 2..T-1 read README (each
 * with other arguments, so that no run is stalled), turn T calls complete;
 * then the review answers "pass".  The goal has no gate.  Each run is a
 * fresh one-item goal on the same repository, claimed with claim_next()
 * and run in this process with job_run() exactly as `goald job` does: the
 * worktree, T model calls with their events and accounting, T rounds of
 * tools with their events, the progress fingerprint of every turn, then
 * verification (no gate), the review call, the item's commit and the
 * context pack.
 *
 * The fake's own time is measured first: the median of plain libcurl POSTs
 * of an execute request to the same fake (the floor: loopback HTTP + the
 * fake's answer).  For each run:
 *   overhead per turn = (wall time of job_run - (T + 1) x fake time) / T
 * (T execute calls + 1 review call), so the run's fixed costs (worktree,
 * verification, commit) are spread over its turns.  Prints min, median and
 * p90 over the runs, in milliseconds.
 */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle/claim.h"
#include "lifecycle/intake.h"
#include "lifecycle/job.h"
#include "lifecycle/stages.h"
#include "lifecycle/plan.h"
#include "lifecycle/transitions.h"
#include "store/store.h"
#include "store/internal.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* A bench script or request that outgrows its buffer is a broken bench. */
static void must_fit(int rc)
{
    if (rc) {
        fprintf(stderr, "bench: %s\n", err_last());
        exit(1);
    }
}
static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    return strbuf_add(ud, p, s * n) == 0 ? s * n : 0; /* 0: curl stops with an error */
}

static void die(const char *what)
{
    fprintf(stderr, "bench_turns: %s: %s\n", what, err_last());
    exit(1);
}

/* The fake's time for one call: the median of plain POSTs (microseconds). */
static int64_t fake_time_us(const char *url, int n)
{
    static const char body[] =
        "{\"model\":\"bench-model\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a "
        "careful engineer.\"},{\"role\":\"user\",\"content\":\"Work the item.\"}],"
        "\"max_tokens\":8192}";
    CURL *h = curl_easy_init();
    struct curl_slist *hd = NULL;
    char full[300];
    int64_t *t = calloc((size_t)n, sizeof(*t)), med;

    snprintf(full, sizeof(full), "%s/chat/completions", url);
    hd = curl_slist_append(hd, "Content-Type: application/json");
    hd = curl_slist_append(hd, "X-Goald-Stage: doctor");
    hd = curl_slist_append(hd, "Expect:");
    for (int i = 0; i < n; i++) {
        strbuf out = STRBUF_INIT;
        int64_t t0 = time_mono_us();
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, full);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(h) != CURLE_OK) {
            fprintf(stderr, "bench_turns: raw POST failed\n");
            exit(1);
        }
        t[i] = time_mono_us() - t0;
        strbuf_release(&out);
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    qsort(t, (size_t)n, sizeof(*t), cmp64);
    med = t[n / 2];
    free(t);
    return med;
}

/* The script: the fake's raw-time probes first, then each run's turns. */
static void write_script(const char *path, int probes, int nruns, int turns)
{
    strbuf sb;

    strbuf_init(&sb, 64 << 20);
    for (int i = 0; i < probes; i++)
        must_fit(strbuf_adds(&sb, "{\"content\":\"ok\",\"usage\":{\"input\":10,\"output\":1}}\n"));
    for (int r = 0; r < nruns; r++) {
        must_fit(strbuf_adds(&sb, "{\"content\":\"writing\",\"tool_calls\":[{\"name\":\"write\","
                                  "\"arguments\":{\"path\":\"out.txt\",\"content\":\"bench\\n\"}}],"
                                  "\"usage\":{\"input\":1500,\"output\":40}}\n"));
        for (int k = 2; k < turns; k++)
            must_fit(strbuf_addf(&sb,
                                 "{\"content\":\"reading\",\"tool_calls\":[{\"name\":\"read\","
                                 "\"arguments\":{\"path\":\"README\",\"offset\":1,\"limit\":%d}}],"
                                 "\"usage\":{\"input\":%d,\"output\":30}}\n",
                                 k, 1500 + 200 * k));
        must_fit(strbuf_adds(&sb,
                             "{\"tool_calls\":[{\"name\":\"complete\",\"arguments\":{\"summary\":"
                             "\"wrote out.txt\"}}],\"usage\":{\"input\":4000,\"output\":20}}\n"));
        must_fit(strbuf_adds(&sb, "{\"content\":{\"verdict\":\"pass\",\"findings\":[]},"
                                  "\"usage\":{\"input\":900,\"output\":30}}\n"));
    }
    if (fs_write_atomic(path, sb.buf, sb.len, 0600) != 0)
        die("script");
    strbuf_release(&sb);
}

/* A fresh active goal on repo with one ready item. */
static void new_goal(store *st, const char *repo, int i)
{
    char json[1024], id[ID_SIZE];
    struct goal *g = NULL;
    struct plan p;
    cJSON *items;

    snprintf(json, sizeof(json),
             "{\"title\":\"bench %d\",\"repo\":\"%s\",\"base_branch\":\"main\","
             "\"success_criteria\":[\"out.txt exists\"]}",
             i, repo);
    if (intake_parse(&g, json, strlen(json), "bench.json") != 0 || intake_submit(st, g, id) != 0)
        die("submit");
    store_goal_free(g);
    if (transition_apply(st, ENTITY_GOAL, id, "active", NULL, NULL) != 0)
        die("activate");
    snprintf(json, sizeof(json),
             "UPDATE goals SET verification = '[]', elaboration = '{}' WHERE id = '%s'", id);
    if (store_exec(st, json) != 0)
        die("elaboration");
    items = cJSON_Parse("{\"work_items\":[{\"key\":\"wi-1\",\"title\":\"write out.txt\","
                        "\"type\":\"code\",\"effort\":\"S\"}]}");
    if (plan_parse(&p, items, 50) != 0 || plan_store(st, id, &p) != 0)
        die("plan");
    plan_release(&p);
    cJSON_Delete(items);
}

int main(int argc, char **argv)
{
    const char *fake = "tests/fake_llm";
    int runs = 30, turns = 10, warmup = 3, probes = 200;
    char dir[] = "/tmp/bench_turns.XXXXXX";
    char script[512], portf[512], url[256], db[512], repo[512], cmd[2048];
    char port[32] = "";
    int64_t fake_us, *per_turn, *wall;
    pid_t pid;
    store *st = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fake") && i + 1 < argc)
            fake = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--turns") && i + 1 < argc)
            turns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            continue; /* bench/run passes the goald binary: not needed here */
        else {
            fprintf(stderr, "usage: bench_turns [--fake PATH] [--runs N] [--turns T] "
                            "[--warmup N]\n");
            return 2;
        }
    }
    if (runs < 3 || turns < 3 || warmup < 0 || !mkdtemp(dir))
        return 2;
    snprintf(script, sizeof(script), "%s/s.jsonl", dir);
    snprintf(portf, sizeof(portf), "%s/port", dir);
    snprintf(db, sizeof(db), "%s/bench.db", dir);
    snprintf(repo, sizeof(repo), "%s/repo", dir);
    snprintf(cmd, sizeof(cmd),
             "git init -q -b main %s && cd %s && git config user.email b@example.com &&"
             " git config user.name bench && seq 1 200 > README && git add README &&"
             " git commit -q -m init",
             repo, repo);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_turns: git setup failed\n");
        return 1;
    }
    write_script(script, probes, warmup + runs, turns);
    pid = fork();
    if (pid == 0) {
        execl(fake, fake, "--port-file", portf, "--script", script, (char *)NULL);
        perror(fake);
        _exit(127);
    }
    for (int i = 0; i < 200 && !port[0]; i++) {
        strbuf sb = STRBUF_INIT;
        time_sleep_ms(20);
        if (fs_read_file(&sb, portf, 64) == 0 && sb.len)
            snprintf(port, sizeof(port), "%.*s", (int)strcspn(sb.buf, "\n"), sb.buf);
        strbuf_release(&sb);
    }
    if (!port[0]) {
        fprintf(stderr, "bench_turns: %s did not start\n", fake);
        kill(pid, SIGTERM);
        return 1;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%s/v1", port);
    setenv("GOALD_LLM_PROVIDER", "openai", 1);
    setenv("GOALD_LLM_MODEL", "bench-model", 1);
    setenv("GOALD_LLM_BASE_URL", url, 1);
    unsetenv("GOALD_LLM_MODELS");
    unsetenv("GOALD_LLM_API_KEY");
    unsetenv("OPENAI_API_KEY");
    if (config_load(NULL) != 0 || store_open(&st, db) != 0)
        die("setup");

    fake_us = fake_time_us(url, probes);
    per_turn = calloc((size_t)runs, sizeof(*per_turn));
    wall = calloc((size_t)runs, sizeof(*wall));
    for (int r = -warmup; r < runs; r++) {
        struct claim c;
        struct job_outcome o;
        int64_t t0;

        new_goal(st, repo, r + warmup);
        if (claim_next(st, "work", time_now_ms(), NULL, &c, NULL, 0) != 0)
            die("claim");
        t0 = time_mono_us();
        if (job_run(st, c.run_id, &o) != 0)
            die("job");
        if (strcmp(o.status, "success") != 0) {
            fprintf(stderr, "bench_turns: run %d: %s (%s)\n", r, o.status, o.error_class);
            return 1;
        }
        /* every turn and the review really went to the fake */
        {
            store_stmt *s;
            int calls = -1;
            if (store_prepare_uncached(st, &s, "SELECT turns FROM runs WHERE id = ?") == 0) {
                store_bind_text(s, 1, c.run_id);
                if (store_step(s) == STORE_ROW)
                    calls = store_col_int(s, 0);
                store_finalize(s);
            }
            if (calls != turns + 1) {
                fprintf(stderr, "bench_turns: run %d made %d model calls, not %d\n", r, calls,
                        turns + 1);
                return 1;
            }
        }
        /* done with the goal: no publish unit in the way of the next claim */
        if (transition_apply(st, ENTITY_GOAL, c.goal_id, "completed", "active", NULL) != 0)
            die("complete");
        if (r >= 0) {
            wall[r] = time_mono_us() - t0;
            per_turn[r] = (wall[r] - (int64_t)(turns + 1) * fake_us) / turns;
        }
    }
    qsort(wall, (size_t)runs, sizeof(*wall), cmp64);
    qsort(per_turn, (size_t)runs, sizeof(*per_turn), cmp64);
    printf("fake time per call (median of %d plain POSTs): %.3f ms\n", probes, fake_us / 1000.0);
    printf("run wall time      n=%d  min=%.2f  median=%.2f  p90=%.2f  ms (%d turns + review)\n",
           runs, wall[0] / 1000.0, wall[runs / 2] / 1000.0, wall[runs * 9 / 10] / 1000.0, turns);
    printf("overhead per turn  n=%d  min=%.2f  median=%.2f  p90=%.2f  ms\n", runs,
           per_turn[0] / 1000.0, per_turn[runs / 2] / 1000.0, per_turn[runs * 9 / 10] / 1000.0);
    store_close(st);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_turns: %s not removed\n", dir);
    free(per_turn);
    free(wall);
    return 0;
}
