/* goald token create|list|revoke : bearer tokens of the HTTP API. */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "cli/cli.h"
#include "http/http.h"
#include "store/token.h"
#include "util/jsonobj.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static int create(struct cli_ctx *c)
{
    const char *scope = cli_opt(c, "scope");
    char secret[HTTP_TOKEN_SIZE], id[ID_SIZE];
    store *st;
    int rc;

    if (!scope)
        return cli_fail(EXIT_USAGE, "token create: --scope is required (a comma list of read, "
                                    "submit, resolve, admin)");
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = http_token_create(st, scope, cli_opt(c, "name"), secret, id)) != 0)
        return cli_fail(rc == ERR_INVALID ? EXIT_USAGE : EXIT_FAIL, "token create: %s", err_last());
    printf("%s\n", secret);
    fprintf(stderr, "goald: token %.8s created; it is shown this once: keep it\n", id);
    return EXIT_OK;
}

const struct cli_command cmd_token_create = {
    .name = "token create",
    .args = "",
    .summary = "create a token of the HTTP API; prints it once",
    .details = "Scopes: read (every GET), submit (submit and cancel goals), resolve (answer\n"
               "escalations), admin (all of them).  Only its SHA-256 is stored.",
    .opts = (const struct cli_opt[]){{"scope", "S", "a comma list: read,submit,resolve,admin"},
                                     {"name", "N", "a name to know it by (shown in events)"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = create,
};

static int list_each(const struct store_token *t, void *ctx)
{
    struct cli_list *lc = ctx;
    char created[TIME_RFC3339_MAX], revoked[TIME_RFC3339_MAX];

    time_format_rfc3339(created, sizeof(created), t->created_at);
    if (t->revoked_at)
        time_format_rfc3339(revoked, sizeof(revoked), t->revoked_at);
    if (lc->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", t->id);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "scopes", t->scopes);
        cJSON_AddStringToObject(o, "created_at", created);
        jsonobj_add_str_or_null(o, "revoked_at", t->revoked_at ? revoked : NULL);
        cJSON_AddItemToArray(lc->arr, o);
        return 0;
    }
    printf("%-8.8s  %-19s  %-24s  %-8s  %s\n", t->id, term_fit(t->scopes, 19), created,
           t->revoked_at ? "revoked" : "live", term_fit(t->name, 80 - 69));
    return 0;
}

static int list_rows(struct cli_ctx *c, store *st, void *lc)
{
    (void)c;
    if (!((struct cli_list *)lc)->json)
        printf("%-8s  %-19s  %-24s  %-8s  %s\n", "ID", "SCOPES", "CREATED", "STATE", "NAME");
    return store_token_each(st, list_each, lc);
}

static int list(struct cli_ctx *c)
{
    struct cli_list lc;

    return cli_list_run(&lc, c, list_rows, &lc);
}

const struct cli_command cmd_token_list = {
    .name = "token list",
    .args = "",
    .summary = "list the tokens of the HTTP API (never their secret)",
    .opts = (const struct cli_opt[]){{"json", NULL, "print a JSON array"}, {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = list,
    .readonly = 1,
    .json_shape = "an array of {\"id\", \"name\", \"scopes\", \"created_at\", \"revoked_at\" "
                  "(null when live)}",
};

static int revoke(struct cli_ctx *c)
{
    char id[ID_SIZE];
    store *st;
    int rc;

    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = http_token_revoke(st, c->pos[0], id)) != 0)
        return cli_fail_err(rc);
    printf("revoked token %s\n", id);
    return EXIT_OK;
}

const struct cli_command cmd_token_revoke = {
    .name = "token revoke",
    .args = "ID",
    .summary = "revoke a token of the HTTP API: its next request gets 401",
    .opts = (const struct cli_opt[]){{NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = revoke,
};
