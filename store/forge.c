/*
 * forge.c - forge_links, forge_comments and forge_state (see forge.h).
 */
#include "store/forge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

int store_forge_link_insert(store *st, const struct store_forge_link *l, int64_t now_ms,
                            int *inserted)
{
    static const char ins[] =
        "INSERT INTO forge_links(forge, repo, issue_number, source, goal_id, trigger_name,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";
    int changed = 0, rc;

    *inserted = 0;
    rc = store_exec_args(st, "forge link", &changed, ins,
                         STORE_ARGS(STORE_TEXT(l->forge), STORE_TEXT(l->repo), STORE_I64(l->number),
                                    STORE_TEXT(l->source), STORE_TEXT(l->goal_id),
                                    STORE_TEXT(l->trigger), STORE_I64(now_ms)));
    if (rc == 0)
        *inserted = changed > 0;
    return rc;
}

int store_forge_link_goal(store *st, const char *forge, const char *repo, int64_t number,
                          const char *source, char goal_id[ID_SIZE], int *found)
{
    static const char q[] = "SELECT goal_id FROM forge_links WHERE forge = ? AND repo = ?"
                            " AND issue_number = ? AND source = ?";

    return store_get_text(
        st, "forge link", goal_id, ID_SIZE, found, q,
        STORE_ARGS(STORE_TEXT(forge), STORE_TEXT(repo), STORE_I64(number), STORE_TEXT(source)));
}

int store_forge_link_of_goal(store *st, const char *goal_id, struct store_forge_link *out,
                             int *found)
{
    static const char q[] =
        "SELECT forge, repo, CAST(issue_number AS TEXT), source, goal_id, trigger_name"
        " FROM forge_links WHERE goal_id = ? LIMIT 1";
    char num[32];
    struct store_text_col cols[] = {{out->forge, sizeof(out->forge)},
                                    {out->repo, sizeof(out->repo)},
                                    {num, sizeof(num)},
                                    {out->source, sizeof(out->source)},
                                    {out->goal_id, sizeof(out->goal_id)},
                                    {out->trigger, sizeof(out->trigger)}};
    int rc;

    memset(out, 0, sizeof(*out));
    rc = store_get_texts(st, "forge link", cols, 6, found, q, STORE_ARGS(STORE_TEXT(goal_id)));
    if (rc == 0 && *found)
        out->number = strtoll(num, NULL, 10);
    return rc;
}

/* store_row_fn: a forge_links row into (struct store_forge_link *)ctx. */
static void link_fill(store_stmt *s, void *ctx)
{
    struct store_forge_link *l = ctx;

    store_col_copy(l->forge, sizeof(l->forge), s, 0);
    store_col_copy(l->repo, sizeof(l->repo), s, 1);
    l->number = store_col_i64(s, 2);
    store_col_copy(l->source, sizeof(l->source), s, 3);
    store_col_copy(l->goal_id, sizeof(l->goal_id), s, 4);
    store_col_copy(l->trigger, sizeof(l->trigger), s, 5);
}

int store_forge_links_to_tell(store *st, const char *trigger, struct store_forge_link *rows,
                              int max, int *n)
{
    static const char q[] =
        "SELECT l.forge, l.repo, l.issue_number, l.source, l.goal_id, l.trigger_name"
        " FROM forge_links l JOIN goals g ON g.id = l.goal_id LEFT JOIN forge_comments c"
        " ON c.forge = l.forge AND c.repo = l.repo AND c.issue_number = l.issue_number"
        " AND c.kind = 'status' WHERE l.trigger_name = ? AND l.source = 'issue'"
        " AND (c.comment_id IS NULL OR g.status NOT IN ('completed', 'cancelled')"
        " OR g.updated_at > c.updated_at) ORDER BY l.created_at LIMIT 256";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, link_fill), q,
                           STORE_ARGS(STORE_TEXT(trigger)));
}

/* store_row_fn: link_fill, then the pull request's number (column 6). */
static void link_pr_fill(store_stmt *s, void *ctx)
{
    struct store_forge_link *l = ctx;

    link_fill(s, ctx);
    l->pr_number = strtoll(store_col_raw(s, 6) ? store_col_raw(s, 6) + 1 : "0", NULL, 10);
}

int store_forge_links_with_pr(store *st, const char *trigger, struct store_forge_link *rows,
                              int max, int *n)
{
    static const char q[] =
        "SELECT l.forge, l.repo, l.issue_number, l.source, l.goal_id, l.trigger_name, a.ref"
        " FROM forge_links l JOIN goals g ON g.id = l.goal_id JOIN artifacts a"
        " ON a.goal_id = l.goal_id AND a.type = 'pull_request' AND a.ref LIKE '#%'"
        " WHERE l.trigger_name = ? AND l.source = 'issue' AND g.status = 'completed'"
        " ORDER BY l.created_at DESC LIMIT 64";

    return store_rows_fill(st, rows, max, n, STORE_ROW_SHAPE(*rows, link_pr_fill), q,
                           STORE_ARGS(STORE_TEXT(trigger)));
}

int store_forge_branch_busy(store *st, const char *repo, const char *branch, int *busy)
{
    static const char q[] = "SELECT count(*) FROM goals WHERE repo = ? AND branch = ?"
                            " AND status IN ('queued', 'active', 'blocked')";
    int64_t c = 0;
    int rc;

    rc = store_count(st, "forge branch", &c, q, STORE_ARGS(STORE_TEXT(repo), STORE_TEXT(branch)));
    *busy = rc == 0 && c > 0;
    return rc;
}

int store_forge_comment_get(store *st, const char *forge, const char *repo, int64_t number,
                            const char *kind, int64_t *comment_id, char sha[65], int *found)
{
    static const char q[] =
        "SELECT CAST(comment_id AS TEXT), body_sha FROM forge_comments WHERE forge = ?"
        " AND repo = ? AND issue_number = ? AND kind = ?";
    char id[32];
    struct store_text_col cols[] = {{id, sizeof(id)}, {sha, 65}};
    int rc;

    rc = store_get_texts(
        st, "forge comment", cols, 2, found, q,
        STORE_ARGS(STORE_TEXT(forge), STORE_TEXT(repo), STORE_I64(number), STORE_TEXT(kind)));
    *comment_id = rc == 0 && *found ? strtoll(id, NULL, 10) : 0;
    return rc;
}

int store_forge_comment_set(store *st, const char *forge, const char *repo, int64_t number,
                            const char *kind, int64_t comment_id, const char *sha, int64_t told_at)
{
    static const char up[] =
        "INSERT INTO forge_comments(forge, repo, issue_number, kind, comment_id, body_sha,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (forge, repo, issue_number,"
        " kind) DO UPDATE SET comment_id = excluded.comment_id, body_sha = excluded.body_sha,"
        " updated_at = excluded.updated_at";

    return store_exec_args(st, "forge comment", NULL, up,
                           STORE_ARGS(STORE_TEXT(forge), STORE_TEXT(repo), STORE_I64(number),
                                      STORE_TEXT(kind), STORE_I64(comment_id), STORE_TEXT(sha),
                                      STORE_I64(told_at)));
}

int store_forge_state_get(store *st, const char *key, char *out, size_t n, int *found)
{
    static const char q[] = "SELECT value FROM forge_state WHERE key = ?";

    return store_get_text(st, "forge state", out, n, found, q, STORE_ARGS(STORE_TEXT(key)));
}

int store_forge_state_set(store *st, const char *key, const char *value, int64_t now_ms)
{
    static const char up[] =
        "INSERT INTO forge_state(key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at";

    return store_exec_args(st, "forge state", NULL, up,
                           STORE_ARGS(STORE_TEXT(key), STORE_TEXT(value), STORE_I64(now_ms)));
}
