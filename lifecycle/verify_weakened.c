/*
 * verify_weakened.c - stage 5, verification: did the item pass by
 * changing what judges it?
 *
 * Top to bottom: what a gate input is (a build, configuration or CI file,
 * a test by the usual conventions, a path a gate command names or a
 * parsed test case points at); the gate inputs among the item's changes,
 * and which of them to put back as they were at the baseline (modified and
 * deleted ones, and added build and configuration files; added tests
 * stay); the gates judged again on that restored tree, where a gate the
 * item is blamed for means "tests weakened"; and "tests removed": a test
 * that passed at the baseline and no longer runs.
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/tree.h"

/* A build, configuration or CI file: it decides how the tests run (which
 * are collected, what passes), so one the item added is dropped, not kept,
 * when the gates are judged again with the gate inputs restored. */
int verify_config_input(const char *path)
{
    static const char *build[] = {"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt",
                                  "package.json", "pyproject.toml", "setup.cfg", "setup.py",
                                  "conftest.py", "tox.ini", "pytest.ini", "Cargo.toml", "go.mod",
                                  NULL};
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t pl = strlen(path);

    for (size_t i = 0; build[i]; i++)
        if (!strcmp(base, build[i]))
            return 1;
    return !strncmp(path, ".github/workflows/", 18) ||
           (pl > 6 && !strcmp(path + pl - 6, ".cmake"));
}

/* A token of the gate command c names path or a folder above it. */
static int command_names(const char *c, const char *path)
{
    size_t pl = strlen(path);

    while (c && *c) {
        size_t n = strcspn(c, " \t\n;&|<>()'\"`=");
        if (n > 0) {
            size_t m = n;
            const char *t = c;
            if (m > 2 && t[0] == '.' && t[1] == '/')
                t += 2, m -= 2;
            while (m > 1 && t[m - 1] == '/')
                m--;
            if ((m == pl && !strncmp(t, path, m)) ||
                (m < pl && !strncmp(t, path, m) && path[m] == '/'))
                return 1;
        }
        c += n ? n : 1;
    }
    return 0;
}

/* A parsed test case of cases points at path, or at a folder above it. */
static int cases_name(const struct test_cases *cases, const char *path)
{
    size_t pl = strlen(path);

    for (size_t k = 0; k < cases->n; k++) {
        const char *f = cases->v[k].file;
        size_t fl = f ? strlen(f) : 0;
        if (f && (!strcmp(f, path) || (fl < pl && !strncmp(f, path, fl) && path[fl] == '/')))
            return 1;
    }
    return 0;
}

/* A path the gates read: named by a gate command, pointed at by a parsed
 * test case, a build or CI file, or a test by the usual conventions
 * (docs/lifecycle.md, "Gate inputs"). */
int verify_gate_input(const char *path, const struct gate_plan *plan, const struct gate_eval *ev)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

    if (verify_config_input(path))
        return 1;
    if (!strncmp(path, "tests/", 6) || !strncmp(path, "test/", 5) || strstr(path, "/tests/") ||
        strstr(path, "/test/") || !strncmp(base, "test_", 5) || strstr(base, "_test.") ||
        strstr(base, ".test."))
        return 1;
    for (size_t g = 0; g < plan->n; g++)
        if (command_names(plan->gates[g].command, path) || (ev && cases_name(&ev[g].r.cases, path)))
            return 1;
    return 0;
}

/* The gate inputs among the item's changes (into vs->inputs), and of
 * them the paths to put back as they were at the baseline (into restore,
 * nch + 1 entries: modified and deleted ones, and added build and
 * configuration files; added tests stay).  Returns how many. */
size_t verify_inputs_changed(struct verify_state *vs, const struct vcs_tree_change *ch, size_t nch,
                             const char **restore)
{
    size_t n = 0;

    for (size_t i = 0; i < nch; i++)
        if (verify_gate_input(ch[i].path, &vs->plan, vs->ev)) {
            cJSON_AddItemToArray(vs->inputs, cJSON_CreateString(ch[i].path));
            if (ch[i].status != 'A' || verify_config_input(ch[i].path))
                restore[n++] = ch[i].path;
        }
    return n;
}

/* The gates judged again on the item's tree with the restore paths as
 * they were at the baseline: a gate the item is blamed for there means its
 * tests were weakened (reasons into blame, *weakened counts them).  0, or
 * ERR_FAIL after job_fail(). */
int verify_restored_pass(struct verify_state *vs, struct job_ctx *j, struct workspace *ws,
                         const char **restore, size_t nrestore, strbuf *blame, int *weakened)
{
    strbuf files;
    cJSON *p;
    int rc;

    strbuf_init(&files, 8192); /* named in the blame: cut at its cap */
    for (size_t i = 0; i < nrestore; i++)
        strbuf_addf_cut(&files, "%s%s", i ? ", " : "", restore[i]);
    if (vcs_tree_restore(vs->restored, j->repo, vs->tree, vs->base, restore, nrestore) != 0) {
        rc = job_fail(j, "vcs", "restoring the gate inputs: %s", err_last());
        goto out;
    }
    vs->wev = xcalloc(vs->plan.n + 1, sizeof(*vs->wev));
    if ((rc = verify_judge_all(j, ws, vs, vs->restored, vs->ev, vs->wev)) != 0)
        goto out;
    for (size_t i = 0; i < vs->plan.n; i++) {
        if (!vs->wev[i].blame)
            continue;
        if (!(*weakened)++)
            strbuf_addf_cut(blame,
                            "tests weakened: %s: with these files as they were at "
                            "the baseline %.12s the gates fail:\n",
                            strbuf_cstr(&files), vs->base);
        verify_why_tail(blame, &vs->wev[i]);
    }
    p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "gate_inputs_changed", cJSON_Duplicate(vs->inputs, 1));
    cJSON_AddBoolToObject(p, "tests_weakened", *weakened > 0);
    job_event_or_warn(j, "gate_inputs.checked", p);
    cJSON_Delete(p);
out:
    strbuf_release(&files);
    return rc;
}

/* A test that passed at the baseline and is absent now, even with the
 * gate inputs restored: deselected or deleted, never silently. */
void verify_tests_removed(const struct verify_state *vs, strbuf *blame, int *weakened)
{
    for (size_t i = 0; !*weakened && i < vs->plan.n; i++) {
        const struct gate_eval *e = vs->wev ? &vs->wev[i] : &vs->ev[i];
        if (!e->r.must_pass || !e->diff.n_removed)
            continue;
        if (!(*weakened)++)
            strbuf_adds_cut(blame, "tests removed: ");
        else
            strbuf_adds_cut(blame, "; ");
        strbuf_addf_cut(blame, "gate %s: ", e->r.name);
        verify_list_add(blame, e->diff.removed, e->diff.n_removed, 50);
    }
    if (*weakened && strncmp(strbuf_cstr(blame), "tests removed: ", 15) == 0)
        strbuf_addf_cut(blame, " passed at the baseline %.12s and no longer run\n", vs->base);
}
