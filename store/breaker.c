#include "store/breaker.h"

#include "store/internal.h"

int store_breaker_not_closed_each(store *st,
                                  int (*fn)(const struct store_breaker_state *b, void *ctx),
                                  void *ctx)
{
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, "SELECT error_class, state, failures FROM breakers WHERE state <>"
                                   " 'closed' ORDER BY error_class");

    if (rc)
        return rc;
    while (sqlite3_step(s) == SQLITE_ROW) {
        struct store_breaker_state b;
        b.error_class = (const char *)sqlite3_column_text(s, 0);
        b.state = (const char *)sqlite3_column_text(s, 1);
        b.failures = sqlite3_column_int(s, 2);
        if ((rc = fn(&b, ctx)) != 0)
            break;
    }
    store_done(s);
    return rc;
}
