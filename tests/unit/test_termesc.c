/* Unit tests: util/termesc.c (control characters made visible) and
 * util/secret.c (credentials taken out of the environment). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/secret.h"
#include "util/termesc.h"
#include "util/xalloc.h"

extern char **environ;

static void test_escape(void **state)
{
    strbuf sb = STRBUF_INIT;

    (void)state;
    assert_string_equal(term_view("\x1b]0;pwned\x07\x1b[2J"), "\\e]0;pwned\\a\\e[2J");
    assert_string_equal(term_view("a\rb\bc\x7f d\x01"), "a\\rb\\bc\\x7f d\\x01");
    assert_string_equal(term_view("tab\tkept, line\nescaped"), "tab\tkept, line\\nescaped");
    assert_string_equal(term_view_flags("line\nkept", TERM_KEEP_NL), "line\nkept");
    /* UTF-8 text stays; C1 (U+009B, CSI) and stray bytes are shown */
    assert_string_equal(term_view("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
    assert_string_equal(term_view("\xc2\x9b" "1m"), "\\u009b1m");
    assert_string_equal(term_view("\x9b" "1m \xff"), "\\x9b1m \\xff");
    assert_string_equal(term_view(NULL), "");
    /* the ring: earlier views stay valid for TERM_VIEWS calls */
    {
        const char *a = term_view("first");
        for (int i = 0; i < TERM_VIEWS - 1; i++)
            term_view("x");
        assert_string_equal(a, "first");
    }
    strbuf_init(&sb, 4);
    assert_int_equal(term_escape(&sb, "\x1b\x1b\x1b", 0), ERR_TOOBIG);
    strbuf_release(&sb);
}

/* The value is gone from the environment block itself (what
 * /proc/PID/environ shows), and secret_get() still has it. */
static void test_secret_take(void **state)
{
    char *entry = NULL;

    (void)state;
    setenv("GOALD_TEST_SECRET_VAR", "value-to-hide-123", 1);
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "GOALD_TEST_SECRET_VAR=", 22))
            entry = *e;
    assert_non_null(entry);
    assert_int_equal(secret_take("GOALD_TEST_SECRET_VAR"), 0);
    assert_null(getenv("GOALD_TEST_SECRET_VAR"));
    assert_string_equal(secret_get("GOALD_TEST_SECRET_VAR"), "value-to-hide-123");
    assert_true(secret_is_taken("GOALD_TEST_SECRET_VAR"));
    /* the bytes were wiped where they were */
    assert_null(memmem(entry, 22 + 17, "value-to-hide", 13));
    assert_int_equal(secret_take("BAD=NAME"), ERR_INVALID);
    /* not taken: the environment answers */
    setenv("GOALD_TEST_PLAIN", "plain", 1);
    assert_string_equal(secret_get("GOALD_TEST_PLAIN"), "plain");
    unsetenv("GOALD_TEST_PLAIN");
}

/* A parent's handover through a pipe: the child environment names the
 * descriptor, not the value; receiving reads and closes it. */
static void test_secret_pipe(void **state)
{
    char **envp = NULL;
    int fd = -1, named = 0;
    char var[64];

    (void)state;
    assert_int_equal(secret_child_env(&envp, &fd), 0);
    assert_non_null(envp);
    assert_true(fd > 2);
    for (char **e = envp; *e; e++) {
        assert_null(strstr(*e, "value-to-hide"));
        if (!strncmp(*e, SECRET_FD_VAR "=", sizeof(SECRET_FD_VAR)))
            named++;
    }
    assert_int_equal(named, 1);
    secret_child_env_free(envp);
    /* as the child: forget, then receive */
    secret_clear();
    assert_null(secret_get("GOALD_TEST_SECRET_VAR"));
    snprintf(var, sizeof(var), "%d", fd);
    setenv(SECRET_FD_VAR, var, 1);
    assert_int_equal(secret_receive(), 0);
    assert_null(getenv(SECRET_FD_VAR));
    assert_string_equal(secret_get("GOALD_TEST_SECRET_VAR"), "value-to-hide-123");
    assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed */
    /* not a pipe: refused */
    setenv(SECRET_FD_VAR, "0", 1);
    assert_int_equal(secret_receive(), ERR_INVALID);
    secret_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_secret_take),
        cmocka_unit_test(test_secret_pipe),
    };
    xalloc_cjson_hooks(); /* cJSON allocating as in the goald binary */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
