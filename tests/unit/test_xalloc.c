/* Unit tests: one out-of-memory policy, cJSON's included: once
 * xalloc_cjson_hooks() has run, cJSON asking for more memory than there is
 * ends the process the way xmalloc() does (its message, then abort()),
 * and never hands a NULL back to the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/jsonobj.h"
#include "util/xalloc.h"

/* Under AddressSanitizer a failed allocation is the sanitizer's report
 * unless it may return NULL; and no allocation here may be above 32 MiB,
 * so that the child's big request fails (without the sanitizer: an
 * address-space limit, set in the child). */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:max_allocation_size_mb=32";
}
#else
#define UNDER_ASAN 0
#endif

#define BIG_BYTES ((size_t)64 << 20)

/* 64 MiB of 'a', NUL-terminated, outside malloc (munmap it). */
static char *big_text(void)
{
    char *s = mmap(NULL, BIG_BYTES + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(s != MAP_FAILED);
    memset(s, 'a', BIG_BYTES);
    s[BIG_BYTES] = '\0';
    return s;
}

/* In a child: at most 16 MiB more address space than it holds now. */
static void limit_memory(void)
{
    unsigned long pages = 0;
    struct rlimit rl;
    FILE *f;

    if (UNDER_ASAN)
        return;
    f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lu", &pages) != 1)
        _exit(90);
    fclose(f);
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)16 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        _exit(91);
}

/* What a child that asked cJSON for too much did. */
struct ending {
    int status;
    char err[512];
};

/* Run what in a child with the hooks installed (hooks: 1) or not (0),
 * its memory limited; its exit status and the start of its stderr. */
static void run_child(struct ending *e, int hooks, int what, const char *big)
{
    int fds[2];
    pid_t pid;
    ssize_t n, got = 0;

    memset(e, 0, sizeof(*e));
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cJSON *o;
        void *p;

        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        if (hooks)
            xalloc_cjson_hooks();
        else
            cJSON_InitHooks(NULL);
        limit_memory();
        o = cJSON_CreateObject();
        if (!o)
            _exit(92);
        if (what == 0)
            p = cJSON_malloc(SIZE_MAX / 2); /* more than any machine has */
        else
            p = cJSON_AddStringToObject(o, "content", big); /* a copy of 64 MiB */
        _exit(p ? 0 : 3);                                   /* 3: NULL handed back */
    }
    close(fds[1]);
    while ((n = read(fds[0], e->err + got, sizeof(e->err) - 1 - (size_t)got)) > 0)
        got += n;
    close(fds[0]);
    assert_int_equal(waitpid(pid, &e->status, 0), pid);
}

static void test_cjson_out_of_memory_aborts(void **state)
{
    char *big = big_text();
    struct ending e;

    (void)state;
    for (int what = 0; what < 2; what++) {
        run_child(&e, 1, what, big);
        assert_true(WIFSIGNALED(e.status));
        assert_int_equal(WTERMSIG(e.status), SIGABRT);
        assert_non_null(strstr(e.err, "goald: out of memory"));
    }
    munmap(big, BIG_BYTES + 1);
}

/* The control: cJSON's own allocator hands NULL back in the same child,
 * so what the test above sees is the hooks' doing. */
static void test_cjson_without_hooks_returns_null(void **state)
{
    char *big = big_text();
    struct ending e;

    (void)state;
    for (int what = 0; what < 2; what++) {
        run_child(&e, 0, what, big);
        assert_true(WIFEXITED(e.status));
        assert_int_equal(WEXITSTATUS(e.status), 3);
        assert_null(strstr(e.err, "out of memory"));
    }
    munmap(big, BIG_BYTES + 1);
    xalloc_cjson_hooks();
}

/* What NULL still means from a construction call: never memory, a NULL
 * argument; jsonobj_add_str_or_null() writes the JSON null instead. */
static void test_cjson_null_is_an_argument(void **state)
{
    cJSON *o = cJSON_CreateObject();
    char *text;

    (void)state;
    assert_null(cJSON_CreateString(NULL));
    assert_null(cJSON_AddStringToObject(o, "a", NULL));
    assert_null(cJSON_AddNumberToObject(NULL, "n", 1));
    assert_null(cJSON_GetObjectItem(o, "a"));
    jsonobj_add_str_or_null(o, "a", NULL);
    jsonobj_add_str_or_null(o, "b", "x");
    text = cJSON_PrintUnformatted(o);
    assert_string_equal(text, "{\"a\":null,\"b\":\"x\"}");
    cJSON_free(text);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cjson_out_of_memory_aborts),
        cmocka_unit_test(test_cjson_without_hooks_returns_null),
        cmocka_unit_test(test_cjson_null_is_an_argument),
    };

    xalloc_cjson_hooks();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
