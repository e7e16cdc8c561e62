/* goald submit FILE|- : validate a goal and queue it. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lifecycle/intake.h"
#include "util/fsutil.h"
#include "util/strbuf.h"

static int read_stdin(strbuf *sb)
{
    char buf[65536];
    size_t n;

    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
        if (sb->len + n > INTAKE_MAX_BYTES)
            return err_set(ERR_INVALID, "<stdin>: larger than %d bytes", INTAKE_MAX_BYTES);
        if (strbuf_add(sb, buf, n) != 0)
            return ERR_TOOBIG;
    }
    if (ferror(stdin))
        return err_set(ERR_IO, "<stdin>: read error");
    return 0;
}

static int run(struct cli_ctx *c)
{
    const char *file = c->pos[0];
    const char *name = strcmp(file, "-") == 0 ? "<stdin>" : file;
    strbuf text = STRBUF_INIT, errs = STRBUF_INIT, warns = STRBUF_INIT;
    struct goal *g = NULL;
    store *st;
    char id[ID_SIZE];
    int rc;
    int code = EXIT_OK;

    strbuf_init(&text, INTAKE_MAX_BYTES + 1);
    strbuf_init(&errs, 1 << 20);
    strbuf_init(&warns, 1 << 16);
    if (strcmp(file, "-") == 0)
        rc = read_stdin(&text);
    else
        rc = fs_read_file(&text, file, INTAKE_MAX_BYTES);
    if (rc == ERR_TOOBIG)
        rc = err_set(ERR_INVALID, "%s: larger than %d bytes", name, INTAKE_MAX_BYTES);
    if (rc) {
        code = cli_fail(EXIT_USAGE, "%s", err_last());
        goto out;
    }
    if ((rc = intake_parse_all(&g, strbuf_cstr(&text), text.len, name, &errs, &warns)) != 0) {
        /* every error at once, one a line (or the one that stopped the
         * parse: not JSON, too large) */
        if (errs.len == 0)
            code = cli_fail(EXIT_USAGE, "%s", err_last());
        for (const char *p = strbuf_cstr(&errs), *nl; *p; p = nl + 1) {
            nl = strchr(p, '\n');
            code = cli_fail(EXIT_USAGE, "%.*s", (int)(nl - p), p);
        }
        goto out;
    }
    for (const char *p = strbuf_cstr(&warns), *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        cli_warn("%.*s", (int)(nl - p), p);
    }
    if ((code = cli_store(c, &st)) != 0)
        goto out;
    if ((rc = intake_submit(st, g, id)) != 0) {
        code = cli_fail(EXIT_FAIL, "%s", err_last());
        goto out;
    }
    printf("%s\n", id);
    daemon_wake(st);
out:
    store_goal_free(g);
    strbuf_release(&text);
    strbuf_release(&errs);
    strbuf_release(&warns);
    return code;
}

const struct cli_command cmd_submit = {
    .name = "submit",
    .args = "FILE|-",
    .summary = "validate a goal (JSON) and queue it; prints the new goal id",
    .details = "Bad input exits 2 with one message per error, each naming the file and\n"
               "the field; nothing is stored.  A deadline already past is accepted with\n"
               "a warning (the goal is escalated as overdue at once).\n"
               "See docs/goal-json.md for the fields.",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
