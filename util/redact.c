#define PCRE2_CODE_UNIT_WIDTH 8
#include "util/redact.h"

#include <pcre2.h>
#include <pthread.h>
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
 * secret, token, api_key, apikey, access_key, private_key or credential):
 * - a quoted value after =, :, :=, => is always redacted
 *   (`password = "x"` in code too: over-redacting a literal is fine);
 * - an unquoted value after = (.env, INI, shell) is redacted when it is a
 *   whole word: followed by the end of the line, a space, ; , # or &;
 *   after : (YAML) when it is the last word of its line (a comment may
 *   follow), so that prose ("the token: it was wrong") stays;
 * - left alone, because they are code or references, not secrets: a call
 *   or index (`password = get_password()`, `token=os.environ["T"]`), a
 *   dotted name (`token = self.token`), $VAR / ${VAR} / ${{ secrets.X }},
 *   numbers (`max_tokens: 8192`), true/false/null/none, <placeholders>,
 *   `==` comparisons, and a path ending in such a name (`/etc/passwd: x`).  A bare word in code (`password = pw`) cannot be
 *   told from an INI value and is redacted. */
/* Bounded on both sides: unbounded runs made the match quadratic in a long
 * run of word characters, dots and dashes (50 KiB of "a-a-a-..." took 9 s;
 * a gate printing 1 MB of it, an hour).  No key name is longer. */
#define KEYNAME                                                                                    \
    "[\\w.-]{0,64}?(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|"   \
    "private[_-]?key|credential)[\\w.-]{0,64}"
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
    const char *replacement;
} rules[] = {
    /* private key blocks, whole */
    {PEM_BEGIN "[\\s\\S]*?" PEM_END, REDACTED},
    /* a partial one (no END): the BEGIN line and the key body after it -
     * base64 lines, header lines (Proc-Type: ...), blank lines; also
     * with escaped newlines (\n in JSON or code) */
    {PEM_BEGIN "[A-Za-z0-9+/= \\t]*(?:" NL "(?:[A-Za-z0-9+/=]++|[+ ]?[A-Za-z-]+: [^\\r\\n\\\\]*|[ \\t]*)"
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
    {"(?i)((?<![/\\\\])\\b" KEYNAME "[\"']?[ \\t]*(?:=>|:=|\\?=|=(?!=)|:(?!:))[ \\t]*)([\"'`])" NOT_REF
     "[^\"'`\\r\\n]+\\2",
     "${1}${2}" REDACTED "${2}"},
    /* KEY=value (.env, INI, shell; also `export KEY=value`) */
    {"(?i)((?<![/\\\\])\\b" KEYNAME "[\"']?[ \\t]*(?:=>|:=|\\?=|=(?!=))[ \\t]*)" NOT_REF UNQUOTED,
     "${1}" REDACTED},
    /* key: value, the value a word ending its line (YAML; also behind a
     * grep or diff prefix) */
    {"(?im)((?<![/\\\\])\\b" KEYNAME "[\"']?[ \\t]*:[ \\t]+)" NOT_REF
     "[^\\s\"'`;,()\\[\\]{}<>#\\\\]++(?=[ \\t]*(?:#[^\\n]*)?(?:\\r?$|\\\\[rn]))",
     "${1}" REDACTED},
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
