/*
 * bench_cli - the foundation's figures:
 *   1. `goald submit` median wall time per goal over 10,000 submits;
 *   2. `goald report ID --json` median on a database holding 100,000 work
 *      items (inserted directly): a goal of 100 items among 1,000 goals, and
 *      the worst case of one goal holding all 100,000;
 *   3. `goald --help` cold start: median wall time and peak RSS.
 * Usage: bench_cli GOALD_BINARY [WORKDIR]   (numbers on stdout)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "store/internal.h"
#include "util/err.h"
#include "util/id.h"
#include "util/timeutil.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Run argv with stdout to out_path (or /dev/null); returns wall ms, peak
 * RSS in KiB through rss_kb. */
static double spawn(char *const argv[], const char *out_path, long *rss_kb)
{
    struct rusage ru;
    int status;
    int64_t t0 = time_mono_us();
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: %s %s failed\n", argv[0], argv[1]);
        exit(1);
    }
    if (rss_kb)
        *rss_kb = ru.ru_maxrss;
    return (double)(time_mono_us() - t0) / 1000.0;
}

static void read_line(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");

    if (!f || !fgets(out, (int)n, f)) {
        fprintf(stderr, "bench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static void fill_items(const char *db, const char *goal_id, int n, int64_t base)
{
    store *st;
    store_stmt *s;
    static const char *effort[] = {"S", "M", "L", "XL"};
    static const char *status[] = {"done", "queued", "ready", "skipped", "in_progress"};

    if (store_open(&st, db) != 0) {
        fprintf(stderr, "bench: open %s failed\n", db);
        exit(1);
    }
    store_tx_begin(st);
    store_prepare_uncached(st, &s,
                           "INSERT INTO work_items(id, goal_id, key, title, effort, status,"
                           " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (int i = 0; i < n; i++) {
        char id[ID_SIZE], key[32];
        id_new(id);
        snprintf(key, sizeof(key), "wi-%d", i + 1);
        store_bind_text(s, 1, id);
        store_bind_text(s, 2, goal_id);
        store_bind_text(s, 3, key);
        store_bind_text(s, 4, "a work item of the benchmark");
        store_bind_text(s, 5, effort[i % 4]);
        store_bind_text(s, 6, status[i % 5]);
        store_bind_i64(s, 7, base + i);
        store_bind_i64(s, 8, base + i);
        if (store_step(s) != STORE_DONE) {
            fprintf(stderr, "bench: insert failed\n");
            exit(1);
        }
        store_done(s);
    }
    store_finalize(s);
    if (store_tx_commit(st) != 0) {
        fprintf(stderr, "bench: commit failed: %s\n", err_last());
        exit(1);
    }
    store_close(st);
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "build/goald";
    const char *dir = argc > 2 ? argv[2] : "/tmp/goald-bench";
    int n_submit = getenv("BENCH_SUBMITS") ? atoi(getenv("BENCH_SUBMITS")) : 10000;
    char db[512], goal[512], idfile[512], id[64], first_id[64], cmd[1200];
    double *t;
    long rss = 0, rss_max = 0;

    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0)
        return 1;
    snprintf(db, sizeof(db), "%s/bench.db", dir);
    snprintf(goal, sizeof(goal), "%s/goal.json", dir);
    snprintf(idfile, sizeof(idfile), "%s/id", dir);
    {
        FILE *f = fopen(goal, "w");
        fputs("{\"title\": \"Add a --version flag\", \"priority\": 80, \"budget\": "
              "{\"max_tokens\": 500000, \"max_hours\": 4, \"max_cost_usd\": 2.0}, "
              "\"success_criteria\": [\"--version prints it\"], \"verification\": "
              "[{\"name\": \"tests\", \"type\": \"test\", \"command\": \"make test\"}]}\n",
              f);
        fclose(f);
    }

    /* 1. submit */
    t = calloc((size_t)n_submit, sizeof(*t));
    {
        char *av[] = {(char *)bin, "--db", db, "submit", goal, NULL};
        for (int i = 0; i < n_submit; i++)
            t[i] = spawn(av, i == 0 ? idfile : NULL, NULL);
    }
    read_line(idfile, first_id, sizeof(first_id));
    printf("submit: %d goals, median %.3f ms per submit (process start to exit)\n", n_submit,
           median(t, (size_t)n_submit));
    free(t);

    /* 2. report on 100,000 items: 1,000 goals x 100 items (plus a 0-item remainder) */
    {
        char small[512];
        snprintf(small, sizeof(small), "%s/report.db", dir);
        char *sub[] = {(char *)bin, "--db", small, "submit", goal, NULL};
        int64_t base = time_now_ms();
        for (int g = 0; g < 1000; g++) {
            spawn(sub, idfile, NULL);
            read_line(idfile, id, sizeof(id));
            fill_items(small, id, 100, base + g * 100);
        }
        double r[51];
        char *rep[] = {(char *)bin, "--db", small, "report", id, "--json", NULL};
        for (int i = 0; i < 51; i++)
            r[i] = spawn(rep, NULL, NULL);
        printf("report --json: goal of 100 items in a database of 100,000 items, "
               "median %.3f ms\n",
               median(r, 51));
        char *rept[] = {(char *)bin, "--db", small, "report", id, NULL};
        for (int i = 0; i < 51; i++)
            r[i] = spawn(rept, NULL, NULL);
        printf("report (text): same goal, median %.3f ms\n", median(r, 51));

        fill_items(db, first_id, 100000, base);
        char *big[] = {(char *)bin, "--db", db, "report", first_id, "--json", NULL};
        for (int i = 0; i < 21; i++)
            r[i] = spawn(big, NULL, NULL);
        printf("report --json: one goal holding all 100,000 items (worst case), median %.3f "
               "ms\n",
               median(r, 21));
    }

    /* 3. --help cold start */
    {
        double h[201];
        char *av[] = {(char *)bin, "--help", NULL};
        for (int i = 0; i < 201; i++) {
            h[i] = spawn(av, NULL, &rss);
            if (rss > rss_max)
                rss_max = rss;
        }
        printf("--help cold start: median %.3f ms, peak RSS %.2f MiB (max of 201 runs)\n",
               median(h, 201), (double)rss_max / 1024.0);
    }
    return 0;
}
