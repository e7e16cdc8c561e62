/*
 * plan.c - stage 3's work items, a DAG: the model's plan checked, stored
 * and followed (the unit that asks the model for it: plan_stage.c).
 *
 * Read top to bottom: plan_parse() checks the model's answer completely
 * before anything is stored (each item's required fields, its optional
 * ones, its dependencies; then unique keys, known dependencies and no
 * cycle); plan_store() inserts every item, then maps dependency keys to
 * ids, in one transaction; plan_promote_ready() moves the queued items
 * whose dependencies are met to ready.  The work lane then executes the
 * ready items (select.c, claim.c).
 */
#include "lifecycle/plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "store/item.h"
#include "util/err.h"
#include "util/id.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

static const char *const item_types[] = {"code", "test", "doc", "refactor", "analysis", NULL};
static const char *const efforts[] = {"S", "M", "L", "XL", NULL};

static int in_list(const char *s, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(*l, s))
            return 1;
    return 0;
}

void plan_release(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct plan_item *it = &p->items[i];
        free(it->key);
        free(it->title);
        free(it->description);
        free(it->type);
        free(it->effort);
        for (size_t j = 0; j < it->ndeps; j++)
            free(it->deps[j]);
        free(it->deps);
        free(it->criteria);
    }
    free(p->items);
    p->items = NULL;
    p->n = 0;
}

static int find_key(const struct plan *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->items[i].key, key))
            return (int)i;
    return -1;
}

static int req_string(const cJSON *o, const char *k, int i, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    if (!v)
        return err_set(ERR_INVALID, "work_items[%d].%s: missing", i, k);
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return err_set(ERR_INVALID, "work_items[%d].%s: expected a non-empty string", i, k);
    *out = v->valuestring;
    return 0;
}

/* DFS over the dependency graph; on a back edge write the cycle path. */
static int dfs(const struct plan *p, int u, int *color, int *stack, int depth, strbuf *path)
{
    color[u] = 1;
    stack[depth] = u;
    for (size_t j = 0; j < p->items[u].ndeps; j++) {
        int v = find_key(p, p->items[u].deps[j]);
        if (color[v] == 1) {
            int start = 0;
            while (stack[start] != v)
                start++;
            for (int k = start; k <= depth; k++)
                strbuf_addf_cut(path, "%s -> ", p->items[stack[k]].key);
            strbuf_adds_cut(path, p->items[v].key);
            return 1;
        }
        if (color[v] == 0 && dfs(p, v, color, stack, depth + 1, path))
            return 1;
    }
    color[u] = 2;
    return 0;
}

/* The required strings of work_items[i], checked against their lists. */
static int parse_required(struct plan_item *it, const cJSON *o, int i)
{
    const char *key = NULL, *title = NULL, *type = NULL, *effort = NULL;
    int rc;

    if ((rc = req_string(o, "key", i, &key)) || (rc = req_string(o, "title", i, &title)) ||
        (rc = req_string(o, "type", i, &type)) || (rc = req_string(o, "effort", i, &effort)))
        return rc;
    if (!in_list(type, item_types))
        return err_set(ERR_INVALID,
                       "work_items[%d].type: \"%s\" is not one of code, test, doc, refactor, "
                       "analysis",
                       i, type);
    if (!in_list(effort, efforts))
        return err_set(ERR_INVALID, "work_items[%d].effort: \"%s\" is not one of S, M, L, XL", i,
                       effort);
    it->key = xstrdup(key);
    it->title = xstrdup(title);
    it->type = xstrdup(type);
    it->effort = xstrdup(effort);
    return 0;
}

/* description (""), priority (50) and critical (true) of work_items[i]. */
static int parse_optional(struct plan_item *it, const cJSON *o, int i)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "description");

    if (v && !cJSON_IsString(v))
        return err_set(ERR_INVALID, "work_items[%d].description: expected a string", i);
    it->description = xstrdup(v ? v->valuestring : "");
    it->priority = 50;
    v = cJSON_GetObjectItemCaseSensitive(o, "priority");
    if (v) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 100 ||
            v->valuedouble != floor(v->valuedouble))
            return err_set(ERR_INVALID, "work_items[%d].priority: expected an integer 0-100", i);
        it->priority = (int)v->valuedouble;
    }
    it->critical = 1;
    v = cJSON_GetObjectItemCaseSensitive(o, "critical");
    if (v) {
        if (!cJSON_IsBool(v))
            return err_set(ERR_INVALID, "work_items[%d].critical: expected true or false", i);
        it->critical = cJSON_IsTrue(v);
    }
    return 0;
}

/* depends_on of work_items[i]: an array of keys (checked later). */
static int parse_deps(struct plan_item *it, const cJSON *o, int i)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "depends_on"), *d;
    int nd = 0;

    if (!v)
        return 0;
    if (!cJSON_IsArray(v))
        return err_set(ERR_INVALID, "work_items[%d].depends_on: expected an array of keys", i);
    it->deps = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(char *));
    cJSON_ArrayForEach(d, v)
    {
        if (!cJSON_IsString(d) || !d->valuestring[0])
            return err_set(ERR_INVALID, "work_items[%d].depends_on[%d]: expected a key", i, nd);
        it->deps[it->ndeps++] = xstrdup(d->valuestring);
        nd++;
    }
    return 0;
}

/* criteria of work_items[i]: an array of non-negative integers (their
 * range is checked against the goal by plan_check_criteria()). */
static int parse_criteria(struct plan_item *it, const cJSON *o, int i)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "criteria"), *c;

    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        return err_set(ERR_INVALID, "work_items[%d].criteria: expected an array of indexes", i);
    it->has_criteria = 1;
    it->criteria = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(int));
    cJSON_ArrayForEach(c, v)
    {
        if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 100000 ||
            c->valuedouble != floor(c->valuedouble))
            return err_set(ERR_INVALID,
                           "work_items[%d].criteria[%zu]: expected the index of a success "
                           "criterion",
                           i, it->ncriteria);
        it->criteria[it->ncriteria++] = (int)c->valuedouble;
    }
    return 0;
}

int plan_check_criteria(const struct plan *p, const struct criteria *crit)
{
    int n = (int)crit->n;

    for (size_t a = 0; a < p->n; a++)
        for (size_t k = 0; k < p->items[a].ncriteria; k++)
            if (p->items[a].criteria[k] >= n)
                return err_set(ERR_INVALID,
                               "%s: criteria: %d is not the index of a success criterion "
                               "(there are %d, numbered from 0)",
                               p->items[a].key, p->items[a].criteria[k], n);
    for (int c = 0; c < n; c++) {
        int served = 0;
        for (size_t a = 0; a < p->n && !served; a++) {
            const struct plan_item *it = &p->items[a];
            served = !it->has_criteria;
            for (size_t k = 0; k < it->ncriteria; k++)
                served |= it->criteria[k] == c;
        }
        if (!served)
            return err_set(ERR_INVALID, "success criterion %d (\"%s\") is served by no item", c,
                           crit->text[c]);
    }
    return 0;
}

int plan_item_serves(const struct work_item *wi, int index)
{
    cJSON *a = wi->criteria ? cJSON_Parse(wi->criteria) : NULL;
    const cJSON *c;
    int serves = !cJSON_IsArray(a);

    cJSON_ArrayForEach(c, a) if (cJSON_IsNumber(c) && (int)c->valuedouble == index) serves = 1;
    cJSON_Delete(a);
    return serves;
}

/* Keys are unique; dependencies name other existing items, once. */
static int check_keys(const struct plan *p)
{
    for (size_t a = 0; a < p->n; a++)
        for (size_t b = 0; b < a; b++)
            if (!strcmp(p->items[a].key, p->items[b].key))
                return err_set(ERR_INVALID, "work_items[%zu].key: duplicate key \"%s\"", a,
                               p->items[a].key);
    for (size_t a = 0; a < p->n; a++) {
        const struct plan_item *it = &p->items[a];
        for (size_t j = 0; j < it->ndeps; j++) {
            if (!strcmp(it->deps[j], it->key))
                return err_set(ERR_INVALID, "%s: depends on itself", it->key);
            if (find_key(p, it->deps[j]) < 0)
                return err_set(ERR_INVALID, "%s: depends on unknown item \"%s\"", it->key,
                               it->deps[j]);
            for (size_t k = 0; k < j; k++)
                if (!strcmp(it->deps[k], it->deps[j]))
                    return err_set(ERR_INVALID, "%s: depends on \"%s\" twice", it->key,
                                   it->deps[j]);
        }
    }
    return 0;
}

/* The dependency graph has no cycle (the message names one). */
static int check_cycles(const struct plan *p)
{
    int *color = xcalloc(p->n, sizeof(int));
    int *stack = xcalloc(p->n + 1, sizeof(int));
    strbuf path;
    int rc = 0;

    strbuf_init(&path, 8192); /* named in the error: cut at its cap */
    for (size_t u = 0; u < p->n && !rc; u++)
        if (color[u] == 0 && dfs(p, (int)u, color, stack, 0, &path))
            rc = err_set(ERR_INVALID, "cycle: %s", strbuf_cstr(&path));
    strbuf_release(&path);
    free(color);
    free(stack);
    return rc;
}

int plan_parse(struct plan *out, const cJSON *json, int max_items)
{
    const cJSON *arr = cJSON_IsObject(json) ? cJSON_GetObjectItemCaseSensitive(json, "work_items")
                                            : NULL;
    const cJSON *o;
    struct plan p = {0};
    int n, i = 0, rc = 0;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsArray(arr))
        return err_set(ERR_INVALID, "expected an object with a \"work_items\" array");
    n = cJSON_GetArraySize(arr);
    if (n == 0)
        return err_set(ERR_INVALID, "work_items: the plan has no items");
    if (n > max_items)
        return err_set(ERR_INVALID, "work_items: %d items, more than the maximum of %d", n,
                       max_items);
    p.items = xcalloc((size_t)n, sizeof(*p.items));
    cJSON_ArrayForEach(o, arr)
    {
        struct plan_item *it = &p.items[i];

        p.n = (size_t)i + 1;
        if (!cJSON_IsObject(o)) {
            rc = err_set(ERR_INVALID, "work_items[%d]: expected an object", i);
            goto fail;
        }
        if ((rc = parse_required(it, o, i)) || (rc = parse_optional(it, o, i)) ||
            (rc = parse_deps(it, o, i)) || (rc = parse_criteria(it, o, i)))
            goto fail;
        i++;
    }
    if ((rc = check_keys(&p)) || (rc = check_cycles(&p)))
        goto fail;
    *out = p;
    return 0;
fail:
    plan_release(&p);
    return rc;
}

/* The item's criteria as a JSON array in buf (cut at a whole index). */
static char *criteria_json(char *buf, size_t size, const struct plan_item *it)
{
    size_t len = 1;

    buf[0] = '[';
    buf[1] = '\0';
    for (size_t k = 0; k < it->ncriteria; k++) {
        int n = snprintf(buf + len, size - len - 1, "%s%d", k ? "," : "", it->criteria[k]);
        if (n < 0 || (size_t)n >= size - len - 1)
            break;
        len += (size_t)n;
    }
    buf[len++] = ']';
    buf[len] = '\0';
    return buf;
}

int plan_store(store *st, const char *goal_id, const struct plan *p)
{
    char (*ids)[ID_SIZE];
    cJSON *payload = NULL, *keys;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    ids = xcalloc(p->n, ID_SIZE);
    for (size_t i = 0; i < p->n; i++) {
        const struct plan_item *it = &p->items[i];
        struct work_item wi;
        char crit[8192];

        memset(&wi, 0, sizeof(wi));
        if ((rc = id_new(ids[i])) != 0)
            goto out;
        memcpy(wi.id, ids[i], ID_SIZE);
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(wi.goal_id, sizeof(wi.goal_id), "%s", goal_id);
        wi.key = it->key;
        wi.title = it->title;
        wi.description = it->description;
        wi.type = it->type;
        wi.effort = it->effort;
        wi.priority = it->priority;
        wi.critical = it->critical;
        wi.status = it->ndeps ? "queued" : "ready";
        wi.verified = -1;
        wi.criteria = it->has_criteria ? criteria_json(crit, sizeof(crit), it) : NULL;
        wi.position = (int)i + 1;
        if ((rc = store_item_insert(st, &wi)) != 0)
            goto out;
    }
    /* every item exists: now the edges, by id */
    for (size_t i = 0; i < p->n; i++)
        for (size_t j = 0; j < p->items[i].ndeps; j++)
            if ((rc = store_item_dep_add(st, ids[i], ids[find_key(p, p->items[i].deps[j])],
                                         NULL)) != 0)
                goto out;
    payload = cJSON_CreateObject();
    cJSON_AddNumberToObject(payload, "items", (double)p->n);
    keys = cJSON_AddArrayToObject(payload, "keys");
    for (size_t i = 0; i < p->n; i++)
        cJSON_AddItemToArray(keys, cJSON_CreateString(p->items[i].key));
    rc = store_event_add(st, goal_id, NULL, NULL, "plan.created", payload, NULL);
out:
    rc = store_tx_end(st, rc);
    cJSON_Delete(payload);
    free(ids);
    return rc;
}

int plan_promote_ready(store *st, const char *goal_id, int *n)
{
    char (*ids)[ID_SIZE] = NULL;
    size_t cnt = 0;
    int rc;

    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_item_ids_promotable(st, goal_id, &ids, &cnt)) != 0)
        goto out;
    for (size_t i = 0; i < cnt; i++)
        if ((rc = transition_apply(st, ENTITY_ITEM, ids[i], "ready", "queued", NULL)) != 0)
            goto out;
out:
    rc = store_tx_end(st, rc);
    if (rc == 0 && n)
        *n = (int)cnt;
    free(ids);
    return rc;
}
