/*
 * main.c - goald's entry point: global options, configuration, dispatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lifecycle/forge_goals.h"
#include "util/config.h"
#include "util/log.h"
#include "util/secret.h"
#include "util/xalloc.h"

#if defined(__SANITIZE_ADDRESS__)
/* Debian 12's libgit2 1.5.1 leaks a PCRE2 match block on every regex
 * search that does not match (config look-ups during remote look-up and
 * push; fixed upstream by libgit2/libgit2#6382, in 1.6).  The sanitized
 * goald binary ignores blocks allocated inside libpcre2; goald's own use
 * of PCRE2 (util/redact.c) stays leak-checked by the unit tests, which do
 * not carry this suppression. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpcre2-8.so\n";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
#endif

int main(int argc, char **argv)
{
    struct cli_ctx c;
    int i = 1;
    int rc;

    xalloc_cjson_hooks(); /* before any JSON: cJSON's memory is xalloc's */
    memset(&c, 0, sizeof(c));
    c.argv0 = argv[0];
    /* credentials out of the environment first (util/secret.h): from the
     * daemon's pipe, then our own variables */
    if (secret_receive() != 0)
        fprintf(stderr, "goald: %s\n", err_last());
    secret_take_all();
    c.db_path = getenv("GOALD_DB");
    c.config_path = getenv("GOALD_CONFIG");
    if (c.db_path && !*c.db_path)
        c.db_path = NULL;
    if (c.config_path && !*c.config_path)
        c.config_path = NULL;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--db") || !strcmp(a, "--config")) {
            if (i + 1 >= argc)
                return cli_fail(EXIT_USAGE, "%s needs a path", a);
            if (a[2] == 'd')
                c.db_path = argv[++i];
            else
                c.config_path = argv[++i];
        } else if (!strncmp(a, "--db=", 5)) {
            c.db_path = a + 5;
        } else if (!strncmp(a, "--config=", 9)) {
            c.config_path = a + 9;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help")) {
            cli_print_usage(stdout);
            return EXIT_OK;
        } else if (!strcmp(a, "--version")) {
            printf("goald %s\n", GOALD_VERSION);
            return EXIT_OK;
        } else if (a[0] == '-') {
            return cli_fail(EXIT_USAGE, "unknown option %s (see goald --help)", a);
        } else {
            break;
        }
    }
    if (i >= argc) {
        cli_print_usage(stderr);
        return EXIT_USAGE;
    }
    /* a broken trigger is refused when the configuration loads, not when
     * the daemon first polls */
    config_set_json_check(CFG_FORGE_TRIGGERS, forge_triggers_check);
    if (config_load(c.config_path) != 0)
        return cli_fail(EXIT_USAGE, "%s", err_last());
    secret_take_all(); /* and the variables the configuration names */
    log_init(LOG_WARN);
    /* log.level (or GOALD_LOG_LEVEL) was checked by config_load() */
    log_set_level(log_level_named(config_str(CFG_LOG_LEVEL), log_get_level()));
    rc = cli_dispatch(&c, argc - i, argv + i);
    store_close(c.st);
    config_reset();
    secret_clear();
    fflush(stdout);
    if (ferror(stdout))
        return cli_fail(EXIT_FAIL, "error writing output");
    return rc;
}
