/*
 * backend.h - what a database backend gives store/ (store-only, like
 * internal.h): open and close a connection, run statements, bind values,
 * step rows and read columns, and turn its last error into goald's error
 * slot.  Two backends: SQLite (store/sqlite.c, one file, one machine) and
 * PostgreSQL (store/pg.c, libpq, several machines on one queue).
 *
 * Everything above this line of store/ (store.c, query.c, the entity
 * files) is written once against it; a query whose SQL differs between
 * the two dialects names both with store_sql() (internal.h).
 *
 * Ownership: a backend's open() fills st->conn and st->path (malloc'd,
 * freed by store_close()); prepare() returns a statement the statement
 * cache owns until finalize(); col_text() points into the statement,
 * valid until its next step or reset.
 */
#ifndef GOALD_STORE_BACKEND_H
#define GOALD_STORE_BACKEND_H

#include <stdint.h>

#include "store/internal.h"

#define STORE_STMT_CACHE 64

struct stmt_slot {
    const char *sql; /* the caller's literal: compared by address, then text */
    store_stmt *stmt;
};

struct store {
    const struct store_backend *be;
    void *conn; /* sqlite3 * or PGconn * */
    char *path; /* the file, or the URL without its password */
    int tx_depth;
    struct stmt_slot cache[STORE_STMT_CACHE];
    int ncache;
    int created; /* the open made the SQLite file (store_created()) */
};

/* Every backend's statement starts with this. */
struct store_stmt {
    store *st;
};

struct store_backend {
    enum store_dialect dialect;
    const char *name; /* "sqlite", "postgres" */
    /* Connect to target (a path or a URL); create: the SQLite file and
     * its folder may be made.  Sets st->conn and st->path. */
    int (*open)(store *st, const char *target, int create);
    void (*close)(store *st);
    /* Run sql (one or more statements, no rows wanted). */
    int (*exec)(store *st, const char *sql);
    int (*prepare)(store *st, const char *sql, store_stmt **out);
    void (*finalize)(store_stmt *s);
    void (*bind)(store_stmt *s, int i, const struct store_arg *a); /* i from 1 */
    int (*step)(store_stmt *s);    /* STORE_ROW, STORE_DONE or STORE_FAIL */
    void (*reset)(store_stmt *s);  /* back to its start, bindings cleared */
    int (*changes)(store_stmt *s); /* rows the last step changed */
    int (*col_null)(store_stmt *s, int i);
    int64_t (*col_i64)(store_stmt *s, int i);
    double (*col_double)(store_stmt *s, int i);
    const char *(*col_text)(store_stmt *s, int i); /* NULL for SQL NULL */
    /* the result's columns: how many, each one's name and the storage
     * class of its value in the current row (STORE_ARG_*) */
    int (*col_count)(store_stmt *s);
    const char *(*col_name)(store_stmt *s, int i);
    enum store_arg_type (*col_type)(store_stmt *s, int i);
    /* err_set() the connection's last error as "WHAT: message"; returns
     * ERR_BUSY (lock, serialisation), ERR_IO (disk full) or ERR_DB. */
    int (*error)(store *st, const char *what);
    /* the SQL of: the outermost write transaction, a read transaction,
     * making this connection read-only */
    const char *begin_write, *begin_read, *query_only;
    /* Hold (lock 1) or let go (0) of the lock that makes migrations of
     * two processes starting together run once. */
    int (*migrate_lock)(store *st, int lock);
    /* Wakes between nodes (PostgreSQL's LISTEN/NOTIFY on one channel);
     * NULL in a backend without them (SQLite: one node, woken by its
     * socket).  listen: this connection receives wakes from now on (and
     * again after a reset); notify: wake every listener (at the commit of
     * the current transaction, at once outside one); fd: the descriptor to
     * poll, -1 when the connection is down; drain: consume what arrived,
     * the number of wakes or -1 (the connection broke). */
    int (*wake_listen)(store *st);
    int (*wake_notify)(store *st);
    int (*wake_fd)(store *st);
    int (*wake_drain)(store *st);
    /* 0 when the connection is up, or could be made again now; else -1
     * (the error is the backend's, for error()).  NULL: always up (a
     * file). */
    int (*reconnect)(store *st);
    const struct store_migration *migrations;
    const size_t *migrations_count;
};

extern const struct store_backend store_backend_sqlite;
extern const struct store_backend store_backend_pg;

#endif
