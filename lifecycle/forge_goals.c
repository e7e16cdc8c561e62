/*
 * forge_goals.c - one labelled issue becomes one goal (see
 * forge_goals.h).
 */
#include "lifecycle/forge_goals.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/intake.h"
#include "store/forge.h"
#include "store/goal.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

/* The link row of (number, source) under t pointing at goal_id. */
static int link_of(struct store_forge_link *l, const struct forge_trigger *t, int64_t number,
                   const char *source, const char *goal_id)
{
    memset(l, 0, sizeof(*l));
    l->number = number;
    /* the link's key: cut, two forges (or two sources) would be one */
    if ((size_t)snprintf(l->forge, sizeof(l->forge), "%s", t->f.base_url) >= sizeof(l->forge) ||
        (size_t)snprintf(l->source, sizeof(l->source), "%s", source) >= sizeof(l->source))
        return err_set(ERR_INVALID, "%s: forge.base_url or the link's source too long", t->name);
    snprintf(l->repo, sizeof(l->repo), "%s", t->repo_key); /* truncation: ok, 256 bytes both */
    snprintf(l->goal_id, sizeof(l->goal_id), "%s", goal_id); /* truncation: ok, an id */
    snprintf(l->trigger, sizeof(l->trigger), "%s", t->name); /* truncation: ok, 128 bytes both */
    return 0;
}

/* The link's unique key decides: the issue may have got its goal
 * meanwhile (another node, a webhook). */
int forge_goal_submit_linked(store *st, const struct forge_trigger *t, int64_t number,
                             const char *source, struct goal *g, int *made, char goal_id[ID_SIZE])
{
    struct store_forge_link l;
    char id[ID_SIZE];
    int rc, inserted = 0;

    *made = 0;
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = intake_submit(st, g, id)) != 0)
        goto out;
    if ((rc = link_of(&l, t, number, source, id)) != 0 ||
        (rc = store_forge_link_insert(st, &l, time_now_ms(), &inserted)) != 0)
        goto out;
    if (!inserted)
        rc = ERR_AMBIGUOUS; /* rolled back below: the issue has its goal */
out:
    rc = store_tx_end(st, rc);
    if (rc == ERR_AMBIGUOUS && !inserted) {
        int found = 0;
        err_clear();
        return store_forge_link_goal(st, t->f.base_url, t->repo_key, number, source, goal_id,
                                     &found);
    }
    if (rc == 0) {
        *made = 1;
        memcpy(goal_id, id, ID_SIZE);
    }
    return rc;
}

int forge_goal_from_issue(store *st, const struct forge_trigger *t, const struct vcs_issue *issue,
                          int *made, char goal_id[ID_SIZE])
{
    char base[256], *text = NULL;
    struct goal *g = NULL;
    cJSON *doc = NULL;
    int rc, found = 0;

    *made = 0;
    goal_id[0] = '\0';
    if ((rc = store_forge_link_goal(st, t->f.base_url, t->repo_key, issue->number, "issue", goal_id,
                                    &found)) != 0 ||
        found)
        return rc;
    if ((rc = vcs_forge_default_branch(base, sizeof(base), &t->f)) != 0)
        return rc;
    doc = forge_goal_json(t, issue, base);
    text = cJSON_PrintUnformatted(doc);
    if ((rc = intake_parse(&g, text, strlen(text), "forge issue")) != 0) {
        err_wrap(rc, "%s#%lld", t->repo_key, (long long)issue->number);
        goto out;
    }
    rc = forge_goal_submit_linked(st, t, issue->number, "issue", g, made, goal_id);
out:
    store_goal_free(g);
    cJSON_free(text);
    cJSON_Delete(doc);
    return rc;
}

int forge_issue_consider(store *st, const struct forge_trigger *t, const struct vcs_issue *issue,
                         const char *labeler, int *made)
{
    char who[256], goal_id[ID_SIZE];
    int rc, found = 0, allowed = 0;

    *made = 0;
    if ((rc = store_forge_link_goal(st, t->f.base_url, t->repo_key, issue->number, "issue", goal_id,
                                    &found)) != 0 ||
        found)
        return rc;
    /* who may push is asked of this login: cut, it could be another's */
    if (labeler && (size_t)snprintf(who, sizeof(who), "%s", labeler) >= sizeof(who))
        return err_set(ERR_INVALID, "issue #%lld: the labeler's login is too long",
                       (long long)issue->number);
    if (!labeler &&
        (rc = vcs_forge_labeler(who, sizeof(who), &t->f, issue->number, t->label)) != 0)
        return rc;
    if ((rc = vcs_forge_can_push(&allowed, &t->f, who)) != 0)
        return rc;
    if (!allowed) {
        log_info("forge: %s#%lld: labelled %s by %s%s, who may not push to the repository: "
                 "ignored",
                 t->repo_key, (long long)issue->number, t->label, who[0] ? "@" : "",
                 who[0] ? who : "nobody known");
        return 0;
    }
    if ((rc = forge_goal_from_issue(st, t, issue, made, goal_id)) != 0)
        return rc;
    if (*made)
        log_info("forge: %s#%lld (labelled by @%s) became goal %.8s", t->repo_key,
                 (long long)issue->number, who, goal_id);
    return 0;
}
