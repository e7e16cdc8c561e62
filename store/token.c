/* The api_tokens table (store/token.h). */
#include "store/token.h"

#include <string.h>

#include "store/internal.h"
#include "util/err.h"

#define TOKEN_COLS "id, name, scopes, created_at, coalesce(revoked_at, 0)"

int store_token_insert(store *st, const char *id, const char *name, const char *hash,
                       const char *scopes, int64_t created_at)
{
    return store_exec_args(st, "api_tokens", NULL,
                           "INSERT INTO api_tokens (id, name, hash, scopes, created_at)"
                           " VALUES (?, ?, ?, ?, ?)",
                           STORE_ARGS(STORE_TEXT(id), STORE_TEXT(name), STORE_TEXT(hash),
                                      STORE_TEXT(scopes), STORE_I64(created_at)));
}

static void token_from_row(struct store_token *t, store_stmt *s)
{
    store_col_copy(t->id, sizeof(t->id), s, 0);
    store_col_copy(t->name, sizeof(t->name), s, 1);
    store_col_copy(t->scopes, sizeof(t->scopes), s, 2);
    t->created_at = store_col_i64(s, 3);
    t->revoked_at = store_col_i64(s, 4);
}

/* store_row_fn: token_from_row() into (struct store_token *)ctx. */
static void token_fill(store_stmt *s, void *ctx)
{
    token_from_row(ctx, s);
}

int store_token_get_by_hash(store *st, const char *hash, struct store_token *out)
{
    int found;
    int rc = store_get_row(st, "api_tokens", token_fill, out, &found,
                           "SELECT " TOKEN_COLS " FROM api_tokens WHERE hash = ?",
                           STORE_ARGS(STORE_TEXT(hash)));

    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "no such token");
    return rc;
}

STORE_EACH_TYPED(token_each, struct store_token)

int store_token_each(store *st, int (*fn)(const struct store_token *t, void *ctx), void *ctx)
{
    struct token_each h = {token_from_row, fn, ctx};

    return store_each_row(st, "api_tokens", token_each_row, &h,
                          "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY created_at, id", NULL, 0);
}

int store_token_revoke(store *st, const char *id, int64_t now)
{
    int64_t revoked = 0;
    int found;
    int rc = store_get_int64(st, "api_tokens", &revoked, &found,
                             "SELECT revoked_at IS NOT NULL FROM api_tokens WHERE id = ?",
                             STORE_ARGS(STORE_TEXT(id)));

    if (rc)
        return rc;
    if (!found)
        return err_set(ERR_NOTFOUND, "no token %s", id);
    if (revoked)
        return err_set(ERR_TRANSITION, "token %s is already revoked", id);
    return store_exec_args(st, "api_tokens", NULL,
                           "UPDATE api_tokens SET revoked_at = ? WHERE id = ?",
                           STORE_ARGS(STORE_I64(now), STORE_TEXT(id)));
}
