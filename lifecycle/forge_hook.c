/*
 * forge_hook.c - what a forge's webhook asks for, once its signature
 * was checked (see forge_goals.h).  GitHub's shapes and Gitea's (and
 * Forgejo's, which are Gitea's):
 *   issues         action "labeled" + label.name (GitHub);
 *                  action "label_updated" + issue.labels[].name (Gitea)
 *   issue_comment  action "created", issue.number
 * The sender is whoever acted; repository.full_name must be the
 * trigger's repository.
 */
#include "lifecycle/forge_goals.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/forge.h"
#include "util/err.h"
#include "util/log.h"

static const char *str_at(const cJSON *o, const char *k)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return v ? v : "";
}

static int64_t num_at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* Does the event put label on the issue? */
static int labels_it(const cJSON *p, const char *label)
{
    const char *action = str_at(p, "action");
    const cJSON *l;

    if (!strcmp(action, "labeled"))
        return !strcmp(str_at(cJSON_GetObjectItemCaseSensitive(p, "label"), "name"), label);
    if (strcmp(action, "label_updated") != 0)
        return 0;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(p, "issue"),
                              "labels")) if (!strcmp(str_at(l, "name"), label)) return 1;
    return 0;
}

static int on_issue(int *status, char *msg, size_t n, store *st, const struct forge_trigger *t,
                    const cJSON *p, const char *sender)
{
    const cJSON *is = cJSON_GetObjectItemCaseSensitive(p, "issue");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(is, "pull_request");
    struct vcs_issue issue;
    char goal_id[ID_SIZE];
    int rc, made = 0, found = 0;

    if (!labels_it(p, t->label) || strcmp(str_at(is, "state"), "open") != 0 ||
        (pr && !cJSON_IsNull(pr)) || num_at(is, "number") <= 0) {
        snprintf(msg, n, "not an open issue labelled %s", t->label); /* truncation: ok, a message */
        return 0;
    }
    issue.number = num_at(is, "number");
    issue.title = (char *)str_at(is, "title");
    issue.body = (char *)str_at(is, "body");
    issue.author = (char *)str_at(cJSON_GetObjectItemCaseSensitive(is, "user"), "login");
    if ((rc = forge_issue_consider(st, t, &issue, sender, &made)) != 0)
        return rc;
    if (!made) {
        /* truncation: ok, a message */
        snprintf(msg, n, "issue #%lld: no new goal", (long long)issue.number);
        return 0;
    }
    *status = 202;
    /* truncation: ok, a message */
    snprintf(msg, n, "issue #%lld became a goal", (long long)issue.number);
    if (store_forge_link_goal(st, t->f.base_url, t->repo_key, issue.number, "issue", goal_id,
                              &found) == 0 &&
        found && forge_notify_goal(st, t, goal_id, issue.number) != 0) {
        log_warn("forge: %s#%lld: %s (the poll tells the issue)", t->repo_key,
                 (long long)issue.number, err_last());
        err_clear();
    }
    return 0;
}

static int on_comment(int *status, char *msg, size_t n, store *st, const struct forge_trigger *t,
                      const cJSON *p)
{
    int64_t number = num_at(cJSON_GetObjectItemCaseSensitive(p, "issue"), "number");
    char goal_id[ID_SIZE];
    int rc, found = 0;

    if (strcmp(str_at(p, "action"), "created") != 0 || number <= 0) {
        snprintf(msg, n, "not a new comment"); /* truncation: ok, a message */
        return 0;
    }
    if ((rc = store_forge_link_goal(st, t->f.base_url, t->repo_key, number, "issue", goal_id,
                                    &found)) != 0)
        return rc;
    if (!found) {
        /* truncation: ok, a message */
        snprintf(msg, n, "issue #%lld has no goal", (long long)number);
        return 0;
    }
    if ((rc = forge_commands_apply(st, t, number, goal_id)) != 0)
        return rc;
    *status = 202;
    /* truncation: ok, a message */
    snprintf(msg, n, "issue #%lld: comments read", (long long)number);
    return 0;
}

int forge_webhook_event(int *status, char *msg, size_t n, store *st, const struct forge_trigger *t,
                        const char *event, const cJSON *payload)
{
    const char *full = str_at(cJSON_GetObjectItemCaseSensitive(payload, "repository"), "full_name");
    const char *sender = str_at(cJSON_GetObjectItemCaseSensitive(payload, "sender"), "login");

    *status = 200;
    snprintf(msg, n, "ignored"); /* truncation: ok, a message */
    if (!event || !strcmp(event, "ping"))
        return 0;
    if (strcasecmp(full, t->repo_key) != 0) {
        *status = 422;
        /* truncation: ok, a message */
        snprintf(msg, n, "the event's repository is not the trigger's (%s)", t->repo_key);
        return 0;
    }
    if (!strcmp(event, "issues") || !strcmp(event, "issue_label"))
        return on_issue(status, msg, n, st, t, payload, sender);
    if (!strcmp(event, "issue_comment"))
        return on_comment(status, msg, n, st, t, payload);
    return 0;
}
