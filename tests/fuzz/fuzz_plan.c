/*
 * fuzz_plan - lifecycle/plan.c: plan_parse() on any JSON a model could
 * answer (the text is parsed with cJSON first, as the elaborate stage
 * does).
 *
 * Invariants checked: on success the plan has 1 to max items, every
 * string is set and non-empty where required, type and effort are from
 * their lists, priority is 0-100, keys are unique, every dependency names
 * another item once, and the graph has no cycle (an independent Kahn
 * topological sort); on failure the plan is empty and the message says
 * why.  The same JSON with a smaller maximum may only fail the same way
 * or for having too many items.
 */
#include <cjson/cJSON.h>

#include "lifecycle/plan.h"
#include "tests/fuzz/fuzz.h"
#include "util/err.h"

static int in(const char *s, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(*l, s))
            return 1;
    return 0;
}

static int index_of(const struct plan *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->items[i].key, key))
            return (int)i;
    return -1;
}

static void check_plan(const struct plan *p, int max)
{
    static const char *const types[] = {"code", "test", "doc", "refactor", "analysis", NULL};
    static const char *const efforts[] = {"S", "M", "L", "XL", NULL};
    size_t *indeg, *queue, head = 0, tail = 0;

    FUZZ_CHECK(p->n >= 1 && p->n <= (size_t)max && p->items, "%zu items (max %d)", p->n, max);
    for (size_t i = 0; i < p->n; i++) {
        const struct plan_item *it = &p->items[i];
        FUZZ_CHECK(it->key && *it->key && it->title && *it->title && it->description,
                   "item %zu: a string is missing", i);
        FUZZ_CHECK(it->type && in(it->type, types), "item %zu: type", i);
        FUZZ_CHECK(it->effort && in(it->effort, efforts), "item %zu: effort", i);
        FUZZ_CHECK(it->priority >= 0 && it->priority <= 100, "item %zu: priority %d", i,
                   it->priority);
        FUZZ_CHECK(it->critical == 0 || it->critical == 1, "item %zu: critical", i);
        FUZZ_CHECK(index_of(p, it->key) == (int)i, "item %zu: duplicate key %s", i, it->key);
        FUZZ_CHECK(it->ndeps == 0 || it->deps, "item %zu: deps", i);
        for (size_t j = 0; j < it->ndeps; j++) {
            int d = index_of(p, it->deps[j]);
            FUZZ_CHECK(d >= 0 && d != (int)i, "item %zu: dependency %s", i, it->deps[j]);
            for (size_t k = 0; k < j; k++)
                FUZZ_CHECK(strcmp(it->deps[k], it->deps[j]), "item %zu: %s twice", i, it->deps[j]);
        }
    }
    /* Kahn: an item is ready when everything it depends on is done */
    indeg = calloc(p->n, sizeof(*indeg));
    queue = calloc(p->n, sizeof(*queue));
    if (!indeg || !queue)
        abort();
    for (size_t i = 0; i < p->n; i++) {
        indeg[i] = p->items[i].ndeps;
        if (!indeg[i])
            queue[tail++] = i;
    }
    while (head < tail) {
        const char *done = p->items[queue[head++]].key;
        for (size_t i = 0; i < p->n; i++)
            for (size_t j = 0; j < p->items[i].ndeps; j++)
                if (!strcmp(p->items[i].deps[j], done) && --indeg[i] == 0)
                    queue[tail++] = i;
    }
    FUZZ_CHECK(tail == p->n, "a cycle was accepted (%zu of %zu items orderable)", tail, p->n);
    free(indeg);
    free(queue);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xalloc_cjson_hooks();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *json = cJSON_ParseWithLength((const char *)data, size);
    struct plan p, small;
    int rc, rc_small;

    if (!json)
        return 0;
    memset(&p, 0xa5, sizeof(p)); /* plan_parse must set it whatever happens */
    rc = plan_parse(&p, json, 50);
    if (rc == 0) {
        check_plan(&p, 50);
    } else {
        FUZZ_CHECK(rc == ERR_INVALID, "plan_parse returned %d", rc);
        FUZZ_CHECK(p.n == 0 && !p.items, "a refused plan is not empty");
        FUZZ_CHECK(err_last()[0] != '\0', "refused without a message");
    }
    memset(&small, 0xa5, sizeof(small));
    rc_small = plan_parse(&small, json, 3);
    if (rc_small == 0) {
        FUZZ_CHECK(rc == 0 && small.n == p.n, "accepted with max 3, not with max 50");
        check_plan(&small, 3);
    } else if (rc == 0) {
        FUZZ_CHECK(p.n > 3 && strstr(err_last(), "more than the maximum"),
                   "%zu items accepted with max 50, refused with max 3: %s", p.n, err_last());
    }
    plan_release(&small);
    plan_release(&p);
    cJSON_Delete(json);
    return 0;
}
