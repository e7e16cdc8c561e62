/*
 * bench_llm - client overhead of one chat call against fake_llm on loopback.
 *
 *   bench_llm [--fake PATH] [--calls N] [--warmup N]
 *
 * Starts tests/fakes/fake_llm (answering at once, forever), then times N
 * calls each of:
 *   raw      one libcurl POST of the same request body on a reused handle,
 *            the body read into memory and not parsed (the floor);
 *   chat     llm_chat() without a store: request building, headers, the
 *            POST, response parsing, cost;
 *   chat+db  llm_chat() with a store: the same plus the llm.request and
 *            llm.response events and the usage accounting (three
 *            transactions on a WAL database).
 * Prints min, median and p90 in microseconds; the overhead is the median
 * of a row minus the median of raw.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/llm.h"
#include "store/store.h"
#include "util/config.h"
#include "util/fsutil.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, int64_t *t, int n, int64_t base)
{
    qsort(t, (size_t)n, sizeof(*t), cmp64);
    printf("%-8s  n=%-6d min=%6lld  median=%6lld  p90=%6lld  us", name, n, (long long)t[0],
           (long long)t[n / 2], (long long)t[n * 9 / 10]);
    if (base >= 0)
        printf("   overhead vs raw (median): %+lld us", (long long)(t[n / 2] - base));
    printf("\n");
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    return strbuf_add(ud, p, s * n) == 0 ? s * n : 0; /* 0: curl stops with an error */
}

int main(int argc, char **argv)
{
    const char *fake = "tests/fake_llm";
    int calls = 2000, warmup = 100;
    char dir[] = "/tmp/bench_llm.XXXXXX";
    char script[512], portf[512], url[256], db[512];
    char port[32] = "";
    pid_t pid;
    int64_t *t;
    int64_t raw_median;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fake") && i + 1 < argc)
            fake = argv[++i];
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_llm [--fake PATH] [--calls N] [--warmup N]\n");
            return 2;
        }
    }
    if (calls < 10 || !mkdtemp(dir))
        return 2;
    snprintf(script, sizeof(script), "%s/s.jsonl", dir);
    snprintf(portf, sizeof(portf), "%s/port", dir);
    snprintf(db, sizeof(db), "%s/bench.db", dir);
    const char *line = "{\"content\":\"ok\",\"usage\":{\"input\":1200,\"cached_input\":1000,"
                       "\"output\":20},\"repeat\":0}\n";
    if (fs_write_atomic(script, line, strlen(line), 0600) != 0)
        return 1;
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
        fprintf(stderr, "bench_llm: %s did not start\n", fake);
        kill(pid, SIGTERM);
        return 1;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%s/v1", port);
    setenv("GOALD_LLM_PROVIDER", "openai", 1);
    setenv("GOALD_LLM_MODEL", "bench-model", 1);
    setenv("GOALD_LLM_BASE_URL", url, 1);
    setenv("OPENAI_API_KEY", "sk-bench-0000000000000000", 1);
    unsetenv("GOALD_LLM_API_KEY");
    if (config_load(NULL) != 0) {
        fprintf(stderr, "bench_llm: %s\n", err_last());
        return 1;
    }
    t = calloc((size_t)calls, sizeof(*t));

    /* the same request every call: a system prompt, a user turn, two tools */
    struct llm_message msgs[2];
    struct llm_tool_def tools[2] = {
        {"read", "read a file",
         "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}"},
        {"bash", "run a command",
         "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}"},
    };
    struct llm_request req = {0};
    llm_message_init(&msgs[0], LLM_SYSTEM, "You are a careful engineer. Use the tools.");
    llm_message_init(&msgs[1], LLM_USER, "Add a --version flag to the CLI.");
    req.stage = "execute";
    req.run_id = "bench-run";
    req.messages = msgs;
    req.nmessages = 2;
    req.tools = tools;
    req.ntools = 2;

    /* raw: libcurl alone, same body and headers */
    {
        CURL *h = curl_easy_init();
        struct curl_slist *hd = NULL;
        char full[300];
        const char *body =
            "{\"model\":\"bench-model\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a "
            "careful engineer. Use the tools.\"},{\"role\":\"user\",\"content\":\"Add a --version "
            "flag to the "
            "CLI.\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\","
            "\"description\":\"read a file\",\"parameters\":{\"type\":\"object\",\"properties\":{"
            "\"path\":{\"type\":\"string\"}}}}},{\"type\":\"function\",\"function\":{\"name\":"
            "\"bash\",\"description\":\"run a command\",\"parameters\":{\"type\":\"object\","
            "\"properties\":{\"command\":{\"type\":\"string\"}}}}}],\"max_tokens\":8192}";
        snprintf(full, sizeof(full), "%s/chat/completions", url);
        hd = curl_slist_append(hd, "Content-Type: application/json");
        hd = curl_slist_append(hd, "Authorization: Bearer sk-bench-0000000000000000");
        hd = curl_slist_append(hd, "X-Goald-Stage: execute");
        hd = curl_slist_append(hd, "X-Goald-Run: bench-run");
        hd = curl_slist_append(hd, "Expect:");
        for (int i = -warmup; i < calls; i++) {
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
                fprintf(stderr, "bench_llm: raw POST failed\n");
                return 1;
            }
            if (i >= 0)
                t[i] = time_mono_us() - t0;
            strbuf_release(&out);
        }
        curl_slist_free_all(hd);
        curl_easy_cleanup(h);
        report("raw", t, calls, -1);
        raw_median = t[calls / 2];
    }

    for (int with_db = 0; with_db < 2; with_db++) {
        store *st = NULL;
        llm_client *c = NULL;
        if (with_db && store_open(&st, db) != 0) {
            fprintf(stderr, "bench_llm: %s\n", err_last());
            return 1;
        }
        if (llm_client_open(&c, st) != 0) {
            fprintf(stderr, "bench_llm: %s\n", err_last());
            return 1;
        }
        for (int i = -warmup; i < calls; i++) {
            struct llm_response r;
            struct llm_error e;
            int64_t t0 = time_mono_us();
            if (llm_chat(c, 0, &req, &r, &e) != 0) {
                fprintf(stderr, "bench_llm: chat failed: %s\n", e.message ? e.message : err_last());
                return 1;
            }
            if (i >= 0)
                t[i] = time_mono_us() - t0;
            llm_response_release(&r);
            llm_error_release(&e);
        }
        report(with_db ? "chat+db" : "chat", t, calls, raw_median);
        llm_client_free(c);
        store_close(st);
    }
    llm_message_release(&msgs[0]);
    llm_message_release(&msgs[1]);
    free(t);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fs_remove_tree(dir);
    config_reset();
    return 0;
}
