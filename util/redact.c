#define PCRE2_CODE_UNIT_WIDTH 8
#include "util/redact.h"

#include <pcre2.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/xalloc.h"

/* Each rule: a pattern and its replacement (pcre2 extended syntax: ${1}).
 * The families follow public secret scanners (gitleaks' rule set): fixed
 * token shapes first, then values by their context (headers, URLs,
 * assignments).  Applied in order; a later rule never re-redacts
 * ***REDACTED***.
 *
 * Assignments (KEY is a name containing password, passwd, passphrase,
 * secret, token, key, auth, credential or creds): a quoted value after =,
 * :, :=, =>; an unquoted value after = (.env, INI, shell) when it is a whole
 * word (followed by the end of the line, a space, ; , # or &); after :
 * (YAML) when it is the last word of its line (a comment may follow).  The
 * value is masked only when secret_like() (below) judges it random, so that
 * code keeps its literals (`token = "rc"`).  References are not values: a
 * call or index (`password = get_password()`, `token=os.environ["T"]`), a
 * dotted name (`token = self.token`), $VAR / ${VAR} / ${{ secrets.X }},
 * numbers, true/false/null/none, <placeholders>, `==` comparisons, and a
 * path ending in such a name (`/etc/passwd: x`). */
/* Bounded on both sides: unbounded runs made the match quadratic in a long
 * run of word characters, dots and dashes (50 KiB of "a-a-a-..." took 9 s;
 * a gate printing 1 MB of it, an hour).  No key name is longer. */
#define KEYNAME                                                                                    \
    "[\\w.-]{0,64}?(?:passw(?:or)?d|passphrase|secret|token|key|auth|credential|creds)"            \
    "[\\w.-]{0,64}"
/* what may not start a value: a reference, a literal we keep, our mark */
#define NOT_REF                                                                                    \
    "(?!\\$|\\*\\*\\*REDACTED|\\{\\{|<[^>\\s]*>(?:[\\s;,#&]|$)|"                                 \
    "(?:true|false|null|none|nil|undefined|\\d+(?:\\.\\d+)?)(?:[\\s;,#&]|$)|"                     \
    "[A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)+(?:[\\s;,#&]|$))"
/* (a backslash ends it: "PASSWORD=x\\n" inside JSON text) */
#define UNQUOTED "[^\\s\"'`;,()\\[\\]{}<>\\\\]++(?=[\\s;,#&\"'\\\\]|$)"
#define PEM_BEGIN "-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
#define PEM_END "-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
#define NL "(?:\\r?\\n|(?:\\\\r)?\\\\n)"
/* where a line of a key body may start: a line's start, after an escaped
 * newline (\n in JSON or code), after a quote */
#define LINE_START "(?:^|(?<=\\\\n)|(?<=[\"'`]))"
/* what may stand before a body line: a line number (cat -n, nl, grep -n),
 * a grep file name, a diff's +, - or space, indentation */
#define LINE_PREFIX                                                                                \
    "(?:[ \\t]*\\d{1,9}[\\t:-][ \\t]?|[\\w./-]{1,200}?[:-]\\d{1,9}[:-]|[+ -]?[ \\t]*)"
/* lines of a key body with their newlines: a full one (PEM and OpenSSH
 * wrap at 64 and 70), the last (shorter, maybe padded), an armor checksum
 * (=XXXX); a PEM header line is none of them */
#define B64_FULL "(?>" LINE_PREFIX "[A-Za-z0-9+/]{40,200}={0,2}[ \\t]*" NL ")"
#define B64_LAST "(?>" LINE_PREFIX "[A-Za-z0-9+/]{1,200}={0,2}[ \\t]*" NL ")"
#define B64_CKSUM "(?>" LINE_PREFIX "=[A-Za-z0-9+/]{4}[ \\t]*" NL ")"
/* a BEGIN line that is not a private key's, and the base64 lines under it */
#define PUBLIC_BLOCK                                                                               \
    "-----BEGIN (?![A-Z0-9 _-]{0,100}PRIVATE)[A-Z0-9 _-]{1,100}-----(?:" NL "(?>" LINE_PREFIX      \
    "[A-Za-z0-9+/=]{1,200}[ \\t]*(?=" NL "|$)))*+"
/* a full line of a PEM (64) or OpenSSH (70) body, its newline not taken */
#define B64_LINE64 "(?>" LINE_PREFIX "[A-Za-z0-9+/]{64}(?:[A-Za-z0-9+/]{6})?[ \\t]*(?=" NL "|$))"

static const struct rule {
    const char *pattern;
    const char *replacement; /* NULL: a keyword rule, its group "v" judged by secret_like() */
} rules[] = {
    /* private key blocks, whole */
    {PEM_BEGIN "[\\s\\S]*?" PEM_END, REDACTED},
    /* a partial one (no END): the BEGIN line and the key body after it -
     * base64 lines, header lines (Proc-Type: ...), blank lines; also
     * with escaped newlines (\n in JSON or code) */
    {PEM_BEGIN "[A-Za-z0-9+/= \\t]*(?:" NL
               "(?:[A-Za-z0-9+/=]++|[+ ]?[A-Za-z-]+: [^\\r\\n\\\\]*|[ \\t]*)"
               "(?=\\r?\\n|\\\\[rn]|[\"']|$))*",
     REDACTED},
    /* a key body shown without its BEGIN line (a read with an offset,
     * `tail`, `sed -n 5,40p`, a cut output tail) up to its END line: the
     * base64 lines just before it.  After the run of full lines (*SKIP)
     * moves the next attempt past it, so that a long run of base64 with no
     * END line after it costs one pass, not one per line. */
    {"(?m)" LINE_START "(?:" B64_FULL "++(*SKIP)" B64_LAST "?|" B64_LAST ")" B64_CKSUM
     "?" LINE_PREFIX PEM_END,
     REDACTED},
    /* a body with neither line: four or more lines of exactly 64 (PEM) or
     * 70 (OpenSSH) base64 characters and nothing else, and the shorter last
     * line after them.  Code keeps base64 in quoted strings, and tools wrap
     * it at 76 (base64(1)) or not at all: those stay.  A block under a
     * BEGIN line that is not a private key's (a certificate, a public key)
     * is passed over whole: (*SKIP)(*FAIL) goes on after it. */
    {"(?m)" PUBLIC_BLOCK "(*SKIP)(*FAIL)|" LINE_START B64_LINE64 "(?:" NL B64_LINE64
     "){3,}+(?:" NL LINE_PREFIX "[A-Za-z0-9+/]{1,70}={0,2}(?=[ \\t]*(?:" NL "|$)))?",
     REDACTED},
    /* OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-... */
    {"\\bsk-[A-Za-z0-9_\\-]{16,}", REDACTED},
    /* AWS access key ids (AKIA long-term, ASIA temporary, and the other
     * unique-id prefixes) */
    {"\\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\\b",
     REDACTED},
    /* AWS secret access keys: 40 base64 characters near "aws" */
    {"(?i)(\\baws[\\w.-]{0,30}?[\"']?[ \\t]*(?:=|:|=>|:=)[ \\t]*[\"'`]?)(?-i)[A-Za-z0-9/+]{40}"
     "(?![A-Za-z0-9/+=])",
     "${1}" REDACTED},
    /* GitHub: personal, OAuth, user-to-server, server-to-server, refresh;
     * fine-grained personal tokens */
    {"\\bgh[pousr]_[A-Za-z0-9]{30,}\\b", REDACTED},
    {"\\bgithub_pat_[A-Za-z0-9_]{30,}\\b", REDACTED},
    /* GitLab: personal/project/group (glpat-), pipeline trigger, deploy,
     * runner, CI job, OAuth, feed, incoming mail, agent, SCIM... tokens;
     * runner registration tokens */
    {"\\bgl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent|oas|ft|cf|sa)-[\\w-]{20,}(?:\\.[\\w-]{2,})*",
     REDACTED},
    {"\\bGR1348941[\\w-]{20,}", REDACTED},
    /* Slack: bot, user, app-level, config and refresh tokens; webhooks */
    {"\\bxox(?:e\\.xox[bp]|[abposre])-[A-Za-z0-9-]{10,}", REDACTED},
    {"\\bxapp-\\d-[A-Za-z0-9]+-\\d+-[A-Za-z0-9]+", REDACTED},
    {"(\\bhooks\\.slack\\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/_-]+", "${1}" REDACTED},
    /* Stripe secret and restricted keys, webhook secrets */
    {"\\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}", REDACTED},
    {"\\bwhsec_[A-Za-z0-9]{24,}", REDACTED},
    /* Google API keys */
    {"\\bAIza[0-9A-Za-z_\\-]{35}", REDACTED},
    /* JSON web tokens: header.payload[.signature], both base64url JSON */
    {"\\bey[A-Za-z0-9_-]{10,}\\.ey[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_\\-+/=]*", REDACTED},
    /* Authorization: Bearer TOKEN / Basic CREDENTIALS / token TOKEN */
    {"(?i)\\b(bearer)\\s+[A-Za-z0-9._~+/=\\-]{8,}", "${1} " REDACTED},
    {"(?i)\\b(authorization[\"']?[ \\t]*[:=][ \\t]*[\"']?(?:basic|token))[ \\t]+"
     "[A-Za-z0-9._~+/=\\-]{8,}",
     "${1} " REDACTED},
    /* credentials in URLs: scheme://user:password@host */
    {"(\\b[a-z][a-z0-9+.\\-]*://[^/\\s:@]+:)[^/\\s@]+@", "${1}" REDACTED "@"},
    /* KEY = "value" / KEY: 'value' (code, JSON, YAML, INI, .env) */
    {"(?i)((?<![/\\\\])\\b" KEYNAME
     "[\"']?[ \\t]*(?:=>|:=|\\?=|=(?!=)|:(?!:))[ \\t]*)([\"'`])" NOT_REF "(?<v>[^\"'`\\r\\n]+)\\2",
     NULL},
    /* KEY=value (.env, INI, shell; also `export KEY=value`) */
    {"(?i)((?<![/\\\\])\\b" KEYNAME "[\"']?[ \\t]*(?:=>|:=|\\?=|=(?!=))[ \\t]*)" NOT_REF
     "(?<v>" UNQUOTED ")",
     NULL},
    /* key: value, the value a word ending its line (YAML; also behind a
     * grep or diff prefix) */
    {"(?im)((?<![/\\\\])\\b" KEYNAME "[\"']?[ \\t]*:[ \\t]+)" NOT_REF
     "(?<v>[^\\s\"'`;,()\\[\\]{}<>#\\\\]++)(?=[ \\t]*(?:#[^\\n]*)?(?:\\r?$|\\\\[rn]))",
     NULL},
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
            /* truncation: ok, a message */
            snprintf(compile_error, sizeof(compile_error), "redact: rule %zu at %zu: %s", i,
                     (size_t)off, (const char *)msg);
            return;
        }
        pcre2_jit_compile(codes[i], PCRE2_JIT_COMPLETE); /* best effort */
    }
}

/* Whether a keyword-assigned value looks like a secret rather than code:
 * after gitleaks' generic-api-key rule (a value of 10 or more characters
 * whose Shannon entropy is above a threshold), with what tells a random
 * token from an ordinary word or name: no blank; a run of at least
 * SECRET_MIN_RUN letters and digits; and letters, digits and case changing
 * often (on average every SECRET_MAX_CLASS_RUN characters or sooner; a
 * Capitalised word is one run).  So "rc", "password", "db-password",
 * "bearer", "application/json", "PasswordResetToken", "en_US.UTF-8" or a
 * version stay, and "xCW0CVn4Cqlb", a hex digest, base64 or a UUID go. */
#define SECRET_MIN_LEN 10
#define SECRET_MIN_RUN 8
#define SECRET_MIN_ENTROPY 3.0
#define SECRET_MAX_CLASS_RUN 2.5
static int char_class(unsigned char c)
{
    if (c >= 'a' && c <= 'z')
        return 1;
    if (c >= 'A' && c <= 'Z')
        return 2;
    if (c >= '0' && c <= '9')
        return 3;
    return 0;
}

static int secret_like(const char *v, size_t n)
{
    size_t freq[256] = {0}, alnum = 0, runs = 0, seg = 0, longest = 0, upper_run = 0;
    int prev = 0;
    double h = 0;

    if (n < SECRET_MIN_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        int k = char_class(c);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            return 0;
        freq[c]++;
        if (!k) {
            prev = 0;
            seg = upper_run = 0;
            continue;
        }
        alnum++;
        if (++seg > longest)
            longest = seg;
        /* a new run, unless lower case follows one capital letter */
        if (k != prev && !(prev == 2 && k == 1 && upper_run == 1))
            runs++;
        upper_run = k == 2 ? upper_run + 1 : 0;
        prev = k;
    }
    if (longest < SECRET_MIN_RUN || (double)alnum > SECRET_MAX_CLASS_RUN * (double)runs)
        return 0;
    for (size_t c = 0; c < 256; c++)
        if (freq[c]) {
            double p = (double)freq[c] / (double)n;
            h -= p * log2(p);
        }
    return h >= SECRET_MIN_ENTROPY;
}

/* A keyword rule: each match's group "v" is replaced when secret_like();
 * the rest of the text is copied as it is. */
static int apply_keyword(size_t r, const char *in, size_t len, char **out, size_t *out_len,
                         int *count)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(codes[r], NULL);
    int v = pcre2_substring_number_from_name(codes[r], (PCRE2_SPTR) "v");
    strbuf sb = STRBUF_INIT;
    PCRE2_SIZE at = 0, copied = 0;
    int rc = 0, n = PCRE2_ERROR_NOMATCH;

    xcheck(md);
    strbuf_init(&sb, SIZE_MAX - 1); /* the caller's buffer holds the cap */
    while (at <= len && (n = pcre2_match(codes[r], (PCRE2_SPTR)in, len, at, 0, md, NULL)) > v) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        PCRE2_SIZE vs = ov[2 * v], ve = ov[2 * v + 1];
        if (vs != PCRE2_UNSET && secret_like(in + vs, ve - vs)) {
            if ((rc = strbuf_add(&sb, in + copied, vs - copied)) != 0 ||
                (rc = strbuf_adds(&sb, REDACTED)) != 0)
                goto out;
            copied = ve;
            (*count)++;
        }
        at = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
    }
    if (n < 0 && n != PCRE2_ERROR_NOMATCH && at <= len) {
        PCRE2_UCHAR msg[200];
        pcre2_get_error_message(n, msg, sizeof(msg));
        rc = err_set(ERR_FAIL, "redact: %s", (const char *)msg);
        goto out;
    }
    if ((rc = strbuf_add(&sb, in + copied, len - copied)) != 0)
        goto out;
    *out_len = sb.len;
    *out = strbuf_detach(&sb, NULL);
out:
    strbuf_release(&sb);
    pcre2_match_data_free(md);
    return rc;
}

/* Apply one rule to in, into a malloc'd *out. */
static int apply(size_t r, const char *in, size_t len, char **out, size_t *out_len, int *count)
{
    pcre2_match_data *md;
    PCRE2_SIZE cap = len + len / 4 + 256;
    char *buf = NULL;
    int n;

    if (!rules[r].replacement)
        return apply_keyword(r, in, len, out, out_len, count);
    md = pcre2_match_data_create_from_pattern(codes[r], NULL);
    xcheck(md);
    for (;;) {
        PCRE2_SIZE olen = cap;
        buf = xrealloc(buf, cap + 1);
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
        return xstrdup(REDACTED);
    }
    return strbuf_detach(&sb, NULL);
}
