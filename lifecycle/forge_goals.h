/*
 * forge_goals.h - goals from a forge's issues (docs/forge.md).
 *
 * A forge trigger (config forge.triggers) names a repository on a forge
 * and a label; each open issue with the label, put there by someone who
 * may push to the repository, becomes one goal (forge_triggers.c parses
 * the triggers, forge_goals.c makes the goals, forge_poll.c polls,
 * forge_notify.c keeps the issue told, forge_hook.c reads webhooks).
 *
 * The issue's text is data: it becomes the goal's title, its quoted
 * description and its success criteria, never its repository, budget,
 * verification, publishing or allowed actions, which come from the
 * trigger's template alone.
 */
#ifndef GOALD_LIFECYCLE_FORGE_GOALS_H
#define GOALD_LIFECYCLE_FORGE_GOALS_H

#include <stddef.h>
#include <stdint.h>

#include "store/goal.h"
#include "store/store.h"
#include "util/id.h"
#include "util/strbuf.h"
#include "vcs/forge.h"
#include "vcs/forge_issues.h"

struct cJSON;

struct forge_trigger {
    char name[128];     /* the trigger's name (its poll state's key) */
    char label[128];    /* the label that asks for a goal */
    char repo_key[256]; /* "OWNER/NAME" */
    char local_repo[1024];
    char secret_env[128];     /* NAME of the webhook secret's variable; "" none */
    struct vcs_forge f;       /* the API: base_url, owner, repo, token_env */
    const struct cJSON *tmpl; /* the template object (the config's), or NULL */
};

/* The triggers of forge.triggers into *out (free with
 * forge_triggers_free(*out, *n)).  ERR_INVALID names the first bad field
 * ("forge.triggers[0].repo: ..."). */
int forge_triggers_load(struct forge_trigger **out, int *n);
void forge_triggers_free(struct forge_trigger *t, int n);

/* Check a forge.triggers value (for the configuration's loading). */
int forge_triggers_check(const struct cJSON *v);

/* The goal document issue asks for under trigger t, based on branch base
 * (cJSON_Delete it). */
struct cJSON *forge_goal_json(const struct forge_trigger *t, const struct vcs_issue *issue,
                              const char *base);

/* Make issue's goal under t, unless the issue has one: the goal and its
 * link are written in one transaction, the link's unique key deciding.
 * *made 1 when this call made it (id into goal_id), 0 when the issue had
 * its goal (its id into goal_id).  The caller checked the permission. */
int forge_goal_from_issue(store *st, const struct forge_trigger *t, const struct vcs_issue *issue,
                          int *made, char goal_id[ID_SIZE]);

/* Insert g with its link (number, source) under t in one transaction:
 * *made 0 (nothing written, goal_id the linked goal's) when the key is
 * linked already. */
int forge_goal_submit_linked(store *st, const struct forge_trigger *t, int64_t number,
                             const char *source, struct goal *g, int *made, char goal_id[ID_SIZE]);

/* Reviews of the pull requests of t's goals become follow-up goals on
 * the same branch (forge_reviews.c): one at a time per branch, each
 * review once, only from people who may push. */
int forge_reviews_poll(store *st, const struct forge_trigger *t);

/* The whole rule for one labelled issue: skipped when linked already;
 * else whoever put the label on it must be able to push (else a log
 * line, *made 0); labeler NULL: it is asked of the forge's events.
 * ERR_* on a forge or store failure (to be tried again). */
int forge_issue_consider(store *st, const struct forge_trigger *t, const struct vcs_issue *issue,
                         const char *labeler, int *made);

/* The daemon's cron lane: every forge.poll_interval_s, each trigger's
 * labelled issues (a conditional request) become goals, goald's comment
 * on each linked issue is brought up to date, and `/goald` commands in
 * the issues' comments are applied.  Failures are logged and tried at
 * the next poll. */
void forge_poll_run(store *st, int64_t now_ms);

/* Bring goald's status comment on the issue goal_id came from up to date
 * (posted once, then edited in place when its text changes). */
int forge_notify_goal(store *st, const struct forge_trigger *t, const char *goal_id,
                      int64_t number);

/* Append "Closes #N" to a pull request body when goal_id came from an
 * issue (nothing otherwise). */
int forge_pr_body_closes(strbuf *body, store *st, const char *goal_id);

/* Apply the `/goald retry|skip|answer TEXT` comments of issue number
 * (linked to goal_id) newer than the last one read, from people who may
 * push; others are logged and ignored. */
int forge_commands_apply(store *st, const struct forge_trigger *t, int64_t number,
                         const char *goal_id);

/* A forge webhook whose signature matched trigger t's secret (the
 * caller checked it): event is X-GitHub-Event / X-Gitea-Event, payload
 * the parsed body.  An "issues" event that puts t's label on an open
 * issue starts its goal at once (the sender must be able to push); an
 * "issue_comment" on a linked issue applies its `/goald` commands; the
 * rest is ignored.  *status gets the HTTP status to answer (202 acted,
 * 200 nothing to do, 422 not t's repository) and msg (n bytes) why.
 * ERR_* on a forge or store failure (the forge redelivers, or the poll
 * finds the issue). */
int forge_webhook_event(int *status, char *msg, size_t n, store *st, const struct forge_trigger *t,
                        const char *event, const struct cJSON *payload);

#endif
