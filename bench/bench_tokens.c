/*
 * bench_tokens - tokens per stage of one goal from fake_llm's request log.
 *
 *   bench_tokens LOG.jsonl     (bench/bench_tokens.sh drives the goal and calls it)
 *
 * Reads the usage fake_llm answered for each request ("usage": "auto":
 * input = the prompt's bytes / 4, cached = the prefix shared byte for byte
 * with the previous prompt of the same run / 4, output = the reply's
 * bytes / 4) with the request's X-Goald-Stage and X-Goald-Run, and prints
 * per stage, in the order first seen: calls, input, cached and output
 * tokens and the cached share of the input.  Then, for the execute runs:
 * each run's turns, input and cached tokens, and the cacheable share of
 * all execute input tokens (every request; and without each run's first
 * request, which has nothing before it in its run).
 * Given an executable (bench/run passes goald), it says how to run it and
 * exits 0.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ROWS 64

struct row {
    char name[64];
    long calls;
    double in, cached, out, first_in; /* first_in: the runs' first requests (execute) */
};

static struct row *row_of(struct row *rows, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    if (*n == MAX_ROWS)
        return &rows[MAX_ROWS - 1]; /* more runs than rows: the last row takes them */
    snprintf(rows[*n].name, sizeof(rows[*n].name), "%s", name);
    return &rows[(*n)++];
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *header(const cJSON *o, const char *k)
{
    const char *v = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "headers"), k));
    return v ? v : "?";
}

static void print_rows(const struct row *rows, int n)
{
    struct row t = {"total", 0, 0, 0, 0, 0};

    printf("%-10s %6s %10s %10s %8s %8s\n", "stage", "calls", "input", "cached", "cached%",
           "output");
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        printf("%-10s %6ld %10.0f %10.0f %7.1f%% %8.0f\n", r->name, r->calls, r->in, r->cached,
               r->in > 0 ? 100 * r->cached / r->in : 0, r->out);
        t.calls += r->calls;
        t.in += r->in;
        t.cached += r->cached;
        t.out += r->out;
    }
    printf("%-10s %6ld %10.0f %10.0f %7.1f%% %8.0f\n", t.name, t.calls, t.in, t.cached,
           t.in > 0 ? 100 * t.cached / t.in : 0, t.out);
}

static void print_runs(const struct row *runs, int n)
{
    double in = 0, cached = 0, first = 0, max_in = 0;

    printf("\nexecute runs:\n%-38s %6s %10s %10s %8s\n", "run", "turns", "input", "cached",
           "cached%");
    for (int i = 0; i < n; i++) {
        const struct row *r = &runs[i];
        printf("%-38s %6ld %10.0f %10.0f %7.1f%%\n", r->name, r->calls, r->in, r->cached,
               r->in > 0 ? 100 * r->cached / r->in : 0);
        in += r->in;
        cached += r->cached;
        first += r->first_in;
        if (r->out > max_in)
            max_in = r->out;
    }
    printf("execute input tokens: %.0f, largest request %.0f\n", in, max_in);
    printf("cacheable prefix share, every execute request: %.1f%%\n",
           in > 0 ? 100 * cached / in : 0);
    printf("cacheable prefix share, turns 2..n of each run: %.1f%%\n",
           in - first > 0 ? 100 * cached / (in - first) : 0);
}

int main(int argc, char **argv)
{
    static struct row stages[MAX_ROWS], runs[MAX_ROWS];
    int nstages = 0, nruns = 0;
    char *line = NULL;
    size_t cap = 0;
    FILE *f;

    if (argc < 2 || access(argv[1], X_OK) == 0) {
        printf("bench_tokens: run bench/bench_tokens.sh BUILD_DIR [WINDOW] (it calls "
               "bench_tokens on the fake's request log)\n");
        return 0;
    }
    if (!(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "bench_tokens: %s: cannot open\n", argv[1]);
        return 1;
    }
    while (getline(&line, &cap, f) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "usage");
        const char *stage = header(o, "x-goald-stage");
        struct row *s;
        double in = num(u, "input"), cached = num(u, "cached_input");

        if (!cJSON_IsObject(u)) { /* refused (context length) or not scripted "auto" */
            cJSON_Delete(o);
            continue;
        }
        s = row_of(stages, &nstages, stage);
        s->calls++;
        s->in += in;
        s->cached += cached;
        s->out += num(u, "output");
        if (!strcmp(stage, "execute")) {
            struct row *r = row_of(runs, &nruns, header(o, "x-goald-run"));
            if (!r->calls)
                r->first_in = in;
            r->calls++;
            r->in += in;
            r->cached += cached;
            if (in > r->out)
                r->out = in; /* a run's row keeps its largest request in out */
        }
        cJSON_Delete(o);
    }
    fclose(f);
    free(line);
    print_rows(stages, nstages);
    print_runs(runs, nruns);
    return 0;
}
