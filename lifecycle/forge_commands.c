/*
 * forge_commands.c - `/goald retry|skip|answer TEXT` comments on an
 * issue resolve its goal's open escalation (see forge_goals.h).
 *
 * A command is the comment's first line; it counts only when its author
 * may push to the repository at the time it is read.  The last comment
 * read is remembered per issue, so each comment acts once; a failure to
 * read or to check a permission leaves it to the next poll.
 */
#include "lifecycle/forge_goals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/resolve.h"
#include "store/escalation.h"
#include "store/forge.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#define ANSWER_MAX 4000

struct command {
    char action[16];        /* "retry" or "skip" */
    char input[ANSWER_MAX]; /* the hint or answer; "" none */
};

/* Parse a comment's first line: 1 when it is a command (into c). */
static int command_parse(struct command *c, const char *body)
{
    const char *p = body;
    size_t len;

    memset(c, 0, sizeof(*c));
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "/goald", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return 0;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    len = strcspn(p, " \t\r\n");
    if (len == 5 && !strncmp(p, "retry", 5))
        snprintf(c->action, sizeof(c->action), "retry"); /* truncation: ok, a constant that fits */
    else if (len == 6 && !strncmp(p, "answer", 6))
        snprintf(c->action, sizeof(c->action), "retry"); /* truncation: ok, a constant that fits */
    else if (len == 4 && !strncmp(p, "skip", 4))
        snprintf(c->action, sizeof(c->action), "skip"); /* truncation: ok, a constant that fits */
    else
        return 0;
    p += len;
    while (*p == ' ' || *p == '\t')
        p++;
    /* the rest: the answer; one too long to hold is no command, never a cut answer */
    if (strcmp(c->action, "skip") != 0 &&
        (size_t)snprintf(c->input, sizeof(c->input), "%s", p) >= sizeof(c->input))
        return 0;
    return 1;
}

/* store_escalation_each_open_of_goal callback: the first one's id. */
static int first_open(const struct store_escalation *e, void *ctx)
{
    snprintf(ctx, ID_SIZE, "%s", e->id); /* truncation: ok, an id, ID_SIZE both */
    return 1;
}

/* Apply one command from login to goal_id's open escalation, if any. */
static int command_apply(store *st, const struct forge_trigger *t, int64_t number,
                         const char *goal_id, const struct vcs_comment *cm, const struct command *c)
{
    struct resolve_result res;
    char esc[ID_SIZE] = "";
    int rc, allowed = 0;

    if ((rc = vcs_forge_can_push(&allowed, &t->f, cm->author)) != 0)
        return rc;
    if (!allowed) {
        log_info("forge: %s#%lld: comment %lld by @%s, who may not push to the repository: "
                 "ignored",
                 t->repo_key, (long long)number, (long long)cm->id, cm->author);
        return 0;
    }
    rc = store_escalation_each_open_of_goal(st, goal_id, first_open, esc);
    if (rc < 0)
        return rc;
    if (!esc[0]) {
        log_info("forge: %s#%lld: /goald %s by @%s: goal %.8s has no open escalation", t->repo_key,
                 (long long)number, c->action, cm->author, goal_id);
        return 0;
    }
    rc = lifecycle_resolve(st, esc, c->action, c->input[0] ? c->input : NULL, &res);
    if (rc == ERR_INVALID || rc == ERR_TRANSITION) {
        log_info("forge: %s#%lld: /goald %s by @%s: %s", t->repo_key, (long long)number, c->action,
                 cm->author, err_last());
        err_clear();
        return 0;
    }
    if (rc == 0)
        log_info("forge: %s#%lld: /goald %s by @%s resolved escalation %.8s (goal %s)", t->repo_key,
                 (long long)number, c->action, cm->author, esc, res.goal_status);
    return rc;
}

int forge_commands_apply(store *st, const struct forge_trigger *t, int64_t number,
                         const char *goal_id)
{
    struct vcs_comment *cms = NULL;
    char key[900], tkey[900], last[32] = "", etag[512] = "";
    int rc, n = 0, found = 0, nm = 0;

    /* cut, the keys of two issues would be one */
    if ((size_t)snprintf(key, sizeof(key), "comments:%s/%s#%lld", t->f.base_url, t->repo_key,
                         (long long)number) >= sizeof(key) ||
        (size_t)snprintf(tkey, sizeof(tkey), "comments-etag:%s/%s#%lld", t->f.base_url,
                         t->repo_key, (long long)number) >= sizeof(tkey))
        return err_set(ERR_INVALID, "%s: forge.base_url too long for the comments' key", t->name);
    if ((rc = store_forge_state_get(st, key, last, sizeof(last), &found)) != 0 ||
        (rc = store_forge_state_get(st, tkey, etag, sizeof(etag), &found)) != 0 ||
        (rc = vcs_forge_comments_list(&cms, &n, &nm, etag, sizeof(etag), &t->f, number,
                                      strtoll(last, NULL, 10))) != 0 ||
        nm)
        goto out;
    for (int i = 0; i < n; i++) {
        struct command c;
        char id[32];
        if (command_parse(&c, cms[i].body) &&
            (rc = command_apply(st, t, number, goal_id, &cms[i], &c)) != 0)
            goto out; /* tried again at the next poll */
        /* truncation: ok, a number that fits */
        snprintf(id, sizeof(id), "%lld", (long long)cms[i].id);
        if ((rc = store_forge_state_set(st, key, id, time_now_ms())) != 0)
            goto out;
    }
    rc = store_forge_state_set(st, tkey, etag, time_now_ms());
out:
    vcs_comments_free(cms, n);
    return rc;
}
