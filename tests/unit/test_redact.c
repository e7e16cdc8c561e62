/* Unit tests: the redactor (util/redact.c) against the secrets corpus
 * (tests/fixtures/secrets_corpus.txt): every planted secret is gone, every
 * negative line comes out unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/redact.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* The corpus's escapes: \n is a line break, \\ a backslash. */
static void unescape(char *s)
{
    char *w = s;

    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') {
            *w++ = '\n';
            r++;
        } else if (r[0] == '\\' && r[1] == '\\') {
            *w++ = '\\';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

static char *redacted(const char *text, int *count)
{
    strbuf sb = STRBUF_INIT;

    strbuf_init(&sb, 1 << 20);
    assert_int_equal(redact_text(&sb, text, strlen(text), count), 0);
    return strbuf_detach(&sb, NULL);
}

static void test_corpus(void **state)
{
    const char *src = getenv("GOALD_SOURCE_DIR");
    char path[1024], line[8192];
    int secrets = 0, negatives = 0;
    strbuf all = STRBUF_INIT;
    FILE *f;

    (void)state;
    assert_non_null(src);
    snprintf(path, sizeof(path), "%s/tests/fixtures/secrets_corpus.txt", src);
    f = fopen(path, "r");
    assert_non_null(f);
    strbuf_init(&all, 1 << 20);
    while (fgets(line, sizeof(line), f)) {
        char *tab = strchr(line, '\t');
        char *out;
        int n = 0;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || !line[0])
            continue;
        assert_non_null(tab);
        *tab = '\0';
        unescape(tab + 1);
        out = redacted(tab + 1, &n);
        if (!strcmp(line, "-")) {
            if (strcmp(out, tab + 1))
                fail_msg("negative line changed:\n  in:  %s\n  out: %s", tab + 1, out);
            assert_int_equal(n, 0);
            negatives++;
        } else {
            assert_non_null(strstr(tab + 1, line)); /* the corpus itself is right */
            if (strstr(out, line) || n == 0)
                fail_msg("secret not redacted:\n  in:  %s\n  out: %s", tab + 1, out);
            if (!strstr(out, REDACTED))
                fail_msg("no mark left:\n  in:  %s\n  out: %s", tab + 1, out);
            secrets++;
        }
        assert_int_equal(strbuf_addf(&all, "%s\n", tab + 1), 0);
        free(out);
    }
    fclose(f);
    assert_true(secrets >= 30);
    assert_true(negatives >= 5);
    /* all of it at once (one file holding every line): still gone */
    {
        char *out = redacted(strbuf_cstr(&all), NULL);
        f = fopen(path, "r");
        while (fgets(line, sizeof(line), f)) {
            char *tab = strchr(line, '\t');
            if (line[0] == '#' || !tab || line[0] == '-')
                continue;
            *tab = '\0';
            if (strstr(out, line))
                fail_msg("secret %s survives in the whole corpus", line);
        }
        fclose(f);
        free(out);
    }
    strbuf_release(&all);
}

/* Partial private keys: the body goes to its end, the text after stays. */
static void test_partial_key(void **state)
{
    char *out;

    (void)state;
    out = redacted("before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1\nAbCd+/==\n\n"
                   "after the key, some prose.",
                   NULL);
    assert_string_equal(out, "before\n" REDACTED "\nafter the key, some prose.");
    free(out);
    out = redacted("tail: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", NULL);
    assert_string_equal(out, "tail: " REDACTED);
    free(out);
    /* in a diff: every + line of the body */
    out = redacted("+-----BEGIN OPENSSH PRIVATE KEY-----\n+b3BlbnNzaC1rZXktdjEAAAAA\n+QyNTUxOQAAACD\n"
                   " context line",
                   NULL);
    assert_null(strstr(out, "b3BlbnNzaC1rZXktdjEAAAAA"));
    assert_null(strstr(out, "QyNTUxOQAAACD"));
    assert_non_null(strstr(out, " context line"));
    free(out);
}

/* A key body shown without its BEGIN line (a read with an offset, `tail`,
 * `sed -n`): the body lines before the END line are gone, whatever stands
 * before each line (cat -n, grep -n, a diff's +); the text around stays. */
#define L1 "MIIEowIBAAKCAQEAx1l8LgQz5nS0sK7kQeC1V3Qm6nRjYy3JmB2b9hJz0aYwY2tQ"
#define L2 "FTlQMtjBTeD855CgtpeeTRRnc0odxPoVn5HQGaeqMXiyLInb+Dr4jKZuuXu4tTGh"
#define L3 "BOZnHiylrIEldnYSUoE1RuFAbb79qQUFNxJq4Ca3hHkUC0VsxlJvkEoFqwIYmd5x"
#define L4 "ctGmW5vLkuFGtzvjTQh37u91luEZPuN/zv7iTAhrF4m1Nd+Rd8m1wlJrBY/Ald3t"
#define LAST "q2Yx0Q8vE5mZ1w=="
static void test_key_body(void **state)
{
    static const struct {
        const char *in, *keep;
    } cases[] = {
        /* tail / sed -n / read with an offset: body + END */
        {L3 "\n" L4 "\n" LAST "\n-----END RSA PRIVATE KEY-----\nafter\n", "\nafter\n"},
        {"before\n" L4 "\n-----END PRIVATE KEY-----", "before\n"},
        {L4 "\r\n" LAST "\r\n-----END EC PRIVATE KEY-----\r\n", "\r\n"},
        /* cat -n and grep -n prefixes, a diff's + lines */
        {"     3\t" L3 "\n     4\t" L4 "\n     5\t-----END RSA PRIVATE KEY-----\n", "\n"},
        {"key.pem:3:" L3 "\nkey.pem:4:" LAST "\nkey.pem:5:-----END PRIVATE KEY-----", ""},
        {"+" L3 "\n+" LAST "\n+-----END OPENSSH PRIVATE KEY-----\n context", "\n context"},
        /* in JSON or code: escaped newlines */
        {"{\"k\": \"" L3 "\\n" L4 "\\n-----END PRIVATE KEY-----\\n\"}", "{\"k\": \""},
        /* a body with neither line (head, sed -n 2,6p): full-width lines */
        {"x\n" L1 "\n" L2 "\n" L3 "\n" L4 "\n" LAST "\ny = 1\n", "x\n"},
        {L1 "\n" L2 "\n" L3 "\n" L4, ""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = 0;
        char *out = redacted(cases[i].in, &n);
        static const char *const parts[] = {L1, L2, L3, L4, LAST, "q2Yx0Q8v"};
        for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
            if (strstr(out, parts[k]))
                fail_msg("case %zu: key line %zu survives:\n  in:  %s\n  out: %s", i, k,
                         cases[i].in, out);
        if (!strstr(out, REDACTED) || n == 0 || !strstr(out, cases[i].keep))
            fail_msg("case %zu:\n  in:  %s\n  out: %s", i, cases[i].in, out);
        free(out);
    }
}

/* Base64 in ordinary code and data stays: in quoted strings, wrapped at 76
 * (base64(1)), a single long line, hashes, fewer than four full lines,
 * lines before an END line that is not a private key's, and a certificate
 * or public key under its BEGIN line. */
static void test_base64_kept(void **state)
{
    static const char *const cases[] = {
        "const logo = \"" L1 "\" +\n\t\"" L2 "\" +\n\t\"" L3 "\" +\n\t\"" L4 "\"\n",
        "img = 'data:image/png;base64," L1 L2 "'\n",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n"
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n"
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n"
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n"
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n",
        L1 L2 L3 "\n",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a.txt\n"
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  b.txt\n",
        L1 "\n" L2 "\n" L3 "\nprose after three lines\n",
        L3 "\n" L4 "\n-----END CERTIFICATE-----\n",
        "sha512-" L1 "\n",
        /* a certificate and a public key, whole */
        "-----BEGIN CERTIFICATE-----\n" L1 "\n" L2 "\n" L3 "\n" L4 "\n" LAST
        "\n-----END CERTIFICATE-----\n",
        "+-----BEGIN PUBLIC KEY-----\n+" L1 "\n+" L2 "\n+" L3 "\n+" L4
        "\n+-----END PUBLIC KEY-----\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = 0;
        char *out = redacted(cases[i], &n);
        if (strcmp(out, cases[i]) || n != 0)
            fail_msg("case %zu changed:\n  in:  %s\n  out: %s", i, cases[i], out);
        free(out);
    }
}

/* A megabyte of base64 lines with no END line redacts in linear time. */
static void test_base64_run(void **state)
{
    size_t lines = 16000, n = lines * 64;
    char *in = malloc(n + 64), *out;

    (void)state;
    assert_non_null(in);
    for (size_t i = 0; i < lines; i++) { /* 63 wide: not a PEM body */
        memcpy(in + i * 64, L3, 63);
        in[i * 64 + 63] = '\n';
    }
    in[n] = '\0';
    out = redacted(in, NULL);
    assert_string_equal(out, in);
    free(out);
    free(in);
}

/* The replacement keeps the shape: name, separator and quotes. */
/* Long runs of word characters, dots and dashes (minified code, lock files,
 * a test printing half a megabyte of "a-a-a-") must redact in linear time: the
 * key-name pattern was unbounded on both sides and took over two minutes
 * on 50 KiB of "a-" (this test then never ends, and ctest's timeout fails
 * it).  The runs hold no secret and come out unchanged; a secret after one
 * is still found. */
static void test_long_runs(void **state)
{
    static const char *const units[] = {"a-", "token-", "a.b.", "secret_"};
    size_t n = (size_t)512 << 10; /* redacted() caps its output at 1 MiB */
    char *in = malloc(n + 64), *out;

    (void)state;
    assert_non_null(in);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        size_t ul = strlen(units[u]);
        for (size_t i = 0; i < n; i++)
            in[i] = units[u][i % ul];
        in[n] = '\0';
        out = redacted(in, NULL);
        assert_int_equal(strlen(out), n);
        free(out);
    }
    memcpy(in + n, "\npassword: xCW0CVn4Cqlb", sizeof("\npassword: xCW0CVn4Cqlb"));
    out = redacted(in, NULL);
    assert_non_null(strstr(out, "password: " REDACTED));
    free(out);
    free(in);
}

static void test_shapes(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"password: xCW0CVn4Cqlb", "password: " REDACTED},
        {"DB_PASSWORD=\"q8Hn2LxZ0pWm\"", "DB_PASSWORD=\"" REDACTED "\""},
        {"secret = 'a9f3k2m8q1z7'", "secret = '" REDACTED "'"},
        {"url=https://u:pw12345@h.example/x", "url=https://u:" REDACTED "@h.example/x"},
        {"Authorization: Bearer abcdefgh12345678", "Authorization: Bearer " REDACTED},
        {"x AKIAABCDEFGHIJKLMNOP y", "x " REDACTED " y"},
        {"GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GITHUB_TOKEN=" REDACTED},
        /* keyword names gitleaks' generic rule knows: key, auth */
        {"signing_key = \"5f4dcc3b5aa765d61d8327deb882cf99\"", "signing_key = \"" REDACTED "\""},
        {"auth: f47ac10b-58cc-4372-a567-0e02b2c3d479", "auth: " REDACTED},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = redacted(cases[i].in, NULL);
        assert_string_equal(out, cases[i].out);
        free(out);
    }
}

/* Ordinary code assigning short or word-like values to a secret-sounding
 * name stays exactly as it is: a model copies these lines into an edit. */
static void test_ordinary_code(void **state)
{
    static const char *const cases[] = {
        "def bump(token = \"rc\"):\n    pass\n",
        "password_field = \"password\"",
        "api_key = \"abc\"",
        "secret_name = \"db-password\"",
        "TOKEN_TYPE = \"bearer\"",
        "password_min_length = 12",
        "headers = {\"Authorization\": \"Bearer \" + token}",
        "DB_PASSWORD=hunter2",
        "const PASSWORD_RESET_URL = '/account/password/reset';",
        "key: value",
        "monkey_patch = \"enabled\"",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = -1;
        char *out = redacted(cases[i], &n);
        if (strcmp(out, cases[i]) || n != 0)
            fail_msg("case %zu changed:\n  in:  %s\n  out: %s", i, cases[i], out);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_partial_key),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_ordinary_code),
        cmocka_unit_test(test_long_runs),
        cmocka_unit_test(test_key_body),
        cmocka_unit_test(test_base64_kept),
        cmocka_unit_test(test_base64_run),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
