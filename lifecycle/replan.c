/*
 * replan.c - back to planning once: new work items for the success
 * criteria the goal-level evaluation found unmet and no gate or test
 * proves (goal_evaluate.c).
 *
 * The request is the plan stage's, narrowed: the goal, all its criteria
 * by index, the items already done (their commits stay: the new items
 * start from the goal's head), and the unmet criteria with the
 * evaluation's words.  The answer must serve every unmet criterion and
 * only those; a key the goal already has is renamed (key-2, key-3...)
 * with the dependencies that name it.  The items, the "replanned"
 * decision (it is never done twice) and the event are one transaction.
 */
#include "lifecycle/replan.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "store/escalation.h"
#include "store/event.h"
#include "store/item.h"
#include "store/status.h"
#include "util/config.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

#define KEYS_MAX 256

struct done {
    strbuf text;
    char *keys[KEYS_MAX];
    int nkeys;
};

static int done_cb(const struct work_item *wi, void *ctx)
{
    struct done *d = ctx;

    if (d->nkeys < KEYS_MAX)
        d->keys[d->nkeys++] = xstrdup(wi->key);
    if (item_status_of(wi->status) == ITEM_DONE)
        strbuf_addf_cut(&d->text, "- %s %s: %s\n", wi->key, wi->title,
                        wi->summary && *wi->summary ? wi->summary : "(no summary)");
    return 0;
}

static int key_taken(const struct done *d, const struct plan *p, size_t self, const char *k)
{
    for (int i = 0; i < d->nkeys; i++)
        if (!strcmp(d->keys[i], k))
            return 1;
    for (size_t i = 0; i < p->n; i++)
        if (i != self && !strcmp(p->items[i].key, k))
            return 1;
    return 0;
}

/* Rename each new key the goal already has, and the dependencies on it. */
static void rename_keys(struct plan *p, const struct done *d)
{
    for (size_t i = 0; i < p->n; i++) {
        char *old = p->items[i].key, buf[300];
        int s = 2;
        if (!key_taken(d, p, i, old))
            continue;
        do
            /* truncation: ok, at most 280 bytes and a number: fits 300 */
            snprintf(buf, sizeof(buf), "%.280s-%d", old, s++);
        while (key_taken(d, p, i, buf));
        for (size_t a = 0; a < p->n; a++)
            for (size_t b = 0; b < p->items[a].ndeps; b++)
                if (!strcmp(p->items[a].deps[b], old)) {
                    free(p->items[a].deps[b]);
                    p->items[a].deps[b] = xstrdup(buf);
                }
        p->items[i].key = xstrdup(buf);
        free(old);
    }
}

static int in_set(const int *set, size_t n, int k)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == k)
            return 1;
    return 0;
}

/* Every item serves only unmet criteria (and names them), and every
 * unmet criterion is served; ERR_INVALID naming the first breach. */
static int check_serves(const struct plan *p, const int *unmet, size_t n)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct plan_item *it = &p->items[i];
        if (!it->has_criteria || it->ncriteria == 0)
            return err_set(ERR_INVALID, "work_items[%zu].criteria: name the unmet criteria it "
                                        "serves",
                           i);
        for (size_t c = 0; c < it->ncriteria; c++)
            if (!in_set(unmet, n, it->criteria[c]))
                return err_set(ERR_INVALID, "work_items[%zu].criteria: %d is not an unmet "
                                            "criterion",
                               i, it->criteria[c]);
    }
    for (size_t u = 0; u < n; u++) {
        int served = 0;
        for (size_t i = 0; i < p->n && !served; i++)
            for (size_t c = 0; c < p->items[i].ncriteria; c++)
                served |= p->items[i].criteria[c] == unmet[u];
        if (!served)
            return err_set(ERR_INVALID, "criterion %d is served by no new item", unmet[u]);
    }
    return 0;
}

static void replan_prompt(strbuf *u, struct job_ctx *j, const struct done *d, const int *unmet,
                          size_t n, const cJSON *reasons)
{
    const struct goal *g = j->goal;

    strbuf_addf_cut(u, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(u, "Description: %s\n", g->description);
    strbuf_adds_cut(u, "Success criteria (by index, for each item's \"criteria\"):\n");
    for (size_t k = 0; k < j->criteria->n; k++)
        strbuf_addf_cut(u, "%zu. %s\n", k, j->criteria->text[k]);
    strbuf_addf_cut(u, "This is a follow-up plan. These items are done; their commits are on "
                       "the goal's branch and new items start from them:\n%s",
                    strbuf_cstr(&d->text));
    strbuf_adds_cut(u, "The goal's evaluation found these criteria unmet, and no gate or test "
                       "proves them:\n");
    for (int i = 0; i < cJSON_GetArraySize(reasons); i++) {
        const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(reasons, i));
        if (r && strstr(r, "is unmet"))
            strbuf_addf_cut(u, "- %s\n", r);
    }
    strbuf_adds_cut(u, "Plan new work items for these criteria only: each item's \"criteria\" "
                       "names only the indexes ");
    for (size_t i = 0; i < n; i++)
        strbuf_addf_cut(u, "%s%d", i ? ", " : "", unmet[i]);
    strbuf_addf_cut(u, ", and depends_on names only new items. At most %lld work items.\n",
                    (long long)config_int(CFG_PLAN_MAX_ITEMS));
}

/* The plan, the decision and the event in one transaction. */
static int replan_store(struct job_ctx *j, const struct plan *p, const int *unmet, size_t n)
{
    cJSON *d = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(d, "criteria");
    cJSON *keys = cJSON_AddArrayToObject(d, "keys");
    int rc;

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(unmet[i]));
    for (size_t i = 0; i < p->n; i++)
        cJSON_AddItemToArray(keys, cJSON_CreateString(p->items[i].key));
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = plan_store(j->st, j->goal->id, p)) == 0 &&
        (rc = store_decision_add(j->st, &(struct store_decision_new){.goal_id = j->goal->id,
                                                                     .run_id = j->claim.run_id,
                                                                     .kind = "replanned",
                                                                     .data = d})) == 0)
        rc = store_event_add(j->st, j->goal->id, NULL, j->claim.run_id, "goal.replanned", d,
                             NULL);
    rc = store_tx_end(j->st, rc);
out:
    cJSON_Delete(d);
    return rc;
}

int replan_for_criteria(int *planned, struct job_ctx *j, const int *unmet, size_t n,
                        const cJSON *reasons)
{
    struct done d;
    struct plan p = {0};
    strbuf u;
    cJSON *answer = NULL, *f;
    const char *cls = NULL;
    int rc = 0;

    *planned = 0;
    memset(&d, 0, sizeof(d));
    strbuf_init(&d.text, 32 * 1024);
    strbuf_init(&u, 1 << 20);
    if (store_item_each(j->st, j->goal->id, done_cb, &d) != 0) {
        rc = job_fail(j, "internal", "%s", err_last());
        goto out;
    }
    replan_prompt(&u, j, &d, unmet, n, reasons);
    if (job_try_json(j, "plan", prompt_plan, strbuf_cstr(&u), schema_plan, &answer, &cls) != 0) {
        if (!cls) {
            rc = ERR_FAIL; /* no longer live */
            goto out;
        }
    } else if (plan_parse(&p, answer, (int)config_int(CFG_PLAN_MAX_ITEMS)) == 0 &&
               check_serves(&p, unmet, n) == 0) {
        rename_keys(&p, &d);
        if (replan_store(j, &p, unmet, n) != 0) {
            rc = job_fail(j, "internal", "follow-up plan not stored: %s", err_last());
            goto out;
        }
        *planned = 1;
        strbuf_addf_cut(&j->summary, "%zu follow-up item%s for unmet criteria", p.n,
                        p.n == 1 ? "" : "s");
        goto out;
    }
    f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "error", err_last());
    job_event_or_warn(j, "goal.replan_failed", f);
    cJSON_Delete(f);
    err_clear();
out:
    for (int i = 0; i < d.nkeys; i++)
        free(d.keys[i]);
    strbuf_release(&d.text);
    strbuf_release(&u);
    plan_release(&p);
    cJSON_Delete(answer);
    return rc;
}
