/*
 * pg.c - the PostgreSQL backend (store/backend.h), through libpq: several
 * goald nodes sharing one queue.  The target is a libpq URL
 * (postgres://user@host/db?...); a password in it is refused (it would sit
 * in a command line or a config file): libpq reads it from PGPASSFILE or
 * ~/.pgpass.
 *
 * Statements are prepared on the server once per connection (a name per
 * cached statement); `?` and `?N` placeholders become `$N`; values travel
 * as text with their types left to the server, which infers them from the
 * SQL.  Rows are read from the whole result of one execution.
 *
 * Write transactions take one advisory lock (the transaction's, released
 * at its end): the same one-writer-at-a-time rule SQLite's BEGIN IMMEDIATE
 * gives, so every invariant the store keeps for SQLite holds here too;
 * reads never wait for it.  A lost connection is reset at the next
 * statement outside a transaction (every cached statement is prepared
 * again); inside one, the statement fails and the caller rolls back.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/backend.h"
#include "store/store.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* pg_advisory_xact_lock / pg_advisory_lock keys: "goald" in ASCII as a
 * number (0x676f616c64), and
 * that plus one for migrations. */
#define PG_WRITE_LOCK "444250287204"
#define PG_MIGRATE_LOCK "444250287205"
#define PG_MAX_PARAMS 64

struct pg_conn {
    PGconn *c;
    unsigned gen;     /* bumped at each reset: statements prepare again */
    unsigned next_id; /* statement names g1, g2, ... */
    char err[512];    /* the last error, for error() */
    char state[6];    /* its SQLSTATE ("" when none) */
    int listening;    /* LISTEN goald_wake: issued again after a reset */
};

struct pg_stmt {
    struct store_stmt base;
    char *sql; /* translated: $N placeholders */
    char name[24];
    unsigned gen; /* the connection generation it was prepared in; 0: not yet */
    int nparams;
    char *vals[PG_MAX_PARAMS];
    PGresult *res;
    int row, nrows; /* row: the current one, -1 before the first */
    int changes;
};

#define PGC(st) ((struct pg_conn *)(st)->conn)
#define PGS(s) ((struct pg_stmt *)(s))

static void pg_note_error(struct pg_conn *pc, const PGresult *res)
{
    const char *msg = res ? PQresultErrorMessage(res) : "";
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    size_t n;

    if (!msg || !*msg)
        msg = PQerrorMessage(pc->c);
    /* truncation: ok, a message */
    snprintf(pc->err, sizeof(pc->err), "%s", msg && *msg ? msg : "unknown error");
    n = strlen(pc->err);
    while (n > 0 && (pc->err[n - 1] == '\n' || pc->err[n - 1] == ' '))
        pc->err[--n] = '\0';
    /* truncation: ok, an SQLSTATE, 5 bytes */
    snprintf(pc->state, sizeof(pc->state), "%s", state ? state : "");
}

/* Lock waits, serialisation failures and deadlocks are worth a retry. */
static int pg_state_busy(const char *state)
{
    return !strncmp(state, "40", 2) || !strcmp(state, "55P03");
}

static int pg_error(store *st, const char *what)
{
    struct pg_conn *pc = PGC(st);

    if (!strcmp(pc->state, "53100"))
        return err_set(ERR_IO, "%s: database or disk is full: %s (%s)", what, st->path, pc->err);
    return err_set(pg_state_busy(pc->state) ? ERR_BUSY : ERR_DB, "%s: %s", what, pc->err);
}

/* A transaction of goald's is milliseconds of statements; one left idle
 * for a minute belongs to a process frozen mid-transaction (a paused VM,
 * SIGSTOP), which would hold the one write lock of every node: the
 * server ends it (and its session), and the lock is free again. */
#define PG_SESSION                                                                                 \
    "SET client_min_messages = warning; SET TIME ZONE 'UTC';"                                      \
    " SET idle_in_transaction_session_timeout = '60s'"
#define PG_WAKE_CHANNEL "goald_wake"

/* What every session of ours starts with: the settings, and the LISTEN
 * of a connection that listens (lost with the server's session). */
static int pg_session(struct pg_conn *pc)
{
    const char *sql = pc->listening ? PG_SESSION "; LISTEN " PG_WAKE_CHANNEL : PG_SESSION;
    PGresult *res = PQexec(pc->c, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;

    if (!ok)
        pg_note_error(pc, res);
    PQclear(res);
    return ok ? 0 : -1;
}

/* A broken connection is reset while no transaction depends on it. */
static int pg_ready(store *st)
{
    struct pg_conn *pc = PGC(st);

    if (PQstatus(pc->c) == CONNECTION_OK)
        return 0;
    if (st->tx_depth > 0) {
        /* truncation: ok, a message */
        snprintf(pc->err, sizeof(pc->err), "connection to the server lost in a transaction");
        pc->state[0] = '\0';
        return -1;
    }
    PQreset(pc->c);
    pc->gen++;
    if (PQstatus(pc->c) == CONNECTION_OK)
        return pg_session(pc);
    pg_note_error(pc, NULL);
    return -1;
}

static int pg_exec(store *st, const char *sql)
{
    struct pg_conn *pc = PGC(st);
    PGresult *res;
    int ok;

    if (pg_ready(st) != 0)
        return pg_error(st, "database");
    res = PQexec(pc->c, sql);
    ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        pg_note_error(pc, res);
    /* COMMIT of a transaction an earlier error aborted answers success with
     * the tag ROLLBACK: nothing was written, and the caller must know */
    if (ok && !strcmp(PQcmdStatus(res), "ROLLBACK") && strncmp(sql, "ROLLBACK", 8) != 0) {
        ok = 0;
        snprintf(pc->err, sizeof(pc->err), /* truncation: ok, a message */
                 "the transaction was rolled back: an earlier statement in it failed");
        pc->state[0] = '\0';
    }
    PQclear(res);
    return ok ? 0 : pg_error(st, "database");
}

static void pg_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* NOTICEs ("relation already exists, skipping") are not errors */
}

/* The URL with any password refused: it belongs in PGPASSFILE. */
static int pg_check_url(const char *url)
{
    PQconninfoOption *opts;
    char *msg = NULL;
    int rc = 0;

    if (!(opts = PQconninfoParse(url, &msg))) {
        rc = err_set(ERR_INVALID, "store url: %s", msg ? msg : "cannot be parsed");
        PQfreemem(msg);
        return rc;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (!strcmp(o->keyword, "password") && o->val && *o->val)
            rc = err_set(ERR_INVALID, "store url: holds a password: put it in a password file "
                                      "(PGPASSFILE or ~/.pgpass), not in the URL");
    PQconninfoFree(opts);
    return rc;
}

static int pg_open(store *st, const char *url, int create)
{
    struct pg_conn *pc;
    int rc;

    (void)create; /* the database must exist: goald makes tables, not databases */
    if ((rc = pg_check_url(url)) != 0)
        return rc;
    st->path = xstrdup(url);
    pc = xcalloc(1, sizeof(*pc));
    pc->gen = 1;
    st->conn = pc;
    pc->c = PQconnectdb(url);
    if (!pc->c)
        return err_set(ERR_DB, "%s: out of memory connecting", url);
    if (PQstatus(pc->c) != CONNECTION_OK) {
        pg_note_error(pc, NULL);
        return err_set(ERR_DB, "%s: %s", url, pc->err);
    }
    PQsetNoticeProcessor(pc->c, pg_quiet, NULL);
    return pg_session(pc) == 0 ? 0 : pg_error(st, "database");
}

static int pg_wake_listen(store *st)
{
    PGC(st)->listening = 1;
    return pg_exec(st, "LISTEN " PG_WAKE_CHANNEL);
}

static int pg_wake_notify(store *st)
{
    return pg_exec(st, "NOTIFY " PG_WAKE_CHANNEL);
}

static int pg_wake_fd(store *st)
{
    struct pg_conn *pc = PGC(st);

    return PQstatus(pc->c) == CONNECTION_OK ? PQsocket(pc->c) : -1;
}

static int pg_wake_drain(store *st)
{
    struct pg_conn *pc = PGC(st);
    PGnotify *n;
    int count = 0;

    if (PQconsumeInput(pc->c) == 0)
        return -1; /* the next statement resets the connection */
    while ((n = PQnotifies(pc->c)) != NULL) {
        count++;
        PQfreemem(n);
    }
    return count;
}

static void pg_close(store *st)
{
    struct pg_conn *pc = PGC(st);

    PQfinish(pc->c);
    free(pc);
}

/* Copy the quoted run ('...' or "...", doubled quotes inside) of sql at
 * *i into out, moving *i past it. */
static int copy_quoted(strbuf *out, const char *sql, size_t *i)
{
    char q = sql[*i];
    size_t j = *i + 1;

    while (sql[j]) {
        if (sql[j] == q && sql[j + 1] == q) {
            j += 2;
            continue;
        }
        if (sql[j++] == q)
            break;
    }
    size_t start = *i;

    *i = j;
    return strbuf_add(out, sql + start, j - start);
}

/* The placeholder at sql[*i] ('?'): its number (`?N`, or the one after
 * the previous for a bare `?`), moving *i past it. */
static int placeholder_number(const char *sql, size_t *i, int next)
{
    int n = 0;

    (*i)++;
    if (sql[*i] < '0' || sql[*i] > '9')
        return next;
    while (sql[*i] >= '0' && sql[*i] <= '9' && n < 10000)
        n = n * 10 + (sql[(*i)++] - '0');
    return n;
}

/* sql with `?` and `?N` as `$N`, outside quotes; *nparams: the highest N. */
static int pg_translate(char **out, int *nparams, const char *sql)
{
    strbuf b;
    size_t i = 0;
    int next = 1, max = 0, rc = 0;

    strbuf_init(&b, 0);
    while (sql[i] && rc == 0) {
        if (sql[i] == '\'' || sql[i] == '"') {
            rc = copy_quoted(&b, sql, &i);
        } else if (sql[i] != '?') {
            rc = strbuf_addc(&b, sql[i++]);
        } else {
            int n = placeholder_number(sql, &i, next);

            next = n + 1;
            max = n > max ? n : max;
            rc = strbuf_addf(&b, "$%d", n);
        }
    }
    if (rc == 0 && max > PG_MAX_PARAMS)
        rc =
            err_set(ERR_INVALID, "a statement with %d parameters (at most %d)", max, PG_MAX_PARAMS);
    if (rc) {
        strbuf_release(&b);
        return rc;
    }
    *out = strbuf_detach(&b, NULL);
    *nparams = max;
    return 0;
}

static int pg_prepare(store *st, const char *sql, store_stmt **out)
{
    struct pg_stmt *ps = xcalloc(1, sizeof(*ps));
    int rc;

    ps->base.st = st;
    ps->row = -1;
    if ((rc = pg_translate(&ps->sql, &ps->nparams, sql)) != 0) {
        free(ps);
        return rc;
    }
    /* truncation: ok, g and a number fit */
    snprintf(ps->name, sizeof(ps->name), "g%u", ++PGC(st)->next_id);
    *out = &ps->base;
    return 0;
}

static void pg_reset(store_stmt *s)
{
    struct pg_stmt *ps = PGS(s);

    PQclear(ps->res);
    ps->res = NULL;
    ps->row = -1;
    ps->nrows = 0;
    for (int i = 0; i < ps->nparams; i++) {
        free(ps->vals[i]);
        ps->vals[i] = NULL;
    }
}

static void pg_finalize(store_stmt *s)
{
    struct pg_stmt *ps = PGS(s);
    struct pg_conn *pc = PGC(s->st);

    pg_reset(s);
    if (ps->gen == pc->gen && PQstatus(pc->c) == CONNECTION_OK) {
        char sql[48];

        /* truncation: ok, a statement name, g and a number, fits */
        snprintf(sql, sizeof(sql), "DEALLOCATE %s", ps->name);
        PQclear(PQexec(pc->c, sql));
    }
    free(ps->sql);
    free(ps);
}

static void pg_bind(store_stmt *s, int i, const struct store_arg *a)
{
    struct pg_stmt *ps = PGS(s);
    char num[40];

    if (i < 1 || i > ps->nparams)
        return; /* as SQLite: binding an index the SQL lacks does nothing */
    free(ps->vals[i - 1]);
    ps->vals[i - 1] = NULL;
    switch (a->type) {
    case STORE_ARG_TEXT:
        ps->vals[i - 1] = a->text ? xstrdup(a->text) : NULL;
        break;
    case STORE_ARG_I64:
        snprintf(num, sizeof(num), "%lld", (long long)a->i64); /* truncation: ok, a number fits */
        ps->vals[i - 1] = xstrdup(num);
        break;
    case STORE_ARG_DOUBLE:
        snprintf(num, sizeof(num), "%.17g", a->d); /* truncation: ok, a number fits */
        ps->vals[i - 1] = xstrdup(num);
        break;
    case STORE_ARG_NULL:
        break;
    }
}

/* Prepare s on the server, once per connection generation. */
static int pg_server_prepare(struct pg_stmt *ps, struct pg_conn *pc)
{
    PGresult *res;
    int ok;

    if (ps->gen == pc->gen)
        return 0;
    res = PQprepare(pc->c, ps->name, ps->sql, ps->nparams, NULL);
    ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        pg_note_error(pc, res);
    PQclear(res);
    if (ok)
        ps->gen = pc->gen;
    return ok ? 0 : -1;
}

static int pg_run(struct pg_stmt *ps)
{
    struct pg_conn *pc = PGC(ps->base.st);
    ExecStatusType status;

    if (pg_ready(ps->base.st) != 0 || pg_server_prepare(ps, pc) != 0)
        return STORE_FAIL;
    ps->res =
        PQexecPrepared(pc->c, ps->name, ps->nparams, (const char *const *)ps->vals, NULL, NULL, 0);
    status = PQresultStatus(ps->res);
    if (status == PGRES_TUPLES_OK) {
        ps->nrows = PQntuples(ps->res);
        ps->changes = atoi(PQcmdTuples(ps->res));
    } else if (status == PGRES_COMMAND_OK) {
        ps->nrows = 0;
        ps->changes = atoi(PQcmdTuples(ps->res));
    } else {
        pg_note_error(pc, ps->res);
        PQclear(ps->res);
        ps->res = NULL;
        return STORE_FAIL;
    }
    return 0;
}

static int pg_step(store_stmt *s)
{
    struct pg_stmt *ps = PGS(s);

    if (!ps->res && pg_run(ps) != 0)
        return STORE_FAIL;
    if (ps->row + 1 < ps->nrows) {
        ps->row++;
        return STORE_ROW;
    }
    ps->row = ps->nrows;
    return STORE_DONE;
}

static int pg_changes(store_stmt *s)
{
    return PGS(s)->changes;
}

static int pg_col_null(store_stmt *s, int i)
{
    struct pg_stmt *ps = PGS(s);

    return !ps->res || ps->row < 0 || ps->row >= ps->nrows || i >= PQnfields(ps->res) ||
           PQgetisnull(ps->res, ps->row, i);
}

static const char *pg_col_text(store_stmt *s, int i)
{
    struct pg_stmt *ps = PGS(s);

    return pg_col_null(s, i) ? NULL : PQgetvalue(ps->res, ps->row, i);
}

/* Integers arrive as text; a boolean as t/f (an SQL comparison's value). */
static int64_t pg_col_i64(store_stmt *s, int i)
{
    const char *t = pg_col_text(s, i);

    if (!t)
        return 0;
    if (!strcmp(t, "t"))
        return 1;
    if (!strcmp(t, "f"))
        return 0;
    return strtoll(t, NULL, 10);
}

static double pg_col_double(store_stmt *s, int i)
{
    const char *t = pg_col_text(s, i);

    return t ? strtod(t, NULL) : 0.0;
}

static int pg_col_count(store_stmt *s)
{
    struct pg_stmt *ps = PGS(s);

    return ps->res ? PQnfields(ps->res) : 0;
}

static const char *pg_col_name(store_stmt *s, int i)
{
    struct pg_stmt *ps = PGS(s);

    return ps->res ? PQfname(ps->res, i) : NULL;
}

/* By the column's type (oids of pg_type: int2/4/8, float4/8, numeric). */
static enum store_arg_type pg_col_type(store_stmt *s, int i)
{
    struct pg_stmt *ps = PGS(s);

    if (pg_col_null(s, i))
        return STORE_ARG_NULL;
    switch (PQftype(ps->res, i)) {
    case 20:
    case 21:
    case 23:
        return STORE_ARG_I64;
    case 700:
    case 701:
    case 1700:
        return STORE_ARG_DOUBLE;
    default:
        return STORE_ARG_TEXT;
    }
}

static int pg_migrate_lock(store *st, int lock)
{
    return pg_exec(st, lock ? "SELECT pg_advisory_lock(" PG_MIGRATE_LOCK ")"
                            : "SELECT pg_advisory_unlock(" PG_MIGRATE_LOCK ")");
}

const struct store_backend store_backend_pg = {
    .dialect = STORE_PG,
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .bind = pg_bind,
    .step = pg_step,
    .reset = pg_reset,
    .changes = pg_changes,
    .col_null = pg_col_null,
    .col_i64 = pg_col_i64,
    .col_double = pg_col_double,
    .col_text = pg_col_text,
    .col_count = pg_col_count,
    .col_name = pg_col_name,
    .col_type = pg_col_type,
    .error = pg_error,
    .begin_write = "BEGIN; SELECT pg_advisory_xact_lock(" PG_WRITE_LOCK ")",
    .begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    .query_only = "SET default_transaction_read_only = on",
    .migrate_lock = pg_migrate_lock,
    .wake_listen = pg_wake_listen,
    .wake_notify = pg_wake_notify,
    .wake_fd = pg_wake_fd,
    .wake_drain = pg_wake_drain,
    .reconnect = pg_ready,
    .migrations = store_migrations_pg,
    .migrations_count = &store_migrations_pg_count,
};
