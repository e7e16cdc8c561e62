/*
 * forge_notify.c - goald's comment on an issue that became a goal: one
 * comment, posted when the goal starts and edited in place as it moves
 * (needs a human: the question and the answers; the pull request; the
 * end), and "Closes #N" in the pull request's body (see forge_goals.h).
 */
#include "lifecycle/forge_goals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/artifact.h"
#include "store/escalation.h"
#include "store/forge.h"
#include "store/goal.h"
#include "store/status.h"
#include "util/config.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define COMMENT_CAP (64 * 1024)

/* Each line of text quoted ("> ") into sb. */
static int add_quoted(strbuf *sb, const char *text)
{
    /* a model's words on a public page: secrets masked as in any tool
     * result, each line cut on a character boundary */
    char *red = redact_str(text ? text : "", NULL);
    const char *p = red;
    int rc = 0;

    while (rc == 0 && *p) {
        size_t len = strcspn(p, "\n");
        char *line = utf8_cap_dup(p, len, 2000);
        rc = strbuf_addf(sb, "> %s\n", line);
        free(line);
        p += len;
        if (*p == '\n')
            p++;
    }
    free(red);
    return rc;
}

/* store_escalation_each_open_of_goal callback: the question, quoted. */
static int add_escalation(const struct store_escalation *e, void *ctx)
{
    strbuf *sb = ctx;
    int rc;

    if ((rc = strbuf_addf(sb, "\n**goald needs a human** (%s%s%s):\n\n", e->type,
                          e->item_key ? ", item " : "", e->item_key ? e->item_key : "")) != 0)
        return rc;
    return add_quoted(sb, e->question && *e->question ? e->question : "(no question given)");
}

/* store_artifact_each callback: the pull request's link. */
static int add_pr(const struct store_artifact *a, void *ctx)
{
    return strbuf_addf(ctx, "\nPull request: %s\n", a->url ? a->url : (a->ref ? a->ref : ""));
}

/* The comment's text for goal g into sb. */
static int status_body(strbuf *sb, store *st, const struct goal *g)
{
    int rc, open = 0;

    const char *page = config_str(CFG_HTTP_PUBLIC_URL);
    size_t pn = page ? strlen(page) : 0;

    while (pn > 0 && page[pn - 1] == '/')
        pn--;
    if ((rc = strbuf_addf(sb, "goald took this issue up as goal `%s` (status: **%s**).\n", g->id,
                          g->status)) != 0 ||
        (pn &&
         (rc = strbuf_addf(sb, "\nIts page: %.*s/#/goals/%s\n", (int)pn, page, g->id)) != 0) ||
        (rc = store_escalation_count_open(st, g->id, &open)) != 0 ||
        (rc = store_escalation_each_open_of_goal(st, g->id, add_escalation, sb)) != 0)
        return rc;
    if (open &&
        (rc = strbuf_addf(sb, "\nAnswer with a comment that starts with `/goald retry [hint]`, "
                              "`/goald answer TEXT` or `/goald skip` (only people who may push "
                              "to this repository are heard).\n")) != 0)
        return rc;
    if ((rc = store_artifact_each(st, g->id, "pull_request", add_pr, sb)) != 0)
        return rc;
    if (goal_status_ended(goal_status_of(g->status)))
        rc = strbuf_addf(sb, "\nThe goal ended: **%s**.\n", g->status);
    return rc;
}

int forge_notify_goal(store *st, const struct forge_trigger *t, const char *goal_id, int64_t number)
{
    char sha[HASH_HEX_SIZE] = "", old[HASH_HEX_SIZE] = "";
    struct forge_failure fl = {{0}, 0};
    struct goal *g = NULL;
    int64_t cid = 0;
    strbuf sb;
    int rc, found = 0;

    strbuf_init(&sb, COMMENT_CAP);
    if ((rc = store_goal_get(st, goal_id, &g)) != 0 || (rc = status_body(&sb, st, g)) != 0)
        goto out;
    hash_sha256_hex(sha, strbuf_cstr(&sb), sb.len);
    if ((rc = store_forge_comment_get(st, t->f.base_url, t->repo_key, number, "status", &cid, old,
                                      &found)) != 0)
        goto out;
    /* the issue knows already: only the stamp moves */
    if (!(found && !strcmp(old, sha)) &&
        (rc = vcs_forge_comment_put(&cid, &fl, &t->f, number, strbuf_cstr(&sb))) != 0)
        goto out;
    /* stamped with the goal's own updated_at as it was read: a change
     * the goal makes while the comment is written is told at the next
     * poll (store_forge_links_to_tell compares the two) */
    rc = store_forge_comment_set(st, t->f.base_url, t->repo_key, number, "status", cid, sha,
                                 g->updated_at);
out:
    store_goal_free(g);
    strbuf_release(&sb);
    return rc;
}

int forge_pr_body_closes(strbuf *body, store *st, const char *goal_id)
{
    struct store_forge_link l;
    int rc, found = 0;

    if ((rc = store_forge_link_of_goal(st, goal_id, &l, &found)) != 0 || !found ||
        strcmp(l.source, "issue") != 0)
        return rc; /* a review's follow-up: its pull request is open already */
    return strbuf_addf(body, "\n\nCloses #%lld\n", (long long)l.number);
}
