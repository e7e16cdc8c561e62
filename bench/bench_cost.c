/*
 * bench_cost - the cost figures of one run from fake_llm's request log.
 *
 *   bench_cost LOG.jsonl     (bench/bench_cost.sh drives the run and calls it)
 *
 * For every execute request in the log (X-Goald-Stage: execute), in order:
 * its input tokens (the request's tools and messages as JSON, bytes / 4,
 * the estimate docs/llm.md describes) and the share of it that is a byte
 * prefix of the previous request's (tools first, then the messages in
 * order: what a provider's prompt cache can serve).  Prints one line per
 * turn, then the mean and max input tokens per turn, the cacheable share
 * weighted by tokens, and the total input tokens of the run.  Requests of
 * other stages (condense, review ...) count in the total only.
 * Given an executable (bench/run passes goald),
 * it says how to run it and exits 0.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"
#include "util/strbuf.h"

/* A bench script or request that outgrows its buffer is a broken bench. */
static void must_fit(int rc)
{
    if (rc) {
        fprintf(stderr, "bench: %s\n", err_last());
        exit(1);
    }
}
static char *request_text(const cJSON *body)
{
    strbuf sb = STRBUF_INIT;
    const cJSON *m;
    char *t;

    strbuf_init(&sb, (size_t)1 << 30);
    t = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(body, "tools"));
    must_fit(strbuf_adds(&sb, t ? t : ""));
    cJSON_free(t);
    t = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(body, "system"));
    must_fit(strbuf_adds(&sb, t ? t : ""));
    cJSON_free(t);
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(body, "messages"))
    {
        t = cJSON_PrintUnformatted(m);
        must_fit(strbuf_adds(&sb, t ? t : ""));
        cJSON_free(t);
    }
    return strbuf_detach(&sb, NULL);
}

int main(int argc, char **argv)
{
    FILE *f;
    char *line = NULL, *prev = NULL;
    size_t cap = 0, n = strlen(argc > 1 ? argv[1] : "");
    long turn = 0;
    double sum_tok = 0, max_tok = 0, sum_common = 0, sum_len = 0, total_tok = 0;

    (void)n;
    if (argc < 2 || access(argv[1], X_OK) == 0) {
        printf("bench_cost: run bench/bench_cost.sh BUILD_DIR (it calls bench_cost on the "
               "fake's request log)\n");
        return 0;
    }
    if (!(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "bench_cost: %s: cannot open\n", argv[1]);
        return 1;
    }
    printf("turn  input_tokens  cacheable_prefix\n");
    while (getline(&line, &cap, f) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "headers"), "x-goald-stage");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(o, "body");
        char *t = cJSON_IsObject(body) ? request_text(body) : NULL;
        size_t len = t ? strlen(t) : 0, common = 0;
        double tok = (double)len / 4;

        total_tok += tok;
        if (t && cJSON_IsString(st) && !strcmp(st->valuestring, "execute")) {
            turn++;
            while (prev && prev[common] && prev[common] == t[common])
                common++;
            if (turn > 1) { /* the first request has nothing before it to reuse */
                sum_common += (double)common;
                sum_len += (double)len;
            }
            sum_tok += tok;
            if (tok > max_tok)
                max_tok = tok;
            printf("%4ld  %12.0f  %15.1f%%\n", turn, tok,
                   len ? 100.0 * (double)common / (double)len : 0);
            free(prev);
            prev = t;
            t = NULL;
        }
        free(t);
        cJSON_Delete(o);
    }
    fclose(f);
    printf("execute turns: %ld\ninput tokens per turn: mean %.0f, max %.0f\n"
           "cacheable prefix (turns 2..n, weighted by tokens): %.1f%%\n"
           "input tokens of the run (every stage): %.0f\n",
           turn, turn ? sum_tok / (double)turn : 0, max_tok,
           sum_len > 0 ? 100.0 * sum_common / sum_len : 0, total_tok);
    free(prev);
    free(line);
    return 0;
}
