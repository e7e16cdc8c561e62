/*
 * store.h - the SQLite database: open, pragmas, migrations, transactions.
 *
 * One `store` wraps one sqlite3 connection; it is not shared between
 * threads.  store_open() creates the file (mode 0600) and its folder,
 * sets WAL, foreign_keys, busy_timeout and synchronous=NORMAL, and applies
 * any pending migration.  store_close() accepts NULL.
 *
 * Transactions nest: the outermost store_tx_begin() is BEGIN IMMEDIATE (so
 * a writer waits for the lock once, up front, instead of failing on
 * upgrade), inner ones are savepoints.  Every begin is paired with exactly
 * one commit or rollback.
 */
#ifndef GOALD_STORE_STORE_H
#define GOALD_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h" /* GOALD_MUST_CHECK */

typedef struct store store;

struct store_migration {
    int version;
    const char *name; /* "0001_init" */
    const char *sql;
};

/* Generated at build time from migrations/ (see cmake/embed_migrations.cmake). */
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;
/* The same for PostgreSQL, from migrations/pg/ (0012_baseline, then 0013...). */
extern const struct store_migration store_migrations_pg[];
extern const size_t store_migrations_pg_count;

/* 1 when target is a PostgreSQL URL (postgres:// or postgresql://), which
 * store_open() connects to instead of opening a file. */
int store_is_url(const char *target);

/* Open (creating) the database at path.  On success *out is set; free with
 * store_close().  Errors: ERR_IO (folder, file), ERR_DB, ERR_VERSION (the
 * database is newer than this binary: nothing is changed). */
int store_open(store **out, const char *path);
/* The same for a database that must already exist (read-only commands):
 * creates no file and no folder; ERR_NOTFOUND "no database at PATH" when
 * there is none.  Pending migrations are still applied. */
int store_open_existing(store **out, const char *path);
void store_close(store *st);

const char *store_path(const store *st);

/* 1 when store_open() made the database file (there was none at its
 * path): the caller may say so, as a path with a typo otherwise makes a
 * second, silent database.  0 for one that was there, and for a URL. */
int store_created(const store *st);

/* The default database: config store.url when set, else the file
 * $XDG_STATE_HOME/goald/goald.db, else ~/.local/state/goald/goald.db.
 * 0 or ERR_INVALID (no HOME). */
int store_default_path(char *out, size_t n);

/* The folder of this node's own files for the database target (the
 * daemon's lock and wake socket, spill files): the SQLite file's folder;
 * for a PostgreSQL URL, config node.state_dir, else $XDG_STATE_HOME/goald,
 * else ~/.local/state/goald.  0 or ERR_INVALID. */
int store_local_dir(char *out, size_t n, const char *target);

/* This node's id among the daemons sharing the queue, into out: config
 * node.id, else "HOST:STATE_DIR" (the host name and the real path of
 * store_local_dir(target)).  At most STORE_NODE_ID_MAX bytes with its NUL.
 * 0 or ERR_INVALID. */
#define STORE_NODE_ID_MAX 512
int store_node_id(char *out, size_t n, const char *target);

/* Wakes between the nodes sharing a queue (PostgreSQL's LISTEN/NOTIFY;
 * with SQLite, one node, these do nothing and the daemon's socket wakes
 * it).  store_wake_nodes(): wake every node's daemon (inside a
 * transaction, at its commit).  store_wake_listen(): this connection
 * receives them (the daemon's), also after a reconnection.
 * store_wake_fd(): the descriptor to poll for them, -1 when there is none
 * now.  store_wake_drain(): consume those that arrived: how many, or -1
 * when the connection broke (the next statement reconnects). */
int store_wake_nodes(store *st);
int store_wake_listen(store *st);
int store_wake_fd(store *st);
int store_wake_drain(store *st);

/* 0 when the database can be reached: a server connection that is up, or
 * was made again now (outside a transaction); else ERR_DB with the
 * server's error.  Always 0 with SQLite. */
int store_reachable(store *st);

/* Schema version: the highest applied migration; and the newest this
 * binary knows. */
int store_schema_version(store *st, int *out);
int store_schema_latest(void);

/* Apply pending migrations, each in its own transaction.  *applied (may be
 * NULL) receives how many were applied. */
int store_migrate(store *st, int *applied);

int store_tx_begin(store *st);
/* 1 while a transaction of st is open (store_tx_begin without its end). */
int store_in_tx(const store *st);
int store_tx_commit(store *st) GOALD_MUST_CHECK;
void store_tx_rollback(store *st);
/* End the transaction store_tx_begin() opened by how the work went: rc 0
 * commits (and returns the commit's result), any other rc rolls back and
 * is returned unchanged.  For `out: rc = store_tx_end(st, rc);`. */
int store_tx_end(store *st, int rc) GOALD_MUST_CHECK;

/* Convert the connection's last error once, here: sets the error slot to
 * "WHAT: sqlite message" and returns ERR_DB (ERR_BUSY when locked). */
int store_err(store *st, const char *what);

/* 1 once any SQLite call of this process failed because the disk or the
 * database was full (SQLITE_FULL, or ENOSPC under an I/O error); the
 * errors of store_open(), store_exec() and store_err() then say
 * "database or disk is full: PATH".  Sticky: the daemon stops on it. */
int store_disk_full(void);

/* SQLite connections this process holds open now (any thread).  A caller
 * that keeps a descriptor of the database file itself (the daemon's
 * instance lock) opens it before the first and closes it after the last:
 * a close(2) with a connection open would drop SQLite's POSIX locks. */
int store_sqlite_open_count(void);

/* A read transaction (a consistent picture across several reads; it
 * takes no write lock): store_read_begin(), then store_read_end() once. */
int store_read_begin(store *st);
void store_read_end(store *st);

/* From now on this connection only reads (a read-only command). */
int store_query_only(store *st);

#endif
