#include "store/context_pack.h"

#include <stddef.h>

#include "store/internal.h"

int store_context_pack_insert(store *st, const char *goal_id, const char *item_id,
                              const char *run_id, const char *pack_json, int64_t now_ms)
{
    static const char sql[] = "INSERT INTO context_packs(goal_id, item_id, run_id, pack,"
                              " created_at) VALUES (?, ?, ?, ?, ?)";
    return store_exec_args(st, "context pack", NULL, sql,
                           STORE_ARGS(STORE_TEXT(goal_id), STORE_TEXT(item_id), STORE_TEXT(run_id),
                                      STORE_TEXT(pack_json), STORE_I64(now_ms)));
}

int store_context_pack_latest(store *st, const char *item_id, char **out)
{
    static const char sql[] =
        "SELECT pack FROM context_packs WHERE item_id = ? ORDER BY id DESC LIMIT 1";
    int found;

    return store_get_strdup(st, NULL, out, &found, sql, STORE_ARGS(STORE_TEXT(item_id)));
}

int store_context_pack_delete_before(store *st, int64_t cutoff_ms, int *deleted)
{
    static const char del_packs[] = "DELETE FROM context_packs WHERE created_at < ? AND id NOT IN"
                                    " (SELECT max(id) FROM context_packs GROUP BY item_id)";
    return store_exec_args(st, "retention", deleted, del_packs, STORE_ARGS(STORE_I64(cutoff_ms)));
}
