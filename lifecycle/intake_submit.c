/*
 * intake_submit.c - stage 1, the store's side: a checked goal stored as
 * queued, with its branch name, its mode (clone or not, decided once) and
 * a goal.submitted event, in one transaction; and what its allowed
 * actions let a model do.  Checking the JSON is intake.c's.
 */
#include "lifecycle/intake.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "store/event.h"
#include "store/goal.h"
#include "store/store.h"
#include "util/id.h"
#include "util/xalloc.h"
#include "vcs/clone.h"
#include "vcs/repo.h"

int intake_submit(store *st, struct goal *g, char id_out[ID_SIZE])
{
    char branch[128];
    cJSON *payload = NULL;
    int rc;

    if ((rc = id_new(g->id)) != 0)
        return rc;
    /* decided once: a job need not open the repository to know */
    g->clone = g->repo ? vcs_repo_is_shared(g->repo) : 0;
    if (g->repo && !g->branch) {
        if ((rc = vcs_branch_name_for_goal(branch, sizeof(branch), g->title, g->id)) != 0)
            return rc;
        g->branch = xstrdup(branch);
    }
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_goal_insert(st, g)) != 0)
        goto out;
    payload = cJSON_CreateObject();
    cJSON_AddStringToObject(payload, "title", g->title);
    cJSON_AddNumberToObject(payload, "priority", g->priority);
    if (g->schedule)
        cJSON_AddStringToObject(payload, "schedule", g->schedule);
    if (g->repo)
        cJSON_AddStringToObject(payload, "repo", g->repo);
    rc = store_event_add(st, g->id, NULL, NULL, "goal.submitted", payload, NULL);
    cJSON_Delete(payload);
out:
    if ((rc = store_tx_end(st, rc)) == 0)
        memcpy(id_out, g->id, ID_SIZE);
    return rc;
}

int intake_actions_change(const cJSON *actions)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, actions)
    {
        const char *v = cJSON_GetStringValue(it);
        if (v && (!strcmp(v, "bash") || !strcmp(v, "write") || !strcmp(v, "edit")))
            return 1;
    }
    return 0;
}
