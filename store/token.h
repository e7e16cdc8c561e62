/*
 * token.h - the api_tokens table: bearer tokens of the HTTP API.
 *
 * Only a token's SHA-256 (hex) is stored; the secret never reaches the
 * database.  Callback structs are valid only during the call; a struct
 * store_token filled by store_token_get_by_hash() owns nothing (fixed
 * buffers), so there is nothing to free.
 */
#ifndef GOALD_STORE_TOKEN_H
#define GOALD_STORE_TOKEN_H

#include <stdint.h>

#include "store/store.h"
#include "util/id.h"

struct store_token {
    char id[ID_SIZE];
    char name[128];
    char scopes[128];   /* comma list: read,submit,resolve,admin */
    int64_t created_at; /* ms */
    int64_t revoked_at; /* ms, 0 when live */
};

/* Insert a live token (hash: 64 hex characters). */
int store_token_insert(store *st, const char *id, const char *name, const char *hash,
                       const char *scopes, int64_t created_at);

/* The token whose hash is hash, revoked or not: ERR_NOTFOUND when none. */
int store_token_get_by_hash(store *st, const char *hash, struct store_token *out);

/* Call fn for each token, oldest first (fields as struct store_token).
 * fn returns non-zero to stop (that value is returned). */
int store_token_each(store *st, int (*fn)(const struct store_token *t, void *ctx), void *ctx);

/* Revoke token id at now: ERR_NOTFOUND when there is no such token,
 * ERR_TRANSITION when it is already revoked. */
int store_token_revoke(store *st, const char *id, int64_t now);

#endif
