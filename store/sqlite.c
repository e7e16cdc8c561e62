/*
 * sqlite.c - the SQLite backend (store/backend.h): one database file on
 * one machine, the default.  Only SQLite opens the database file (a new
 * one is made 0600 before its first byte); the connection runs in WAL mode with foreign keys on, NORMAL sync and
 * the configured busy timeout.  A full disk is remembered process-wide
 * (store_disk_full()).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/backend.h"
#include "store/store.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/xalloc.h"

struct lite_stmt {
    struct store_stmt base;
    sqlite3_stmt *s;
};

#define LITE(s) (((struct lite_stmt *)(s))->s)
#define DB(st) ((sqlite3 *)(st)->conn)

/* Set once any SQLite call of this process met a full disk or database:
 * SQLITE_FULL, or an I/O error whose cause was ENOSPC (SQLite reports
 * creating the WAL's shared memory on a full disk as "disk I/O error").
 * SQLite's error log sees every such failure, whichever caller ignored the
 * result (a heartbeat, a best-effort event). */
static volatile int disk_full;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void sqlite_log(void *arg, int code, const char *msg)
{
    (void)arg;
    if ((code & 0xff) == SQLITE_FULL ||
        ((code & 0xff) == SQLITE_IOERR && msg && strstr(msg, ": (28) ")))
        disk_full = 1;
}

static void install_log(void)
{
    /* before SQLite initialises (the first open); a no-op after */
    sqlite3_config(SQLITE_CONFIG_LOG, sqlite_log, NULL);
}

static int is_full(sqlite3 *db)
{
    int code = db ? sqlite3_errcode(db) : 0;

    if (code == SQLITE_FULL || (code == SQLITE_IOERR && sqlite3_system_errno(db) == ENOSPC))
        disk_full = 1;
    return code == SQLITE_FULL || disk_full;
}

int store_disk_full(void)
{
    return disk_full;
}

static int lite_error(store *st, const char *what)
{
    int code = sqlite3_errcode(DB(st));
    int rc = (code == SQLITE_BUSY || code == SQLITE_LOCKED) ? ERR_BUSY : ERR_DB;

    if (code == SQLITE_FULL && is_full(DB(st)))
        return err_set(ERR_IO, "%s: database or disk is full: %s", what, st->path);
    return err_set(rc, "%s: %s", what, sqlite3_errmsg(DB(st)));
}

static int lite_exec(store *st, const char *sql)
{
    char *msg = NULL;
    int code, rc;

    if (sqlite3_exec(DB(st), sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    code = sqlite3_errcode(DB(st));
    rc = code == SQLITE_FULL && is_full(DB(st))
             ? err_set(ERR_IO, "database or disk is full: %s", st->path)
             : err_set(code == SQLITE_BUSY ? ERR_BUSY : ERR_DB, "database: %s",
                       msg ? msg : sqlite3_errmsg(DB(st)));
    sqlite3_free(msg);
    return rc;
}

/* Connections this process holds open (store_sqlite_open_count()). */
static atomic_int open_count;

int store_sqlite_open_count(void)
{
    return atomic_load(&open_count);
}

/* SQLite's answer to a failed open, in goald's words: a file that is not
 * there (without create) is ERR_NOTFOUND, a full disk ERR_IO.  Only
 * stat(2) looks at the path: it opens nothing, so it takes and drops no
 * lock (docs/architecture.md, "Who touches the database files"). */
static int open_failed(sqlite3 *db, const char *path, int create)
{
    struct stat sb;

    if (!create && stat(path, &sb) != 0 && errno == ENOENT)
        return err_set(ERR_NOTFOUND, "no database at %s", path);
    if (db && is_full(db))
        return err_set(ERR_IO, "database or disk is full: %s", path);
    return err_set(ERR_DB, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open database");
}

/*
 * Only SQLite opens, locks and closes the database file and its -wal,
 * -shm and -journal.  A close(2) of any descriptor of the file by this
 * process would drop every POSIX lock the process holds on it, SQLite's
 * included, and another process's SQLite would then take itself for the
 * last user: checkpoint, delete the WAL under this one, and lose writes.
 * So create goes through SQLITE_OPEN_CREATE, and "is it there" through
 * SQLite's own open without it.  A new file is made 0600 before its
 * first byte is written (chmod(2) works on the path: no descriptor).
 */
static int lite_open(store *st, const char *path, int create)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    char dir[4096];
    struct stat sb;
    sqlite3 *db = NULL;
    int rc, made = 0;

    pthread_once(&log_once, install_log);
    if (create) {
        if ((rc = fs_dirname(dir, sizeof(dir), path)) != 0 || (rc = fs_mkdir_p(dir, 0700)) != 0)
            return rc;
        made = stat(path, &sb) != 0 && errno == ENOENT;
        flags |= SQLITE_OPEN_CREATE;
    }
    st->path = xstrdup(path);
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        rc = open_failed(db, path, create);
        sqlite3_close(db);
        return rc;
    }
    st->conn = db;
    st->created = made;
    atomic_fetch_add(&open_count, 1);
    if (made && chmod(path, 0600) != 0)
        return err_set(ERR_IO, "%s: cannot make it private (chmod 0600): %s", path,
                       strerror(errno));
    sqlite3_extended_result_codes(db, 0);
    sqlite3_busy_timeout(db, (int)config_int(CFG_STORE_BUSY_TIMEOUT_MS));
    rc = lite_exec(st, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                       " PRAGMA foreign_keys=ON;");
    if (rc && is_full(db))
        return err_set(ERR_IO, "database or disk is full: %s", path);
    if (rc)
        err_wrap(rc, "%s", path);
    return rc;
}

static void lite_close(store *st)
{
    sqlite3_close(DB(st));
    atomic_fetch_sub(&open_count, 1);
}

int store_lite_text_read(store *st, const struct store_lite_cell *cell, int64_t off, char *buf,
                         size_t n, size_t *got, int64_t *size)
{
    const char *table = cell->table;
    sqlite3_blob *b = NULL;
    int64_t bytes;
    size_t want = 0;
    int code;

    *got = 0;
    code = sqlite3_blob_open(DB(st), "main", table, cell->col, cell->rowid, 0, &b);
    if (code != SQLITE_OK) {
        int rc = strncmp(sqlite3_errmsg(DB(st)), "no such rowid", 13) == 0
                     ? err_set(ERR_NOTFOUND, "%s %lld: gone", table, (long long)cell->rowid)
                     : lite_error(st, table);
        sqlite3_blob_close(b);
        return rc;
    }
    bytes = sqlite3_blob_bytes(b);
    *size = bytes;
    if (off < bytes)
        want = (size_t)(bytes - off) < n ? (size_t)(bytes - off) : n;
    if (want && sqlite3_blob_read(b, buf, (int)want, (int)off) != SQLITE_OK) {
        int rc = lite_error(st, table);
        sqlite3_blob_close(b);
        return rc;
    }
    *got = want;
    sqlite3_blob_close(b);
    return 0;
}

static int lite_prepare(store *st, const char *sql, store_stmt **out)
{
    sqlite3_stmt *s = NULL;
    struct lite_stmt *ls;

    if (sqlite3_prepare_v2(DB(st), sql, -1, &s, NULL) != SQLITE_OK)
        return lite_error(st, "prepare");
    ls = xcalloc(1, sizeof(*ls));
    ls->base.st = st;
    ls->s = s;
    *out = &ls->base;
    return 0;
}

static void lite_finalize(store_stmt *s)
{
    sqlite3_finalize(LITE(s));
    free(s);
}

static void lite_bind(store_stmt *s, int i, const struct store_arg *a)
{
    switch (a->type) {
    case STORE_ARG_TEXT:
        if (a->text)
            sqlite3_bind_text(LITE(s), i, a->text, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(LITE(s), i);
        break;
    case STORE_ARG_I64:
        sqlite3_bind_int64(LITE(s), i, a->i64);
        break;
    case STORE_ARG_DOUBLE:
        sqlite3_bind_double(LITE(s), i, a->d);
        break;
    case STORE_ARG_NULL:
        sqlite3_bind_null(LITE(s), i);
        break;
    }
}

static int lite_step(store_stmt *s)
{
    switch (sqlite3_step(LITE(s))) {
    case SQLITE_ROW:
        return STORE_ROW;
    case SQLITE_DONE:
        return STORE_DONE;
    default:
        return STORE_FAIL;
    }
}

static void lite_reset(store_stmt *s)
{
    sqlite3_reset(LITE(s));
    sqlite3_clear_bindings(LITE(s));
}

static int lite_changes(store_stmt *s)
{
    return sqlite3_changes(DB(s->st));
}

static int lite_col_null(store_stmt *s, int i)
{
    return sqlite3_column_type(LITE(s), i) == SQLITE_NULL;
}

static int64_t lite_col_i64(store_stmt *s, int i)
{
    return sqlite3_column_int64(LITE(s), i);
}

static double lite_col_double(store_stmt *s, int i)
{
    return sqlite3_column_double(LITE(s), i);
}

static const char *lite_col_text(store_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(LITE(s), i);
}

static int lite_col_count(store_stmt *s)
{
    return sqlite3_column_count(LITE(s));
}

static const char *lite_col_name(store_stmt *s, int i)
{
    return sqlite3_column_name(LITE(s), i);
}

static enum store_arg_type lite_col_type(store_stmt *s, int i)
{
    switch (sqlite3_column_type(LITE(s), i)) {
    case SQLITE_INTEGER: return STORE_ARG_I64;
    case SQLITE_FLOAT: return STORE_ARG_DOUBLE;
    case SQLITE_NULL: return STORE_ARG_NULL;
    default: return STORE_ARG_TEXT; /* goald stores no blobs */
    }
}

/* SQLite's write lock is the file's: BEGIN IMMEDIATE already orders two
 * processes migrating together (the second re-checks what is applied). */
static int lite_migrate_lock(store *st, int lock)
{
    (void)st;
    (void)lock;
    return 0;
}

const struct store_backend store_backend_sqlite = {
    .dialect = STORE_SQLITE,
    .name = "sqlite",
    .open = lite_open,
    .close = lite_close,
    .exec = lite_exec,
    .prepare = lite_prepare,
    .finalize = lite_finalize,
    .bind = lite_bind,
    .step = lite_step,
    .reset = lite_reset,
    .changes = lite_changes,
    .col_null = lite_col_null,
    .col_i64 = lite_col_i64,
    .col_double = lite_col_double,
    .col_text = lite_col_text,
    .col_count = lite_col_count,
    .col_name = lite_col_name,
    .col_type = lite_col_type,
    .error = lite_error,
    .begin_write = "BEGIN IMMEDIATE",
    .begin_read = "BEGIN",
    .query_only = "PRAGMA query_only = 1",
    .migrate_lock = lite_migrate_lock,
    .migrations = store_migrations,
    .migrations_count = &store_migrations_count,
};
