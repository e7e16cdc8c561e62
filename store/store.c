/*
 * store.c - a store over either backend (store/backend.h): open by path or
 * URL, the statement cache, transactions, migrations.
 */
#include "store/store.h"
#include "store/backend.h"
#include "store/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/id.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

int store_err(store *st, const char *what)
{
    return st->be->error(st, what);
}

/* $XDG_STATE_HOME/goald/NAME, else ~/.local/state/goald/NAME. */
static int state_path(char *out, size_t n, const char *name)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int w;

    if (xdg && *xdg)
        w = snprintf(out, n, "%s/goald%s", xdg, name);
    else if (home && *home)
        w = snprintf(out, n, "%s/.local/state/goald%s", home, name);
    else
        return err_set(ERR_INVALID, "neither XDG_STATE_HOME nor HOME is set: use --db");
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "state path too long");
    return 0;
}

int store_default_path(char *out, size_t n)
{
    const char *url = config_str(CFG_STORE_URL);

    if (url && *url) {
        if ((size_t)snprintf(out, n, "%s", url) >= n)
            return err_set(ERR_INVALID, "store.url too long");
        return 0;
    }
    return state_path(out, n, "/goald.db");
}

int store_local_dir(char *out, size_t n, const char *target)
{
    const char *dir = config_str(CFG_NODE_STATE_DIR);

    if (!store_is_url(target))
        return fs_dirname(out, n, target);
    if (!dir || !*dir)
        return state_path(out, n, "");
    if ((size_t)snprintf(out, n, "%s", dir) >= n)
        return err_set(ERR_INVALID, "node.state_dir too long");
    return 0;
}

int store_node_id(char *out, size_t n, const char *target)
{
    const char *id = config_str(CFG_NODE_ID);
    char dir[4096], real[4096], host[256] = "";
    int rc, w;

    if (id && *id)
        w = snprintf(out, n, "%s", id);
    else if ((rc = store_local_dir(dir, sizeof(dir), target)) != 0)
        return rc;
    else {
        /* the same folder by any path to it: the daemon and a CLI command
         * started elsewhere name one node */
        if (!realpath(dir, real) && path_fmt(real, sizeof(real), "%s", dir) != 0)
            return err_wrap(ERR_INVALID, "node id: the node's folder");
        id_host(host, sizeof(host));
        w = snprintf(out, n, "%s:%s", host, real);
    }
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "node id too long (node.id)");
    return 0;
}

int store_wake_listen(store *st)
{
    return st->be->wake_listen ? st->be->wake_listen(st) : 0;
}

int store_wake_nodes(store *st)
{
    return st->be->wake_notify ? st->be->wake_notify(st) : 0;
}

int store_wake_fd(store *st)
{
    return st->be->wake_fd ? st->be->wake_fd(st) : -1;
}

int store_wake_drain(store *st)
{
    return st->be->wake_drain ? st->be->wake_drain(st) : 0;
}

int store_reachable(store *st)
{
    if (!st->be->reconnect || st->be->reconnect(st) == 0)
        return 0;
    return store_err(st, "database");
}

int store_created(const store *st)
{
    return st->created;
}

const char *store_path(const store *st)
{
    return st->path;
}

enum store_dialect store_dialect_of(const store *st)
{
    return st->be->dialect;
}

const char *store_sql(const store *st, const char *sqlite_sql, const char *pg_sql)
{
    return st->be->dialect == STORE_PG ? pg_sql : sqlite_sql;
}

int store_is_url(const char *target)
{
    return !strncmp(target, "postgres://", 11) || !strncmp(target, "postgresql://", 13);
}

int store_exec(store *st, const char *sql)
{
    return st->be->exec(st, sql);
}

int store_prepare(store *st, store_stmt **out, const char *sql)
{
    store_stmt *s = NULL;
    int rc;

    for (int i = 0; i < st->ncache; i++) {
        if (st->cache[i].sql == sql || strcmp(st->cache[i].sql, sql) == 0) {
            *out = st->cache[i].stmt;
            return 0;
        }
    }
    if ((rc = st->be->prepare(st, sql, &s)) != 0)
        return rc;
    if (st->ncache == STORE_STMT_CACHE) {
        /* full: evict the oldest, keeping the cache bounded */
        st->be->finalize(st->cache[0].stmt);
        memmove(&st->cache[0], &st->cache[1], sizeof(st->cache[0]) * (STORE_STMT_CACHE - 1));
        st->ncache--;
    }
    st->cache[st->ncache].sql = sql;
    st->cache[st->ncache].stmt = s;
    st->ncache++;
    *out = s;
    return 0;
}

int store_prepare_uncached(store *st, store_stmt **out, const char *sql)
{
    return st->be->prepare(st, sql, out);
}

void store_finalize(store_stmt *s)
{
    if (s)
        s->st->be->finalize(s);
}

void store_done(store_stmt *s)
{
    if (s)
        s->st->be->reset(s);
}

int store_step(store_stmt *s)
{
    return s->st->be->step(s);
}

int store_changes(store_stmt *s)
{
    return s->st->be->changes(s);
}

/* Every text bound is valid UTF-8, on both backends: PostgreSQL refuses a
 * text with an invalid byte (the whole write fails), SQLite would keep it
 * and hand it to every JSON reader.  Each invalid byte becomes U+FFFD;
 * the producers that know what the text is (a gate's or a tool's output)
 * say so in the text itself before it gets here. */
void store_bind_text(store_stmt *s, int i, const char *v)
{
    strbuf clean = STRBUF_INIT;
    size_t len = v ? strlen(v) : 0;

    if (!v || utf8_invalid_count(v, len) == 0) {
        s->st->be->bind(s, i, &STORE_TEXT(v));
        return;
    }
    /* at most 3 bytes for each one: the cap cannot be reached */
    strbuf_init(&clean, len * 3 + 1);
    if (utf8_sanitize(&clean, v, len, NULL) != 0)
        abort(); /* a broken invariant: the cap above holds every replacement */
    s->st->be->bind(s, i, &STORE_TEXT(strbuf_cstr(&clean)));
    strbuf_release(&clean);
}

void store_bind_i64(store_stmt *s, int i, int64_t v)
{
    s->st->be->bind(s, i, &STORE_I64(v));
}

void store_bind_double(store_stmt *s, int i, double v)
{
    s->st->be->bind(s, i, &STORE_DOUBLE(v));
}

void store_bind_null(store_stmt *s, int i)
{
    s->st->be->bind(s, i, &STORE_NULL);
}

int store_col_null(store_stmt *s, int i)
{
    return s->st->be->col_null(s, i);
}

int64_t store_col_i64(store_stmt *s, int i)
{
    return s->st->be->col_i64(s, i);
}

int store_col_int(store_stmt *s, int i)
{
    return (int)s->st->be->col_i64(s, i);
}

double store_col_double(store_stmt *s, int i)
{
    return s->st->be->col_double(s, i);
}

const char *store_col_raw(store_stmt *s, int i)
{
    return s->st->be->col_text(s, i);
}

int store_col_count(store_stmt *s)
{
    return s->st->be->col_count(s);
}

const char *store_col_name(store_stmt *s, int i)
{
    return s->st->be->col_name(s, i);
}

enum store_arg_type store_col_type(store_stmt *s, int i)
{
    return s->st->be->col_type(s, i);
}

char *store_col_strdup(store_stmt *s, int i)
{
    const char *t = store_col_raw(s, i);

    return t ? xstrdup(t) : NULL;
}

int store_in_tx(const store *st)
{
    return st->tx_depth > 0;
}

int store_tx_begin(store *st)
{
    int rc;

    if (st->tx_depth == 0)
        rc = store_exec(st, st->be->begin_write);
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
        (void)st->be->exec(st, "ROLLBACK");
    } else {
        (void)st->be->exec(st, "ROLLBACK TO goald_sp");
        (void)st->be->exec(st, "RELEASE goald_sp");
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
    int64_t v = 0;
    int rc = store_count(st, "schema version", &v,
                         "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL, 0);

    if (rc == 0)
        *out = (int)v;
    return rc;
}

/* Apply migration m unless another process did while this one waited. */
static int migrate_one(store *st, const struct store_migration *m, int *applied)
{
    int64_t found = 0;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    rc = store_count(st, "migrations", &found,
                     "SELECT count(*) FROM schema_migrations WHERE version = ?",
                     STORE_ARGS(STORE_I64(m->version)));
    if (rc || found)
        goto out;
    if ((rc = store_exec(st, m->sql)) != 0) {
        err_wrap(rc, "migration %s", m->name);
        goto out;
    }
    rc = store_exec_args(
        st, "migrations", NULL,
        "INSERT INTO schema_migrations(version, name, applied_at)"
        " VALUES (?, ?, ?)",
        STORE_ARGS(STORE_I64(m->version), STORE_TEXT(m->name), STORE_I64(time_now_ms())));
    if (rc == 0)
        (*applied)++;
out:
    return store_tx_end(st, rc);
}

static int migrate_locked(store *st, int *applied)
{
    int cur = 0, latest = store_schema_latest();
    int rc;

    rc = store_exec(st, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                        " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                        " applied_at BIGINT NOT NULL)");
    if (rc == 0)
        rc = store_schema_version(st, &cur);
    if (rc)
        return rc;
    if (cur > latest)
        return err_set(ERR_VERSION,
                       "%s: database schema version %d is newer than this goald (which knows "
                       "up to version %d): upgrade goald",
                       st->path, cur, latest);
    for (size_t i = 0; i < *st->be->migrations_count && rc == 0; i++)
        if (st->be->migrations[i].version > cur)
            rc = migrate_one(st, &st->be->migrations[i], applied);
    return rc;
}

int store_migrate(store *st, int *applied)
{
    int n = 0, cur = 0;
    int rc;

    /* the common case, a database already at this goald's version: one
     * read, no lock (every job process opens the store; on PostgreSQL the
     * locked path is five round trips).  Anything else, a missing table
     * included, takes the lock and looks again. */
    if (store_schema_version(st, &cur) == 0 && cur == store_schema_latest()) {
        if (applied)
            *applied = 0;
        return 0;
    }
    err_clear();
    if ((rc = st->be->migrate_lock(st, 1)) != 0)
        return rc;
    rc = migrate_locked(st, &n);
    (void)st->be->migrate_lock(st, 0);
    if (rc == 0 && applied)
        *applied = n;
    return rc;
}

/* Open target (a path, or a postgres:// URL); create: the SQLite file and
 * its folder may be made. */
static int open_db(store **out, const char *target, int create)
{
    store *st = xcalloc(1, sizeof(*st));
    int rc;

    st->be = store_is_url(target) ? &store_backend_pg : &store_backend_sqlite;
    if ((rc = st->be->open(st, target, create)) != 0)
        goto out;
    if ((rc = store_migrate(st, NULL)) != 0)
        goto out;
    *out = st;
    st = NULL;
out:
    if (rc && store_disk_full())
        rc = err_set(ERR_IO, "database or disk is full: %s", st->path ? st->path : target);
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
        st->be->finalize(st->cache[i].stmt);
    if (st->conn)
        st->be->close(st);
    free(st->path);
    free(st);
}

int store_ids(store *st, const char *sql, const char *arg, char (**out)[37], size_t *n)
{
    return store_ids_args(st, "ids", out, n, sql, STORE_ARGS(STORE_TEXT(arg)));
}

int store_read_begin(store *st)
{
    return store_exec(st, st->be->begin_read);
}

void store_read_end(store *st)
{
    (void)store_exec(st, "COMMIT");
}

int store_query_only(store *st)
{
    return store_exec(st, st->be->query_only);
}
