/* goald migrate : apply pending database migrations. */
#include <stdio.h>

#include "cli/cli.h"

static int run(struct cli_ctx *c)
{
    store *st;
    int v = 0;
    int rc;

    /* opening applies pending migrations; say where that left the schema */
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = store_schema_version(st, &v)) != 0)
        return cli_fail_err(rc);
    printf("%s: schema version %d (this goald knows up to %d)\n", store_path(st), v,
           store_schema_latest());
    return EXIT_OK;
}

const struct cli_command cmd_migrate = {
    .name = "migrate",
    .args = "",
    .summary = "apply pending database migrations (also done on every open)",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
};
