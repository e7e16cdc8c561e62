/*
 * bench_sandbox - what confinement costs.
 *
 *   1. `true` under bubblewrap (sandbox_run) against a bare fork + exec of
 *      /bin/true: medians and their ratio (target: at most 10 ms more).
 *   2. the grep tool against raw `rg` with the same flags on a generated
 *      tree of 20,000 files (target: at most 1.3x).
 *
 * usage: bench_sandbox [RUNS]   (default 200 for 1, RUNS/10 for 2)
 * Build: cmake --build BUILD --target bench; results go to bench/RESULTS.md.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "tools/tool.h"
#include "util/config.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(int64_t *us, int n)
{
    qsort(us, (size_t)n, sizeof(*us), cmp_i64);
    return (n % 2 ? (double)us[n / 2] : (double)(us[n / 2 - 1] + us[n / 2]) / 2.0) / 1000.0;
}

/* fork + exec argv with stdout to /dev/null (or to out_fd), wait. */
static int spawn(const char *const *argv, const char *cwd)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void bench_start(int runs, const char *root)
{
    static const char *const t[] = {"/bin/true", NULL};
    static const char *const targv[] = {"true", NULL};
    int64_t *bare = calloc((size_t)runs, sizeof(int64_t));
    int64_t *sbx = calloc((size_t)runs, sizeof(int64_t));
    int64_t *nocg = calloc((size_t)runs, sizeof(int64_t));
    double mb, ms, mn;

    /* interleaved: bare, sandbox with the cgroup, sandbox without */
    for (int i = 0; i < runs; i++) {
        int64_t s = time_mono_us();
        if (spawn(t, NULL) != 0) {
            fprintf(stderr, "bare true failed\n");
            exit(1);
        }
        bare[i] = time_mono_us() - s;
        for (int pass = 0; pass < 2; pass++) {
            struct sandbox_spec spec = {0};
            struct sandbox_result r;
            int64_t *dst = pass == 0 ? sbx : nocg;
            setenv("GOALD_SANDBOX_CGROUP", pass == 0 ? "true" : "false", 1);
            config_load(NULL);
            spec.root = root;
            spec.argv = targv;
            s = time_mono_us();
            if (sandbox_run(&spec, &r) != 0 || r.exit_code != 0) {
                fprintf(stderr, "sandboxed true failed: %s\n", err_last());
                exit(1);
            }
            dst[i] = time_mono_us() - s;
            sandbox_result_release(&r);
        }
    }
    unsetenv("GOALD_SANDBOX_CGROUP");
    config_load(NULL);
    mb = median_ms(bare, runs);
    ms = median_ms(sbx, runs);
    mn = median_ms(nocg, runs);
    printf("## sandbox start (%d runs each)\n\n", runs);
    printf("| what | median ms |\n|---|---|\n");
    printf("| bare fork+exec /bin/true | %.2f |\n", mb);
    printf("| sandbox_run true (bwrap, pids+memory cgroups) | %.2f |\n", ms);
    printf("| sandbox_run true (bwrap, no cgroup) | %.2f |\n", mn);
    printf("\noverhead: %.2f ms (%.2f ms without the cgroups); ratio %.1fx; target <= 10 ms: %s\n\n",
           ms - mb, mn - mb, ms / mb, ms - mb <= 10.0 ? "met" : "NOT met");
    free(bare);
    free(sbx);
    free(nocg);
}

/* A tree of 20,000 files of ~2 KB in 200 folders; one in 1000 holds the needle. */
static void make_tree(const char *dir)
{
    char path[1024];
    char line[128];
    unsigned seed = 42;

    for (int d = 0; d < 200; d++) {
        snprintf(path, sizeof(path), "%s/d%03d", dir, d);
        fs_mkdir_p(path, 0755);
        for (int f = 0; f < 100; f++) {
            FILE *fp;
            int n = d * 100 + f;
            snprintf(path, sizeof(path), "%s/d%03d/f%05d.txt", dir, d, n);
            fp = fopen(path, "w");
            for (int l = 0; l < 30; l++) {
                int k = 0;
                for (; k < 60; k++) {
                    seed = seed * 1103515245u + 12345u;
                    line[k] = "abcdefghij klmnopqrst uvwxyz"[(seed >> 16) % 28];
                }
                line[k] = '\0';
                fprintf(fp, "%s%s\n", line, (n % 1000 == 7 && l == 5) ? " needle_xyz" : "");
            }
            fclose(fp);
        }
    }
}

static void bench_grep(int runs, const char *dir)
{
    static const char *const patterns[] = {"needle_xyz", "abc"};
    int64_t *raw = calloc((size_t)runs, sizeof(int64_t));
    int64_t *tool = calloc((size_t)runs, sizeof(int64_t));

    printf("## grep tool vs raw rg (20,000 files, %d runs each, warm cache)\n\n", runs);
    printf("| pattern | raw rg median ms | grep tool median ms | ratio | target <= 1.3x |\n");
    printf("|---|---|---|---|---|\n");
    for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
        const char *const argv[] = {"rg",    "--hidden", "--color=never", "--glob",
                                    "!.git", "--regexp", patterns[p],     "--",
                                    "./",    NULL};
        char args[256];
        struct tool_ctx ctx;
        double mr, mt;
        int matches = 0;

        snprintf(args, sizeof(args), "{\"pattern\":\"%s\"}", patterns[p]);
        spawn(argv, dir); /* warm the cache */
        /* interleaved, so that load from elsewhere hits both alike */
        for (int i = 0; i < runs; i++) {
            struct tool_result res;
            int64_t s = time_mono_us();
            spawn(argv, dir);
            raw[i] = time_mono_us() - s;
            memset(&ctx, 0, sizeof(ctx));
            ctx.root = dir;
            s = time_mono_us();
            tool_call(&ctx, "grep", args, &res);
            tool[i] = time_mono_us() - s;
            if (!res.ok) {
                fprintf(stderr, "grep tool failed: %s\n", strbuf_cstr(&res.output));
                exit(1);
            }
            matches = res.meta ? cJSON_GetObjectItem(res.meta, "matches")->valueint : 0;
            tool_result_release(&res);
        }
        mr = median_ms(raw, runs);
        mt = median_ms(tool, runs);
        printf("| `%s` (%d matches shown%s) | %.1f | %.1f | %.2fx | %s |\n", patterns[p], matches,
               matches >= 100 ? ", limit 100: rg stopped early" : "", mr, mt, mt / mr,
               mt / mr <= 1.3 ? "met" : "NOT met");
    }
    printf("\n");
    free(raw);
    free(tool);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 200;
    char dir[] = "/tmp/goald-bench-XXXXXX";
    char tree[512], wt[512];

    if (runs < 5)
        runs = 5;
    {
        FILE *f = fopen("/proc/loadavg", "r");
        char load[128] = "?";
        if (f) {
            if (!fgets(load, sizeof(load), f))
                snprintf(load, sizeof(load), "?");
            fclose(f);
        }
        load[strcspn(load, "\n")] = '\0';
        printf("cpus: %ld, load average before: %s\n\n", sysconf(_SC_NPROCESSORS_ONLN), load);
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    snprintf(tree, sizeof(tree), "%s/tree", dir);
    fs_mkdir_p(wt, 0755);
    fs_mkdir_p(tree, 0755);
    bench_start(runs, wt);
    make_tree(tree);
    bench_grep(runs / 10 < 10 ? 10 : runs / 10, tree);
    fs_remove_tree(dir);
    config_reset();
    return 0;
}
