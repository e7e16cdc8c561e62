/* Running the trusted search programs (rg, fd) for grep and find. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/sandbox.h"
#include "tools/internal.h"
#include "tools/search.h"
#include "util/config.h"
#include "util/err.h"

int tool_search_run(struct tool_ctx *ctx, const char *const *names, const char *const *argv_tail,
                    int cwd_fd, int stdin_fd, sandbox_data_fn on_stdout, void *arg,
                    struct sandbox_result *sres)
{
    const char *argv[64];
    size_t n = 1;
    int rc = ERR_NOTFOUND;

    for (size_t i = 0; argv_tail[i]; i++) {
        if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
            return err_set(ERR_INVALID, "search: too many arguments");
        argv[n++] = argv_tail[i];
    }
    argv[n] = NULL;
    for (size_t i = 0; names[i] && rc == ERR_NOTFOUND; i++) {
        struct sandbox_spec spec = {0};
        argv[0] = names[i];
        spec.root = ctx->root;
        spec.argv = argv;
        spec.direct = 1;
        spec.cwd_fd = cwd_fd;
        spec.stdin_fd = stdin_fd;
        spec.on_stdout = on_stdout;
        spec.on_stdout_arg = arg;
        spec.timeout_ms = (int)config_int(CFG_TOOLS_BASH_TIMEOUT_S) * 1000;
        spec.tail_cap = 64 << 10;
        rc = sandbox_run(&spec, sres);
    }
    if (rc == ERR_NOTFOUND)
        return err_set(ERR_NOTFOUND, "%s is not installed (apt-get install %s)", names[0],
                       !strcmp(names[0], "rg") ? "ripgrep" : "fd-find");
    return rc;
}

/* The first line of `NAME --version` for the first of names found. */
static int version_of(const char *const *names, char *out, size_t n)
{
    static const char *const tail[] = {"--version", NULL};
    struct tool_ctx ctx;
    struct sandbox_result r;
    int rc;

    memset(&ctx, 0, sizeof(ctx));
    ctx.root = "/";
    if ((rc = tool_search_run(&ctx, names, tail, -1, -1, NULL, NULL, &r)) != 0)
        return rc;
    /* truncation: ok, a line shown */
    snprintf(out, n, "%.*s", (int)strcspn(r.out.data, "\n"), r.out.data);
    rc = r.exit_code == 0 ? 0 : err_set(ERR_FAIL, "%s --version exited %d", names[0], r.exit_code);
    sandbox_result_release(&r);
    return rc;
}

int tool_check_programs(char *detail, size_t n)
{
    static const char *const rg[] = {"rg", NULL};
    static const char *const fd[] = {"fdfind", "fd", NULL};
    char a[128] = "", b[128] = "";
    int rc;

    if (detail && n)
        detail[0] = '\0';
    if ((rc = version_of(rg, a, sizeof(a))) != 0 || (rc = version_of(fd, b, sizeof(b))) != 0)
        return rc;
    if (detail)
        snprintf(detail, n, "%s; %s", a, b); /* truncation: ok, a message */
    return 0;
}
