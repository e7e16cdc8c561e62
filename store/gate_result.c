#include "store/gate_result.h"

#include "store/internal.h"

int store_gate_result_latest_by_item_each(store *st, const char *item_id,
                                          int (*fn)(const char *name, int passed, void *ctx),
                                          void *ctx)
{
    static const char q_gates[] =
        "SELECT name, passed, ifnull(exit_code, -1) FROM gate_results WHERE id IN"
        " (SELECT max(id) FROM gate_results WHERE item_id = ? GROUP BY name) ORDER BY name";
    sqlite3_stmt *s;
    int rc = store_prepare(st, &s, q_gates);

    if (rc)
        return rc;
    store_bind_text(s, 1, item_id);
    while (sqlite3_step(s) == SQLITE_ROW)
        if ((rc = fn((const char *)sqlite3_column_text(s, 0), sqlite3_column_int(s, 1), ctx)) != 0)
            break;
    store_done(s);
    return rc;
}
