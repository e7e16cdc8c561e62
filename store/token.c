/* The api_tokens table (store/token.h). */
#include "store/token.h"

#include <stdio.h>
#include <string.h>

#include "store/internal.h"
#include "util/err.h"

int store_token_insert(store *st, const char *id, const char *name, const char *hash,
                       const char *scopes, int64_t created_at)
{
    store_stmt *s;
    int rc = store_prepare(st, &s,
                           "INSERT INTO api_tokens (id, name, hash, scopes, created_at)"
                           " VALUES (?, ?, ?, ?, ?)");

    if (rc)
        return rc;
    store_bind_text(s, 1, id);
    store_bind_text(s, 2, name);
    store_bind_text(s, 3, hash);
    store_bind_text(s, 4, scopes);
    store_bind_i64(s, 5, created_at);
    if (store_step(s) != STORE_DONE)
        rc = store_err(st, "api_tokens");
    store_done(s);
    return rc;
}

/* Copy column i of s into buf (cut to n). */
static void col_copy(char *buf, size_t n, store_stmt *s, int i)
{
    const char *v = store_col_raw(s, i);

    snprintf(buf, n, "%s", v ? v : "");
}

static void token_from_row(struct store_token *t, store_stmt *s)
{
    col_copy(t->id, sizeof(t->id), s, 0);
    col_copy(t->name, sizeof(t->name), s, 1);
    col_copy(t->scopes, sizeof(t->scopes), s, 2);
    t->created_at = store_col_i64(s, 3);
    t->revoked_at = store_col_i64(s, 4);
}

int store_token_get_by_hash(store *st, const char *hash, struct store_token *out)
{
    store_stmt *s;
    int rc = store_prepare(st, &s,
                           "SELECT id, name, scopes, created_at, coalesce(revoked_at, 0)"
                           " FROM api_tokens WHERE hash = ?");
    int step;

    if (rc)
        return rc;
    store_bind_text(s, 1, hash);
    step = store_step(s);
    if (step == STORE_ROW)
        token_from_row(out, s);
    else if (step == STORE_DONE)
        rc = err_set(ERR_NOTFOUND, "no such token");
    else
        rc = store_err(st, "api_tokens");
    store_done(s);
    return rc;
}

int store_token_each(store *st, int (*fn)(const struct store_token *t, void *ctx), void *ctx)
{
    store_stmt *s;
    int rc = store_prepare(st, &s,
                           "SELECT id, name, scopes, created_at, coalesce(revoked_at, 0)"
                           " FROM api_tokens ORDER BY created_at, id");
    int step;

    if (rc)
        return rc;
    while ((step = store_step(s)) == STORE_ROW) {
        struct store_token t;
        token_from_row(&t, s);
        if ((rc = fn(&t, ctx)) != 0)
            break;
    }
    if (rc == 0 && step != STORE_DONE)
        rc = store_err(st, "api_tokens");
    store_done(s);
    return rc;
}

int store_token_revoke(store *st, const char *id, int64_t now)
{
    store_stmt *s;
    int rc = store_prepare(st, &s, "SELECT revoked_at IS NOT NULL FROM api_tokens WHERE id = ?");
    int step, revoked = 0;

    if (rc)
        return rc;
    store_bind_text(s, 1, id);
    step = store_step(s);
    if (step == STORE_ROW)
        revoked = store_col_int(s, 0);
    store_done(s);
    if (step == STORE_DONE)
        return err_set(ERR_NOTFOUND, "no token %s", id);
    if (step != STORE_ROW)
        return store_err(st, "api_tokens");
    if (revoked)
        return err_set(ERR_TRANSITION, "token %s is already revoked", id);
    if ((rc = store_prepare(st, &s, "UPDATE api_tokens SET revoked_at = ? WHERE id = ?")) != 0)
        return rc;
    store_bind_i64(s, 1, now);
    store_bind_text(s, 2, id);
    if (store_step(s) != STORE_DONE)
        rc = store_err(st, "api_tokens");
    store_done(s);
    return rc;
}
