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
    strbuf text = STRBUF_INIT;
    struct goal *g = NULL;
    store *st;
    char id[ID_SIZE];
    int rc;
    int code = EXIT_OK;

    strbuf_init(&text, INTAKE_MAX_BYTES + 1);
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
    if ((rc = intake_parse(&g, strbuf_cstr(&text), text.len, name)) != 0) {
        code = cli_fail(EXIT_USAGE, "%s", err_last());
        goto out;
    }
    if ((code = cli_store(c, &st)) != 0)
        goto out;
    if ((rc = intake_submit(st, g, id)) != 0) {
        code = cli_fail(EXIT_FAIL, "%s", err_last());
        goto out;
    }
    printf("%s\n", id);
    daemon_wake(store_path(st));
out:
    store_goal_free(g);
    strbuf_release(&text);
    return code;
}

const struct cli_command cmd_submit = {
    .name = "submit",
    .args = "FILE|-",
    .summary = "validate a goal (JSON) and queue it; prints the new goal id",
    .details = "Bad input exits 2 with a message naming the file and the field; nothing is "
               "stored.\nSee docs/goal-json.md for the fields.",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
