/*
 * copy.h - copying a goald database into another one (`goald migrate
 * --to`): a SQLite file into an empty PostgreSQL database of the same
 * schema version.
 */
#ifndef GOALD_STORE_COPY_H
#define GOALD_STORE_COPY_H

#include <stdint.h>

#include "store/store.h"

#define STORE_COPY_MAX_TABLES 64

/* One table copied: its name and how many rows it holds on both sides. */
struct store_copy_table {
    char name[64];
    int64_t rows;
};

/* Copy every goald table of src (a SQLite store: the tables of its schema
 * but schema_migrations, the daemon's heartbeat and SQLite's own) into dst,
 * in the source's creation order (a table after those it refers to) and
 * each table's rows in their insertion order, every value with its type;
 * all in one transaction of dst, which then counts each table's rows and
 * commits only when every count equals the source's.  On PostgreSQL the
 * id sequences continue after the copied ids, and the planner's
 * statistics are gathered.
 *
 * out[0..*n) (at most STORE_COPY_MAX_TABLES) names each table with its
 * count.  Errors: ERR_INVALID when src is not SQLite, or dst holds any
 * row (the message names the table; nothing is written), ERR_DB on a
 * failed statement or a count that differs (everything rolled back). */
int store_copy_all(store *dst, store *src, struct store_copy_table out[STORE_COPY_MAX_TABLES],
                   int *n);

#endif
