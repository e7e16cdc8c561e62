/*
 * forge_poll.c - the cron lane's forge poll (see forge_goals.h).
 *
 * Every forge.poll_interval_s: for each trigger, the open issues with its
 * label, asked with If-None-Match (the ETag of the last complete poll, so
 * an unchanged list is a 304 that GitHub does not count against the rate
 * limit); each becomes a goal (forge_issue_consider).  The ETag is kept
 * only when every issue of the answer was dealt with: a forge or store
 * failure on one leaves the next poll to ask again in full, so an outage
 * delays a goal and never loses it.  Then each linked issue's comment is
 * brought up to date and its `/goald` commands applied.  A rate limit
 * that resets later than forge.retry_max_wait_s pauses the trigger until
 * then.
 */
#include "lifecycle/forge_goals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/forge.h"
#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/timeutil.h"

#define TELL_MAX 64

static int64_t last_poll_ms;    /* monotonic, this process */
static int64_t paused_until_ms; /* monotonic: a forge's rate limit */

/* The labelled issues of t become goals.  0 when every one was dealt
 * with (the ETag is then stored). */
static int poll_issues(store *st, const struct forge_trigger *t)
{
    struct forge_failure fl = {{0}, 0};
    struct vcs_issue *v = NULL;
    char key[200], etag[512] = "";
    int rc, n = 0, nm = 0, found = 0, failed = 0, made = 0;

    snprintf(key, sizeof(key), "etag:%s", t->name); /* truncation: ok, a name fits 128 bytes */
    if ((rc = store_forge_state_get(st, key, etag, sizeof(etag), &found)) != 0)
        return rc;
    rc = vcs_forge_issues_list(&v, &n, &nm, etag, sizeof(etag), &fl, &t->f, t->label);
    if (rc != 0) {
        if (fl.wait_ms > 0)
            paused_until_ms = time_mono_ms() + fl.wait_ms;
        return rc;
    }
    for (int i = 0; !nm && i < n; i++) {
        if (forge_issue_consider(st, t, &v[i], NULL, &made) != 0) {
            log_warn("forge: %s#%lld: %s (tried again at the next poll)", t->repo_key,
                     (long long)v[i].number, err_last());
            err_clear();
            failed = 1;
        }
    }
    if (!nm && !failed)
        rc = store_forge_state_set(st, key, etag, time_now_ms());
    vcs_issues_free(v, n);
    return rc;
}

/* Each linked issue of t: its comment, its commands. */
static void tell_issues(store *st, const struct forge_trigger *t)
{
    struct store_forge_link rows[TELL_MAX];
    int n = 0;

    if (store_forge_links_to_tell(st, t->name, rows, TELL_MAX, &n) != 0) {
        log_warn("forge: %s: %s", t->name, err_last());
        err_clear();
        return;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(rows[i].forge, t->f.base_url) || strcmp(rows[i].repo, t->repo_key))
            continue; /* the trigger's repository changed since */
        if (forge_commands_apply(st, t, rows[i].number, rows[i].goal_id) != 0 ||
            forge_notify_goal(st, t, rows[i].goal_id, rows[i].number) != 0) {
            log_warn("forge: %s#%lld: %s (tried again at the next poll)", t->repo_key,
                     (long long)rows[i].number, err_last());
            err_clear();
        }
    }
}

void forge_poll_run(store *st, int64_t now_ms)
{
    struct forge_trigger *t = NULL;
    int64_t mono = time_mono_ms();
    int n = 0;

    (void)now_ms;
    if (last_poll_ms && mono - last_poll_ms < config_int(CFG_FORGE_POLL_INTERVAL_S) * 1000)
        return;
    if (paused_until_ms && mono < paused_until_ms)
        return;
    last_poll_ms = mono;
    paused_until_ms = 0;
    if (forge_triggers_load(&t, &n) != 0) {
        log_warn("forge: %s", err_last());
        err_clear();
        return;
    }
    for (int i = 0; i < n; i++) {
        if (poll_issues(st, &t[i]) != 0) {
            log_warn("forge: %s: %s (tried again at the next poll)", t[i].name, err_last());
            err_clear();
        }
        tell_issues(st, &t[i]);
        if (forge_reviews_poll(st, &t[i]) != 0) {
            log_warn("forge: %s: %s", t[i].name, err_last());
            err_clear();
        }
    }
    forge_triggers_free(t, n);
}
