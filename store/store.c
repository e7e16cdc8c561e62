#include "store/store.h"
#include "store/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define STMT_CACHE 64

struct stmt_slot {
    const char *sql; /* the caller's literal: compared by address, then text */
    sqlite3_stmt *stmt;
};

struct store {
    sqlite3 *db;
    char *path;
    int tx_depth;
    struct stmt_slot cache[STMT_CACHE];
    int ncache;
};

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

int store_err(store *st, const char *what)
{
    int code = sqlite3_errcode(st->db);
    int rc = (code == SQLITE_BUSY || code == SQLITE_LOCKED) ? ERR_BUSY : ERR_DB;

    if (code == SQLITE_FULL && is_full(st->db))
        return err_set(ERR_IO, "%s: database or disk is full: %s", what, st->path);
    return err_set(rc, "%s: %s", what, sqlite3_errmsg(st->db));
}

int store_default_path(char *out, size_t n)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int w;

    if (xdg && *xdg)
        w = snprintf(out, n, "%s/goald/goald.db", xdg);
    else if (home && *home)
        w = snprintf(out, n, "%s/.local/state/goald/goald.db", home);
    else
        return err_set(ERR_INVALID, "neither XDG_STATE_HOME nor HOME is set: use --db");
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "database path too long");
    return 0;
}

sqlite3 *store_db(store *st)
{
    return st->db;
}

const char *store_path(const store *st)
{
    return st->path;
}

int store_exec(store *st, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int code = sqlite3_errcode(st->db);
        int rc = code == SQLITE_FULL && is_full(st->db)
                     ? err_set(ERR_IO, "database or disk is full: %s", st->path)
                     : err_set(code == SQLITE_BUSY ? ERR_BUSY : ERR_DB, "database: %s",
                               msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

int store_prepare(store *st, sqlite3_stmt **out, const char *sql)
{
    sqlite3_stmt *s = NULL;

    for (int i = 0; i < st->ncache; i++) {
        if (st->cache[i].sql == sql || strcmp(st->cache[i].sql, sql) == 0) {
            *out = st->cache[i].stmt;
            return 0;
        }
    }
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return store_err(st, "prepare");
    if (st->ncache < STMT_CACHE) {
        st->cache[st->ncache].sql = sql;
        st->cache[st->ncache].stmt = s;
        st->ncache++;
    } else {
        /* full: evict the oldest, keeping the cache bounded */
        sqlite3_finalize(st->cache[0].stmt);
        memmove(&st->cache[0], &st->cache[1], sizeof(st->cache[0]) * (STMT_CACHE - 1));
        st->cache[STMT_CACHE - 1].sql = sql;
        st->cache[STMT_CACHE - 1].stmt = s;
    }
    *out = s;
    return 0;
}

void store_done(sqlite3_stmt *stmt)
{
    if (!stmt)
        return;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

int store_bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (!v)
        return sqlite3_bind_null(s, i);
    return sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
}

char *store_col_strdup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    char *p;

    if (!t)
        return NULL;
    p = xstrdup((const char *)t);
    return p;
}

int store_tx_begin(store *st)
{
    int rc;

    if (st->tx_depth == 0)
        rc = store_exec(st, "BEGIN IMMEDIATE");
    else
        rc = store_exec(st, "SAVEPOINT goald_sp");
    if (rc == 0)
        st->tx_depth++;
    return rc;
}

int store_tx_commit(store *st)
{
    int rc;

    if (st->tx_depth <= 0)
        return err_set(ERR_DB, "commit without a transaction");
    if (st->tx_depth == 1)
        rc = store_exec(st, "COMMIT");
    else
        rc = store_exec(st, "RELEASE goald_sp");
    if (rc == 0)
        st->tx_depth--;
    else if (st->tx_depth == 1)
        store_tx_rollback(st);
    return rc;
}

int store_tx_end(store *st, int rc)
{
    if (rc == 0)
        return store_tx_commit(st);
    store_tx_rollback(st);
    return rc;
}

void store_tx_rollback(store *st)
{
    if (st->tx_depth <= 0)
        return;
    if (st->tx_depth == 1) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        sqlite3_exec(st->db, "ROLLBACK TO goald_sp", NULL, NULL, NULL);
        sqlite3_exec(st->db, "RELEASE goald_sp", NULL, NULL, NULL);
    }
    st->tx_depth--;
}

int store_schema_latest(void)
{
    int v = 0;

    for (size_t i = 0; i < store_migrations_count; i++)
        if (store_migrations[i].version > v)
            v = store_migrations[i].version;
    return v;
}

int store_schema_version(store *st, int *out)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(st->db, "SELECT ifnull(max(version),0) FROM schema_migrations", -1,
                           &s, NULL) != SQLITE_OK)
        return store_err(st, "schema version");
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = sqlite3_column_int(s, 0);
    else
        rc = store_err(st, "schema version");
    sqlite3_finalize(s);
    return rc;
}

static int migration_applied(store *st, int version, int *yes)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM schema_migrations WHERE version = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return store_err(st, "migrations");
    sqlite3_bind_int(s, 1, version);
    switch (sqlite3_step(s)) {
    case SQLITE_ROW: *yes = 1; break;
    case SQLITE_DONE: *yes = 0; break;
    default: rc = store_err(st, "migrations");
    }
    sqlite3_finalize(s);
    return rc;
}

int store_migrate(store *st, int *applied)
{
    int cur = 0, latest = store_schema_latest();
    int n = 0;
    int rc;

    rc = store_exec(st, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                        " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                        " applied_at INTEGER NOT NULL)");
    if (rc)
        return rc;
    rc = store_schema_version(st, &cur);
    if (rc)
        return rc;
    if (cur > latest)
        return err_set(ERR_VERSION,
                       "%s: database schema version %d is newer than this goald (which knows "
                       "up to version %d): upgrade goald",
                       st->path, cur, latest);
    for (size_t i = 0; i < store_migrations_count; i++) {
        const struct store_migration *m = &store_migrations[i];
        sqlite3_stmt *s = NULL;
        int yes = 0;

        if (m->version <= cur)
            continue;
        if ((rc = store_tx_begin(st)) != 0)
            return rc;
        /* another process may have applied it while we waited for the lock */
        if ((rc = migration_applied(st, m->version, &yes)) != 0)
            goto fail;
        if (yes) {
            store_tx_rollback(st);
            continue;
        }
        if ((rc = store_exec(st, m->sql)) != 0) {
            err_wrap(rc, "migration %s", m->name);
            goto fail;
        }
        if (sqlite3_prepare_v2(st->db,
                               "INSERT INTO schema_migrations(version, name, applied_at)"
                               " VALUES (?, ?, ?)",
                               -1, &s, NULL) != SQLITE_OK) {
            rc = store_err(st, "migrations");
            goto fail;
        }
        sqlite3_bind_int(s, 1, m->version);
        sqlite3_bind_text(s, 2, m->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, time_now_ms());
        if (sqlite3_step(s) != SQLITE_DONE) {
            rc = store_err(st, "migrations");
            sqlite3_finalize(s);
            goto fail;
        }
        sqlite3_finalize(s);
        if ((rc = store_tx_commit(st)) != 0)
            return rc;
        n++;
    }
    if (applied)
        *applied = n;
    return 0;
fail:
    store_tx_rollback(st);
    return rc;
}

/* Open the database at path; create: make its folder and file first. */
static int open_db(store **out, const char *path, int create)
{
    char dir[4096];
    char pragmas[256];
    store *st = NULL;
    int fd;
    int rc = 0;

    if (create) {
        if ((rc = fs_dirname(dir, sizeof(dir), path)) != 0)
            return rc;
        if ((rc = fs_mkdir_p(dir, 0700)) != 0)
            return rc;
    }
    pthread_once(&log_once, install_log);
    /* create the file ourselves so that it is 0600 from the first byte */
    fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (fd < 0 && !create && errno == ENOENT)
        return err_set(ERR_NOTFOUND, "no database at %s", path);
    if (fd < 0 && errno == ENOSPC)
        return err_set(ERR_IO, "database or disk is full: %s", path);
    if (fd < 0)
        return err_set(ERR_IO, "%s: cannot open database: %s", path, strerror(errno));
    close(fd);

    st = xcalloc(1, sizeof(*st));
    st->path = xstrdup(path);
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = err_set(ERR_DB, "%s: %s", path,
                     st->db ? sqlite3_errmsg(st->db) : "cannot open database");
        goto out;
    }
    sqlite3_extended_result_codes(st->db, 0);
    sqlite3_busy_timeout(st->db, (int)config_int(CFG_STORE_BUSY_TIMEOUT_MS));
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
    if ((rc = store_exec(st, pragmas)) != 0) {
        err_wrap(rc, "%s", path);
        goto out;
    }
    if ((rc = store_migrate(st, NULL)) != 0)
        goto out;
    *out = st;
    st = NULL;
out:
    if (rc && st && is_full(st->db))
        rc = err_set(ERR_IO, "database or disk is full: %s", path);
    store_close(st);
    return rc;
}

int store_open(store **out, const char *path)
{
    return open_db(out, path, 1);
}

int store_open_existing(store **out, const char *path)
{
    return open_db(out, path, 0);
}

void store_close(store *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->ncache; i++)
        sqlite3_finalize(st->cache[i].stmt);
    if (st->db)
        sqlite3_close(st->db);
    free(st->path);
    free(st);
}

int store_ids(store *st, const char *sql, const char *arg, char (**out)[37], size_t *n)
{
    char(*ids)[37] = NULL;
    size_t cnt = 0, alloc = 0;
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, sql);

    *out = NULL;
    *n = 0;
    if (rc)
        return rc;
    store_bind_text(s, 1, arg);
    while (store_next_row(st, s, "ids", &rc)) {
        if (cnt == alloc) {
            alloc = alloc ? alloc * 2 : 16;
            ids = xrealloc(ids, alloc * sizeof(*ids));
        }
        snprintf(ids[cnt++], sizeof(ids[0]), "%.36s", (const char *)sqlite3_column_text(s, 0));
    }
    store_done(s);
    if (rc) {
        free(ids);
        return rc;
    }
    *out = ids;
    *n = cnt;
    return 0;
}

int store_read_begin(store *st)
{
    return store_exec(st, "BEGIN");
}

void store_read_end(store *st)
{
    store_exec(st, "COMMIT");
}

int store_query_only(store *st)
{
    return store_exec(st, "PRAGMA query_only = 1");
}
