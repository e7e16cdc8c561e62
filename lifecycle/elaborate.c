/*
 * elaborate.c - stage 2: a goal becomes components, implicit requirements,
 * success criteria, allowed actions and a verification plan.
 *
 * Read top to bottom, stage_elaborate() (at the end of this file):
 *   1. asks the model (build_request: the goal and a read-only view of the
 *      repository, elaborate_view.h) for a JSON answer, running the reads
 *      it asks for ("look") for up to ELAB_LOOK_TURNS turns first
 *      (ask_with_looks), and checks its shape (check_answer);
 *   2. a recurring goal's run may answer nothing_to_do: the goal completes
 *      with that outcome (nothing_to_do);
 *   3. merges the answer with the goal (merge_criteria, merge_actions,
 *      merge_gates) and stores it, moving the goal from queued to active
 *      (store_elaboration).  The plan stage (plan_stage.c) runs next.
 *
 * Merging: the goal's own criteria are kept first and the model's added
 * when new; allowed actions are the model's intersected with the goal's
 * when the goal gives some; the verification plan is the goal's, else the
 * gates detected from the repository's build files plus the model's (which
 * never replace them).
 */
#include "lifecycle/elaborate.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gates/detect.h"
#include "gates/gates.h"
#include "lifecycle/elaborate_view.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/intake.h"
#include "lifecycle/prompts.h"
#include "lifecycle/job.h"
#include "lifecycle/transitions.h"
#include "store/event.h"
#include "store/goal.h"
#include "util/err.h"
#include "util/utf8.h"
#include "util/xalloc.h"

static const char *const gate_types[] = {"test", "build", "lint", "typecheck", "custom", NULL};

static int string_array(const cJSON *v)
{
    const cJSON *it;

    if (!cJSON_IsArray(v))
        return 0;
    cJSON_ArrayForEach(it, v) if (!cJSON_IsString(it)) return 0;
    return 1;
}

static int in_array(const cJSON *arr, const char *s)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) && !strcasecmp(it->valuestring, s)) return 1;
    return 0;
}

static int known_action(const char *s)
{
    for (int i = 0; intake_actions[i]; i++)
        if (!strcmp(intake_actions[i], s))
            return 1;
    return 0;
}

/* The build folders gate i of the model's answer declares (g's
 * "build_dirs", gates_build_dirs_check): -1 with why when bad. */
static int check_build_dirs(const cJSON *g, int i, char *why, size_t n)
{
    char sub[512];

    if (gates_build_dirs_check(cJSON_GetObjectItemCaseSensitive(g, "build_dirs"), sub,
                               sizeof(sub), NULL) == 0)
        return 0;
    /* truncation: ok, a message */
    snprintf(why, n, "verification[%d].build_dirs%s%.180s", i, sub[0] == '[' ? "" : ": ", sub);
    return -1;
}

/* Can a goal with these allowed actions change files or run commands? */
/* Check the model's answer; the message names what is wrong.  An answer
 * with "nothing_to_do": true needs a "reason" and nothing else. */
static int check_answer(const cJSON *a, char *why, size_t n)
{
    static const char *const lists[] = {"components", "implicit_requirements", "success_criteria",
                                        "allowed_actions"};
    const cJSON *v, *g;
    int i = 0;

    v = cJSON_GetObjectItemCaseSensitive(a, "nothing_to_do");
    if (v && !cJSON_IsBool(v)) {
        snprintf(why, n, "nothing_to_do: expected true or false"); /* truncation: ok, a message */
        return -1;
    }
    if (cJSON_IsTrue(v)) {
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason"));
        while (r && (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r'))
            r++;
        if (!r || !*r) {
            /* truncation: ok, a message */
            snprintf(why, n, "reason: expected a non-empty string with nothing_to_do");
            return -1;
        }
        return 0;
    }
    for (size_t k = 0; k < 4; k++) {
        if (!string_array(cJSON_GetObjectItemCaseSensitive(a, lists[k]))) {
            /* truncation: ok, a message */
            snprintf(why, n, "%s: expected an array of strings", lists[k]);
            return -1;
        }
    }
    v = cJSON_GetObjectItemCaseSensitive(a, "verification");
    if (!cJSON_IsArray(v)) {
        snprintf(why, n, "verification: expected an array"); /* truncation: ok, a message */
        return -1;
    }
    cJSON_ArrayForEach(g, v)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(g, "command");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(g, "type");
        int ok_type = 0;
        if (!cJSON_IsString(name) || !name->valuestring[0] || !cJSON_IsString(cmd) ||
            !cmd->valuestring[0]) {
            /* truncation: ok, a message */
            snprintf(why, n, "verification[%d]: needs a name and a command", i);
            return -1;
        }
        for (int t = 0; type && gate_types[t]; t++)
            if (cJSON_IsString(type) && !strcmp(type->valuestring, gate_types[t]))
                ok_type = 1;
        if (type && !ok_type) {
            /* truncation: ok, a message */
            snprintf(why, n, "verification[%d].type: not one of test, build, lint, typecheck, "
                             "custom",
                     i);
            return -1;
        }
        if (check_build_dirs(g, i, why, n) != 0)
            return -1;
        i++;
    }
    return 0;
}

/* The reason as stored: at most REASON_MAX bytes, cut on a character
 * boundary.  Free with free(). */
#define REASON_MAX 1000
static char *reason_dup(const char *r)
{
    size_t len = strlen(r);

    if (len > REASON_MAX)
        len = utf8_cut_back(r, REASON_MAX);
    return xstrndup(r, len);
}

/* The model found nothing to do: the goal is completed with outcome
 * nothing_to_do, without a branch or work items, in one transaction. */
static int nothing_to_do(struct job_ctx *j, const cJSON *answer)
{
    const struct goal *g = j->goal;
    char *reason = reason_dup(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "reason")));
    cJSON *elab = cJSON_CreateObject(), *p = cJSON_CreateObject();
    char *t_elab;
    int rc;

    cJSON_AddBoolToObject(elab, "nothing_to_do", 1);
    cJSON_AddStringToObject(elab, "reason", reason);
    t_elab = cJSON_PrintUnformatted(elab);
    cJSON_AddStringToObject(p, "outcome", "nothing_to_do");
    cJSON_AddStringToObject(p, "reason", reason);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_goal_set_nothing_to_do(j->st, g->id, t_elab, reason)) ||
        (rc = store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.nothing_to_do", p,
                                    NULL)) ||
        (rc = transition_apply(j->st, ENTITY_GOAL, g->id, "active", "queued", NULL)) ||
        (rc = transition_apply(j->st, ENTITY_GOAL, g->id, "completed", "active", p)))
        goto fail;
    rc = store_tx_commit(j->st);
    strbuf_addf_cut(&j->summary, "nothing to do: %s", reason);
    goto out;
fail:
    store_tx_rollback(j->st);
    rc = job_fail(j, "internal", "elaboration not stored: %s", err_last());
out:
    cJSON_free(t_elab);
    cJSON_Delete(elab);
    cJSON_Delete(p);
    free(reason);
    return rc;
}

/* The repository's work folder, for its top-level files and build files;
 * NULL for a goal in clone mode (docs/scaling.md): its repo is a URL or a
 * bare repository, whose files are in no folder before the first run. */
static const char *local_root(const struct goal *g)
{
    return g->repo && !goal_view_clone(g) ? g->repo : NULL;
}

/* What the model is told: the goal as submitted, and a view of the
 * repository when its folder is on this node (root). */
static void build_request(strbuf *user, struct job_ctx *j, const char *root)
{
    const struct goal *g = j->goal;

    strbuf_addf_cut(user, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(user, "Description: %s\n", g->description);
    strbuf_addf_cut(user, "Success criteria given: %s\n", g->success_criteria);
    if (g->verification && strcmp(g->verification, "[]") != 0)
        strbuf_addf_cut(user,
                        "Verification given (the goal's own gates are used as they are; "
                        "answer \"verification\": [] or repeat them): %s\n",
                        g->verification);
    if (g->allowed_actions)
        strbuf_addf_cut(user, "Allowed actions given: %s\n", g->allowed_actions);
    if (root)
        elaborate_view_add(user, j, root);
    else
        strbuf_adds_cut(user, "The repository's folder is not on this node: no view of it, "
                              "and look is not available.\n");
}

/* The model's answer, after at most ELAB_LOOK_TURNS turns of looks (an
 * answer with a non-empty "look" asks to see more first; one past the
 * last turn is taken as the elaboration).  0, or ERR_FAIL after
 * job_fail(). */
static int ask_with_looks(struct job_ctx *j, strbuf *user, const char *root, cJSON **answer)
{
    int rc;

    for (int turn = 1;; turn++) {
        const cJSON *look;
        if ((rc = job_ask_json(j, "elaborate", prompt_elaborate, strbuf_cstr(user),
                               schema_elaborate, answer)) != 0)
            return rc;
        look = cJSON_GetObjectItemCaseSensitive(*answer, "look");
        if (!root || !cJSON_IsArray(look) || cJSON_GetArraySize(look) == 0 ||
            turn > ELAB_LOOK_TURNS)
            return 0;
        elaborate_view_look(user, j, root, look, turn, turn == ELAB_LOOK_TURNS);
        cJSON_Delete(*answer);
        *answer = NULL;
    }
}

/* Words that say nothing a criterion needs. */
static int stop_word(const char *w, size_t n)
{
    static const char *const stop[] = {"the", "and", "with", "under", "for", "its", "all",
                                       "still", "not", "are", "is", "be", "to", "of", "in",
                                       "a", "an", "it", "that", "must", "should", NULL};

    for (int k = 0; stop[k]; k++)
        if (strlen(stop[k]) == n && !strncasecmp(stop[k], w, n))
            return 1;
    return 0;
}

/* Does word w (n bytes) occur in s, as a word, ignoring case and a final
 * "s" on either side? */
static int has_word(const char *s, const char *w, size_t n)
{
    size_t m = n > 3 && (w[n - 1] == 's' || w[n - 1] == 'S') ? n - 1 : n;

    for (const char *p = s; *p;) {
        size_t k = 0;
        while (isalnum((unsigned char)p[k]))
            k++;
        if (k) {
            size_t km = k > 3 && (p[k - 1] == 's' || p[k - 1] == 'S') ? k - 1 : k;
            if (km == m && !strncasecmp(p, w, m))
                return 1;
            p += k;
        } else {
            p++;
        }
    }
    return 0;
}

/* How many significant words of a are not in b (-1: a has none). */
static int words_missing(const char *a, const char *b)
{
    int missing = 0, any = 0;

    for (const char *p = a; *p;) {
        size_t k = 0;
        while (isalnum((unsigned char)p[k]))
            k++;
        if (k >= 2 && !stop_word(p, k)) {
            any = 1;
            missing += !has_word(b, p, k);
        }
        p += k ? k : 1;
    }
    return any ? missing : -1;
}

/* Does the model's criterion c restate a given one: every significant
 * word of the given one is in it, and it adds at most one of its own
 * ("ms('') still throws" for "ms('') throws")? */
static int restates(const struct criteria *given, const char *c)
{
    for (size_t k = 0; k < given->n; k++)
        if (words_missing(given->text[k], c) == 0 && words_missing(c, given->text[k]) <= 1)
            return 1;
    return 0;
}

/* Criteria: the goal's first, then the model's new ones (a restatement
 * of a given one is dropped). */
static cJSON *merge_criteria(const struct criteria *given, const cJSON *answer)
{
    cJSON *criteria = cJSON_CreateArray();
    const cJSON *it;

    for (size_t k = 0; k < given->n; k++)
        cJSON_AddItemToArray(criteria, cJSON_CreateString(given->text[k]));
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(answer, "success_criteria"))
    {
        if (it->valuestring[0] && !in_array(criteria, it->valuestring) &&
            !restates(given, it->valuestring))
            cJSON_AddItemToArray(criteria, cJSON_CreateString(it->valuestring));
    }
    return criteria;
}

/* Actions: the model's (known ones), intersected with the goal's; when
 * nothing usable is left, the goal's list, or NULL (everything). */
static cJSON *merge_actions(const struct goal *g, const cJSON *answer)
{
    cJSON *goal_actions = g->allowed_actions ? cJSON_Parse(g->allowed_actions) : NULL;
    cJSON *actions = cJSON_CreateArray();
    const cJSON *it;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(answer, "allowed_actions"))
    {
        if (known_action(it->valuestring) && !in_array(actions, it->valuestring) &&
            (!goal_actions || in_array(goal_actions, it->valuestring)))
            cJSON_AddItemToArray(actions, cJSON_CreateString(it->valuestring));
    }
    if (cJSON_GetArraySize(actions) == 0) {
        /* nothing usable from the model: the goal's list, or everything */
        cJSON_Delete(actions);
        actions = goal_actions ? cJSON_Duplicate(goal_actions, 1) : NULL;
    }
    cJSON_Delete(goal_actions);
    return actions;
}

static int has_gate_named(const cJSON *gates, const char *name)
{
    const cJSON *have;

    cJSON_ArrayForEach(have, gates)
    {
        const char *hn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(have, "name"));
        if (name && hn && !strcmp(name, hn))
            return 1;
    }
    return 0;
}

/* The gates detected from the repository's build files first; the model's
 * may add gates of other names, never replace them (a model could
 * otherwise propose `true` as the test suite). */
static cJSON *detected_and_model_gates(const struct goal *g, const cJSON *answer,
                                       const char **source)
{
    const cJSON *it;
    cJSON *gates = local_root(g) ? gates_detect(local_root(g)) : NULL;
    int detected, model = 0;

    if (!gates)
        gates = cJSON_CreateArray();
    detected = cJSON_GetArraySize(gates) > 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(answer, "verification"))
    {
        if (!has_gate_named(gates,
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name")))) {
            cJSON_AddItemToArray(gates, cJSON_Duplicate(it, 1));
            model = 1;
        }
    }
    *source = detected && model ? "detected+model" : detected ? "detected"
              : model                                    ? "model"
                                                         : "none";
    return gates;
}

/* Verification: the goal's, else the detected ones plus the model's; a
 * read-only goal (its actions exclude bash, write and edit) never runs
 * commands the model chose: the goal's gates or none. */
static cJSON *merge_gates(const struct goal *g, const cJSON *answer, const cJSON *actions,
                          const char **source)
{
    cJSON *goal_gates = g->verification ? cJSON_Parse(g->verification) : NULL, *gates;

    if (goal_gates && cJSON_GetArraySize(goal_gates) > 0) {
        gates = cJSON_Duplicate(goal_gates, 1);
        *source = "goal";
    } else if (actions && !intake_actions_change(actions)) {
        gates = cJSON_CreateArray();
        *source = "none";
    } else {
        gates = detected_and_model_gates(g, answer, source);
    }
    cJSON_Delete(goal_gates);
    return gates;
}

/* Store the merged elaboration on the goal and make it active, in one
 * transaction, with its event. */
static int store_elaboration(struct job_ctx *j, const cJSON *answer, const cJSON *criteria,
                             const cJSON *actions, const cJSON *gates, const char *source)
{
    const struct goal *g = j->goal;
    cJSON *elab = cJSON_CreateObject(), *p = NULL;
    char *t_criteria, *t_actions, *t_gates, *t_elab;
    int rc;

    cJSON_AddItemToObject(elab, "components",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(answer, "components"), 1));
    cJSON_AddItemToObject(
        elab, "implicit_requirements",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(answer, "implicit_requirements"), 1));
    cJSON_AddItemToObject(elab, "success_criteria", cJSON_Duplicate(criteria, 1));
    cJSON_AddItemToObject(elab, "allowed_actions",
                          actions ? cJSON_Duplicate(actions, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(elab, "verification", cJSON_Duplicate(gates, 1));
    cJSON_AddStringToObject(elab, "verification_source", source);

    t_criteria = cJSON_PrintUnformatted(criteria);
    t_actions = actions ? cJSON_PrintUnformatted(actions) : NULL;
    t_gates = cJSON_PrintUnformatted(gates);
    t_elab = cJSON_PrintUnformatted(elab);
    if ((rc = store_tx_begin(j->st)) != 0)
        goto out;
    if ((rc = store_goal_set_elaboration(j->st, g->id, t_criteria, t_actions, t_gates,
                                         t_elab)) != 0)
        goto fail;
    p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "criteria", cJSON_GetArraySize(criteria));
    cJSON_AddNumberToObject(p, "gates", cJSON_GetArraySize(gates));
    cJSON_AddStringToObject(p, "verification_source", source);
    if ((rc = store_event_add(j->st, g->id, NULL, j->claim.run_id, "goal.elaborated", p, NULL)) ||
        (rc = transition_apply(j->st, ENTITY_GOAL, g->id, "active", "queued", NULL)))
        goto fail;
    rc = store_tx_commit(j->st);
    strbuf_addf_cut(&j->summary, "%d criteria, %d gates (%s)", cJSON_GetArraySize(criteria),
                    cJSON_GetArraySize(gates), source);
    goto out;
fail:
    store_tx_rollback(j->st);
    job_fail(j, "internal", "elaboration not stored: %s", err_last());
out:
    cJSON_free(t_criteria);
    cJSON_free(t_actions);
    cJSON_free(t_gates);
    cJSON_free(t_elab);
    cJSON_Delete(p);
    cJSON_Delete(elab);
    return rc;
}

int stage_elaborate(struct job_ctx *j)
{
    const struct goal *g = j->goal;
    strbuf user = STRBUF_INIT;
    cJSON *answer = NULL, *criteria = NULL, *actions = NULL, *gates = NULL;
    const char *source = "none";
    char why[256], root[PATH_MAX] = "";
    int rc;

    strbuf_init(&user, 1 << 20); /* the prompt: cut at its cap */
    if (local_root(g) && !realpath(local_root(g), root))
        root[0] = '\0'; /* gone: the view says so */
    build_request(&user, j, root[0] ? root : NULL);
    rc = ask_with_looks(j, &user, root[0] ? root : NULL, &answer);
    if (rc)
        goto out;
    if (check_answer(answer, why, sizeof(why)) != 0) {
        rc = job_fail(j, "invalid_response", "elaboration: %s", why);
        goto out;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "nothing_to_do"))) {
        /* a recurring check may find the repository healthy; a goal a
         * person submitted once asked for something to be done */
        if (!g->parent_id && !g->schedule) {
            rc = job_fail(j, "invalid_response",
                          "elaboration: nothing_to_do: only a run of a recurring goal may have "
                          "nothing to do; goal %s was submitted once",
                          g->id);
            goto out;
        }
        rc = nothing_to_do(j, answer);
        goto out;
    }
    criteria = merge_criteria(j->criteria, answer);
    actions = merge_actions(g, answer);
    gates = merge_gates(g, answer, actions, &source);
    rc = store_elaboration(j, answer, criteria, actions, gates, source);
out:
    cJSON_Delete(gates);
    cJSON_Delete(actions);
    cJSON_Delete(criteria);
    cJSON_Delete(answer);
    strbuf_release(&user);
    return rc;
}
