/* The api_tokens table (store/token.h). */
#include "store/token.h"

#include <string.h>

#include "store/internal.h"
#include "util/err.h"

/* A member of a row struct and the column that fills it (store_fields_fill()). */
#define TOKEN(member, kind, col) STORE_FIELD(struct store_token, member, kind, col)

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

/* Where each of TOKEN_COLS goes in a struct store_token. */
static const struct store_field token_fields[] = {
    TOKEN(id, COPY, 0),        TOKEN(name, COPY, 1),      TOKEN(scopes, COPY, 2),
    TOKEN(created_at, I64, 3), TOKEN(revoked_at, I64, 4),
};

int store_token_get_by_hash(store *st, const char *hash, struct store_token *out)
{
    int found;
    int rc = store_get_fields(st, "api_tokens", STORE_INTO(out, token_fields), &found,
                              "SELECT " TOKEN_COLS " FROM api_tokens WHERE hash = ?",
                              STORE_ARGS(STORE_TEXT(hash)));

    if (rc == 0 && !found)
        rc = err_set(ERR_NOTFOUND, "no such token");
    return rc;
}

int store_token_each(store *st, int (*fn)(const struct store_token *t, void *ctx), void *ctx)
{
    struct store_token row;
    struct store_iter it;
    int rc;
    store_iter_begin(&it, st, "api_tokens",
                     "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY created_at, id", NULL, 0);
    while ((rc = store_iter_next(&it, STORE_INTO(&row, token_fields))) > 0)
        if ((rc = fn(&row, ctx)) != 0)
            break;
    return store_iter_end(&it, rc);
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
