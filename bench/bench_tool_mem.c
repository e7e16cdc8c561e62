/*
 * bench_tool_mem - peak memory of the job process when the model writes a
 * file at the file-size cap ("memory of the job process stays
 * under 2x the configured file-size cap when the model writes files at the
 * cap").
 *
 *   bench_tool_mem GOALD [--fake PATH] [--cap-mb N] [--runs N] [--mode openai|anthropic]
 *
 * Starts tests/fakes/fake_llm in each wire format (or the one given),
 * whose script streams tool calls with generated content (content_bytes,
 * content_style "code": 64-byte lines of C with quotes, backslashes and a
 * tab, so that escaping inflates the body as real code does; never held by
 * the fake).  For each case a fresh one-item goal is claimed here and run
 * by a real `goald job RUN` child; its peak RSS is wait4()'s ru_maxrss:
 *   small    the model writes 6 bytes, then completes (the job's baseline);
 *   at cap   the model writes exactly tools.max_file_mb MiB, then completes;
 *   1 GiB    the model asks to write 1 GiB: refused at the response cap
 *            (invalid_response), never held whole.
 * Every limit is at its default but tools.max_file_mb (llm.max_response_bytes
 * follows it).  small and at cap run --runs times (3) and the medians are
 * printed.  Prints each case's outcome, the written file's size and the peak
 * RSS against the cap.  BENCH_TOOL_MEM_WRAP=heaptrack runs each job under
 * that program (to see where the memory goes; the RSS is then the
 * wrapper's).
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle/claim.h"
#include "lifecycle/intake.h"
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
static const char *goald_bin;

static void die(const char *what)
{
    fprintf(stderr, "bench_tool_mem: %s: %s\n", what, err_last());
    exit(1);
}

/* A fresh active goal on repo with one ready item. */
static void new_goal(store *st, const char *repo, int i)
{
    char json[1024], id[ID_SIZE];
    struct goal *g = NULL;
    struct plan p;
    cJSON *items;

    snprintf(json, sizeof(json),
             "{\"title\":\"mem %d\",\"repo\":\"%s\",\"base_branch\":\"main\","
             "\"success_criteria\":[\"big.txt exists\"]}",
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
    items = cJSON_Parse("{\"work_items\":[{\"key\":\"wi-1\",\"title\":\"write big.txt\","
                        "\"type\":\"code\",\"effort\":\"S\"}]}");
    if (plan_parse(&p, items, 50) != 0 || plan_store(st, id, &p) != 0)
        die("plan");
    plan_release(&p);
    cJSON_Delete(items);
}

struct outcome {
    long maxrss_kb;
    char status[32], error_class[64];
    long long file_size;
    double seconds;
};

/* Claim the next work item and run it as `goald job RUN`. */
static void run_case(store *st, const char *goald, const char *repo, int i, struct outcome *o)
{
    struct claim c;
    struct rusage ru;
    char path[1024];
    store_stmt *s;
    int64_t t0;
    int wst;
    pid_t pid;

    memset(o, 0, sizeof(*o));
    o->file_size = -1;
    new_goal(st, repo, i);
    if (claim_next(st, "work", time_now_ms(), NULL, &c, NULL, 0) != 0)
        die("claim");
    t0 = time_mono_ms();
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        const char *wrap = getenv("BENCH_TOOL_MEM_WRAP"); /* e.g. heaptrack */
        if (wrap && *wrap)
            execlp(wrap, wrap, goald, "job", c.run_id, (char *)NULL);
        execl(goald, goald, "job", c.run_id, (char *)NULL);
        _exit(127);
    }
    if (wait4(pid, &wst, 0, &ru) != pid)
        die("wait4");
    o->seconds = (double)(time_mono_ms() - t0) / 1000.0;
    o->maxrss_kb = ru.ru_maxrss;
    if (store_prepare_uncached(
            st, &s, "SELECT status, ifnull(error_class, '') FROM runs WHERE id = ?") == 0) {
        store_bind_text(s, 1, c.run_id);
        if (store_step(s) == STORE_ROW) {
            snprintf(o->status, sizeof(o->status), "%s", store_col_raw(s, 0));
            snprintf(o->error_class, sizeof(o->error_class), "%s", store_col_raw(s, 1));
        }
        store_finalize(s);
    }
    /* the file on the goal's branch, if it got there */
    {
        char branch[256] = "none";
        if (store_prepare_uncached(st, &s,
                                   "SELECT ifnull(branch, 'none') FROM goals WHERE id = ?") == 0) {
            store_bind_text(s, 1, c.goal_id);
            if (store_step(s) == STORE_ROW)
                snprintf(branch, sizeof(branch), "%s", store_col_raw(s, 0));
            store_finalize(s);
        }
        snprintf(path, sizeof(path),
                 "git -C %s cat-file -s 'refs/heads/%s:big.txt' 2>/dev/null || echo -1", repo,
                 branch);
    }
    {
        FILE *p = popen(path, "r");
        if (p) {
            if (fscanf(p, "%lld", &o->file_size) != 1)
                o->file_size = -1;
            pclose(p);
        }
    }
    /* done with the goal: no publish unit in the way of the next claim */
    transition_apply(st, ENTITY_GOAL, c.goal_id, "completed", NULL, NULL);
}

static void script_case(strbuf *sb, long long bytes)
{
    must_fit(
        strbuf_addf(sb,
                    "{\"content\":\"writing\",\"tool_calls\":[{\"name\":\"write\",\"arguments\":"
                    "{\"path\":\"big.txt\"},\"content_bytes\":%lld,\"content_style\":\"code\"}],"
                    "\"usage\":{\"input\":1500,"
                    "\"output\":40}}\n",
                    bytes));
    must_fit(strbuf_adds(sb, "{\"tool_calls\":[{\"name\":\"complete\",\"arguments\":{\"summary\":"
                             "\"wrote big.txt\"}}],\"usage\":{\"input\":4000,\"output\":20}}\n"));
    must_fit(strbuf_adds(sb, "{\"content\":{\"verdict\":\"pass\",\"findings\":[]},"
                             "\"usage\":{\"input\":900,\"output\":30}}\n"));
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

static long median_kb(struct outcome *o, int n)
{
    long v[16];
    for (int i = 0; i < n; i++)
        v[i] = o[i].maxrss_kb;
    qsort(v, (size_t)n, sizeof(long), cmp_long);
    return v[n / 2];
}

static void row(const char *what, const struct outcome *o, long cap_mb)
{
    printf("  %-34s %-9s %-18s %12lld %14.1f %9.2f %7.1f\n", what, o->status, o->error_class,
           o->file_size, o->maxrss_kb / 1024.0, o->maxrss_kb / 1024.0 / (double)cap_mb, o->seconds);
}

/* One provider: its fake, runs x (baseline, at the cap), then the 1 GiB
 * request once. */
static void bench_mode(const char *mode, const char *fake, const char *dir, store *st,
                       const char *repo, long cap_mb, int runs, int *goal_no)
{
    char script[512], portf[512], url[256], port[32] = "";
    struct outcome small[16], atcap[16], huge;
    strbuf sb;
    pid_t pid;

    snprintf(script, sizeof(script), "%s/%s.jsonl", dir, mode);
    snprintf(portf, sizeof(portf), "%s/%s.port", dir, mode);
    strbuf_init(&sb, 1 << 20);
    for (int r = 0; r < runs; r++) {
        script_case(&sb, 6);
        script_case(&sb, (long long)cap_mb << 20);
    }
    /* the 1 GiB request: served to every retry of the one call */
    must_fit(
        strbuf_addf(&sb,
                    "{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"path\":\"big.txt\"},"
                    "\"content_bytes\":%lld,\"content_style\":\"code\"}],\"repeat\":0}\n",
                    1LL << 30));
    if (fs_write_atomic(script, sb.buf, sb.len, 0600) != 0)
        die("script");
    strbuf_release(&sb);
    pid = fork();
    if (pid == 0) {
        execl(fake, fake, "--port-file", portf, "--script", script, "--mode", mode, (char *)NULL);
        perror(fake);
        _exit(127);
    }
    for (int i = 0; i < 200 && !port[0]; i++) {
        strbuf p = STRBUF_INIT;
        time_sleep_ms(20);
        if (fs_read_file(&p, portf, 64) == 0 && p.len)
            snprintf(port, sizeof(port), "%.*s", (int)strcspn(p.buf, "\n"), p.buf);
        strbuf_release(&p);
    }
    if (!port[0]) {
        fprintf(stderr, "bench_tool_mem: %s did not start\n", fake);
        kill(pid, SIGTERM);
        exit(1);
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%s/v1", port);
    setenv("GOALD_LLM_PROVIDER", mode, 1);
    setenv("GOALD_LLM_BASE_URL", url, 1);
    for (int r = 0; r < runs; r++) {
        run_case(st, goald_bin, repo, (*goal_no)++, &small[r]);
        run_case(st, goald_bin, repo, (*goal_no)++, &atcap[r]);
    }
    run_case(st, goald_bin, repo, (*goal_no)++, &huge);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);

    printf("%s (content: C lines with quotes, backslashes, a tab; %d runs)\n", mode, runs);
    printf("  %-34s %-9s %-18s %12s %14s %9s %7s\n", "case", "run", "error_class", "file bytes",
           "peak RSS MiB", "x cap", "s");
    for (int r = 0; r < runs; r++) {
        row("write 6 B (baseline)", &small[r], cap_mb);
        row("write at the cap", &atcap[r], cap_mb);
    }
    row("write 1 GiB (default response cap)", &huge, cap_mb);
    {
        long ms = median_kb(small, runs), ma = median_kb(atcap, runs);
        printf("  median: baseline %.1f MiB, at the cap %.1f MiB = %.2f x cap "
               "(%.2f x cap above the baseline)\n",
               ms / 1024.0, ma / 1024.0, ma / 1024.0 / (double)cap_mb,
               (ma - ms) / 1024.0 / (double)cap_mb);
    }
}

int main(int argc, char **argv)
{
    const char *fake = NULL, *only = NULL;
    long cap_mb = 64;
    int runs = 3, goal_no = 0;
    char dir[] = "/tmp/bench_tool_mem.XXXXXX";
    char db[512], repo[512], cmd[2048], fakebuf[1024], num[64];
    store *st = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fake") && i + 1 < argc)
            fake = argv[++i];
        else if (!strcmp(argv[i], "--cap-mb") && i + 1 < argc)
            cap_mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            only = argv[++i];
        else if (argv[i][0] != '-' && !goald_bin)
            goald_bin = argv[i];
        else {
            fprintf(stderr, "usage: bench_tool_mem GOALD [--fake PATH] [--cap-mb N] [--runs N] "
                            "[--mode openai|anthropic]\n");
            return 2;
        }
    }
    if (!goald_bin || cap_mb < 1 || runs < 1 || runs > 16 || !mkdtemp(dir))
        return 2;
    if (!fake) { /* beside the binary: BUILD/goald, BUILD/tests/fake_llm */
        snprintf(fakebuf, sizeof(fakebuf), "%s", goald_bin);
        char *slash = strrchr(fakebuf, '/');
        snprintf(slash ? slash + 1 : fakebuf,
                 sizeof(fakebuf) - (size_t)(slash ? slash + 1 - fakebuf : 0), "tests/fake_llm");
        fake = fakebuf;
    }
    snprintf(db, sizeof(db), "%s/state/goald.db", dir);
    snprintf(repo, sizeof(repo), "%s/repo", dir);
    snprintf(cmd, sizeof(cmd),
             "git init -q -b main %s && cd %s && git config user.email b@example.com &&"
             " git config user.name bench && seq 1 200 > README && git add README &&"
             " git commit -q -m init",
             repo, repo);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_tool_mem: git setup failed\n");
        return 1;
    }
    snprintf(cmd, sizeof(cmd), "%s/state", dir);
    setenv("XDG_STATE_HOME", cmd, 1);
    setenv("GOALD_DB", db, 1);
    setenv("GOALD_LLM_MODEL", "bench-model", 1);
    setenv("GOALD_LLM_RETRY_BACKOFF_MS", "0", 1);
    setenv("GOALD_CONTROL_MAX_TURNS", "6", 1);
    unsetenv("GOALD_LLM_MODELS");
    unsetenv("GOALD_LLM_API_KEY");
    unsetenv("OPENAI_API_KEY");
    unsetenv("ANTHROPIC_API_KEY");
    /* every limit at its default but the file-size cap: the response cap
     * follows it (llm.max_response_bytes) */
    unsetenv("GOALD_LLM_MAX_RESPONSE_BYTES");
    snprintf(num, sizeof(num), "%ld", cap_mb);
    setenv("GOALD_TOOLS_MAX_FILE_MB", num, 1);
    if (config_load(NULL) != 0 || fs_mkdir_p(cmd, 0700) != 0 || store_open(&st, db) != 0)
        die("setup");
    printf("file-size cap (tools.max_file_mb): %ld MiB; llm.max_response_bytes: %lld "
           "(0: 2 x the cap + 1 MiB)\n",
           cap_mb, (long long)config_int(CFG_LLM_MAX_RESPONSE_BYTES));
    if (!only || !strcmp(only, "openai"))
        bench_mode("openai", fake, dir, st, repo, cap_mb, runs, &goal_no);
    if (!only || !strcmp(only, "anthropic"))
        bench_mode("anthropic", fake, dir, st, repo, cap_mb, runs, &goal_no);
    store_close(st);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_tool_mem: %s not removed\n", dir);
    return 0;
}
