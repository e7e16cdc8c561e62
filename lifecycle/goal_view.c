/*
 * goal_view.c - a goal's success criteria and elaboration parsed once
 * (goal_view.h).
 */
#include "lifecycle/goal_view.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/clone.h"

int criteria_parse(struct criteria *out, const char *json)
{
    cJSON *a = NULL;
    const cJSON *it;
    size_t k = 0;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (!json)
        return 0;
    if (!(a = cJSON_Parse(json))) {
        rc = err_set(ERR_INVALID, "not valid JSON");
        goto out;
    }
    if (!cJSON_IsArray(a)) {
        rc = err_set(ERR_INVALID, "expected an array of strings");
        goto out;
    }
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it)) {
            rc = err_set(ERR_INVALID, "element %zu: expected a string", k);
            goto out;
        }
        k++;
    }
    out->text = xcalloc(k + 1, sizeof(char *));
    cJSON_ArrayForEach(it, a) out->text[out->n++] = xstrdup(it->valuestring);
out:
    cJSON_Delete(a);
    return rc;
}

void criteria_release(struct criteria *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->text[i]);
    free(c->text);
    memset(c, 0, sizeof(*c));
}

int elaboration_parse(struct elaboration *out, const char *json)
{
    cJSON *o = NULL;
    const char *source;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (!json)
        return 0;
    if (!(o = cJSON_Parse(json))) {
        rc = err_set(ERR_INVALID, "not valid JSON");
        goto out;
    }
    if (!cJSON_IsObject(o)) {
        rc = err_set(ERR_INVALID, "expected an object");
        goto out;
    }
    out->present = 1;
    /* anything but a string says nothing of where the gates came from */
    source = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "verification_source"));
    out->verification_source = xstrdup(source);
    /* the plan prompt lists the criteria itself; where the gates came
     * from is goald's business */
    cJSON_DeleteItemFromObjectCaseSensitive(o, "success_criteria");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "verification_source");
    {
        char *t = cJSON_PrintUnformatted(o);
        out->for_plan = xstrdup(t);
        cJSON_free(t);
    }
out:
    cJSON_Delete(o);
    return rc;
}

void elaboration_release(struct elaboration *e)
{
    free(e->verification_source);
    free(e->for_plan);
    memset(e, 0, sizeof(*e));
}

int goal_view_load(struct criteria *crit, struct elaboration *elab, const struct goal *g)
{
    if (criteria_parse(crit, g->success_criteria) != 0)
        return err_wrap(ERR_INVALID, "goal %s: success_criteria", g->id);
    if (elaboration_parse(elab, g->elaboration) != 0)
        return err_wrap(ERR_INVALID, "goal %s: elaboration", g->id);
    return 0;
}

int goal_view_clone(const struct goal *g)
{
    if (!g->repo)
        return 0;
    return g->clone >= 0 ? g->clone : vcs_repo_is_shared(g->repo);
}
