#define PCRE2_CODE_UNIT_WIDTH 8
#include "util/redact.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

/* Each rule: a pattern and its replacement (pcre2 extended syntax: ${1}). */
static const struct rule {
    const char *pattern;
    const char *replacement;
} rules[] = {
    /* private key blocks */
    {"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\\s\\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
     REDACTED},
    /* OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-... */
    {"\\bsk-[A-Za-z0-9_\\-]{16,}", REDACTED},
    /* AWS access key ids */
    {"\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b", REDACTED},
    /* GitHub, Slack, Google API keys */
    {"\\bgh[pousr]_[A-Za-z0-9]{30,}\\b", REDACTED},
    {"\\bgithub_pat_[A-Za-z0-9_]{30,}\\b", REDACTED},
    {"\\bxox[abprs]-[A-Za-z0-9\\-]{10,}", REDACTED},
    {"\\bAIza[0-9A-Za-z_\\-]{35}\\b", REDACTED},
    /* Authorization: Bearer TOKEN */
    {"(?i)\\b(bearer)\\s+[A-Za-z0-9._~+/=\\-]{8,}", "${1} " REDACTED},
    /* credentials in URLs: scheme://user:password@host */
    {"(\\b[a-z][a-z0-9+.\\-]*://[^/\\s:@]+:)[^/\\s@]+@", "${1}" REDACTED "@"},
    /* NAME_TOKEN=value, NAME_SECRET=value, NAME_PASSWORD=value (shell, env files) */
    {"(?i)\\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY))="
     "(?:\"[^\"\\n]*\"|'[^'\\n]*'|[^\\s\"']+)",
     "${1}=" REDACTED},
    /* the same with spaces or a colon and a quoted value (code, YAML, JSON) */
    {"(?i)\\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)[\"']?"
     "[ \\t]*[=:][ \\t]*)(?:\"[^\"\\n]{3,}\"|'[^'\\n]{3,}')",
     "${1}\"" REDACTED "\""},
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))

static pcre2_code *codes[NRULES];
static char compile_error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    for (size_t i = 0; i < NRULES; i++) {
        int errcode;
        PCRE2_SIZE off;
        codes[i] = pcre2_compile((PCRE2_SPTR)rules[i].pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF |
                                 PCRE2_MATCH_INVALID_UTF, &errcode, &off, NULL);
        if (!codes[i]) {
            PCRE2_UCHAR msg[200];
            pcre2_get_error_message(errcode, msg, sizeof(msg));
            snprintf(compile_error, sizeof(compile_error), "redact: rule %zu at %zu: %s", i,
                     (size_t)off, (const char *)msg);
            return;
        }
        pcre2_jit_compile(codes[i], PCRE2_JIT_COMPLETE); /* best effort */
    }
}

/* Apply one rule to in, into a malloc'd *out. */
static int apply(size_t r, const char *in, size_t len, char **out, size_t *out_len, int *count)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(codes[r], NULL);
    PCRE2_SIZE cap = len + len / 4 + 256;
    char *buf = NULL;
    int n;

    if (!md)
        abort();
    for (;;) {
        PCRE2_SIZE olen = cap;
        buf = realloc(buf, cap + 1);
        if (!buf)
            abort();
        n = pcre2_substitute(codes[r], (PCRE2_SPTR)in, len, 0,
                             PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_EXTENDED |
                                 PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                             md, NULL, (PCRE2_SPTR)rules[r].replacement, PCRE2_ZERO_TERMINATED,
                             (PCRE2_UCHAR *)buf, &olen);
        if (n == PCRE2_ERROR_NOMEMORY) {
            cap = olen + 1;
            continue;
        }
        if (n < 0) {
            PCRE2_UCHAR msg[200];
            pcre2_get_error_message(n, msg, sizeof(msg));
            free(buf);
            pcre2_match_data_free(md);
            return err_set(ERR_FAIL, "redact: %s", (const char *)msg);
        }
        *out = buf;
        *out_len = olen;
        *count += n;
        pcre2_match_data_free(md);
        return 0;
    }
}

int redact_text(strbuf *out, const char *text, size_t len, int *count)
{
    char *cur = NULL;
    size_t cur_len = len;
    int total = 0;
    int rc = 0;

    pthread_once(&once, compile_all);
    if (compile_error[0])
        return err_set(ERR_FAIL, "%s", compile_error);
    for (size_t r = 0; r < NRULES; r++) {
        char *next = NULL;
        size_t next_len = 0;
        if ((rc = apply(r, cur ? cur : text, cur_len, &next, &next_len, &total)) != 0)
            goto out;
        free(cur);
        cur = next;
        cur_len = next_len;
    }
    rc = strbuf_add(out, cur ? cur : text, cur_len);
    if (count)
        *count = total;
out:
    free(cur);
    return rc;
}

char *redact_str(const char *s, int *count)
{
    strbuf sb = STRBUF_INIT;

    if (!s)
        return NULL;
    if (redact_text(&sb, s, strlen(s), count) != 0) {
        /* never hand back the unredacted text */
        strbuf_release(&sb);
        if (count)
            *count = 0;
        return strdup(REDACTED);
    }
    return strbuf_detach(&sb, NULL);
}
