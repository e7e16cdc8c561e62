/*
 * internal.h - what only store/ may use: the SQLite connection, its
 * statement cache and the bind/column helpers.  Nothing outside store/
 * includes this header (issue 18): callers use the typed functions of
 * store/<entity>.h, which say who frees what.
 */
#ifndef GOALD_STORE_INTERNAL_H
#define GOALD_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store/store.h"

sqlite3 *store_db(store *st);

/* Prepare sql (cached on the connection for its lifetime: callers must
 * sqlite3_reset() via store_done() and never finalize). */
int store_prepare(store *st, sqlite3_stmt **out, const char *sql);
void store_done(sqlite3_stmt *stmt); /* reset + clear bindings; accepts NULL */

/* Execute one or more statements without results. */
int store_exec(store *st, const char *sql);

/* The ids (first column) sql selects with arg bound as ?1, in order:
 * *out is a malloc'd array of *n ids (free() it; NULL when none). */
int store_ids(store *st, const char *sql, const char *arg, char (**out)[37], size_t *n);

/* Bind helpers: NULL text binds SQL NULL. */
int store_bind_text(sqlite3_stmt *s, int i, const char *v);
/* Column text as a malloc'd copy (caller frees) or NULL. */
char *store_col_strdup(sqlite3_stmt *s, int i);

#endif
