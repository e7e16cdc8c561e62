/*
 * verify_warm.c - stage 5, verification: warm build folders.
 *
 * A gate may declare the folders its command builds into (build_dirs).
 * Only a trusted tree writes what a later run reads: the first run of the
 * gate on the tree of the goal's base branch tip (the user's tree, the
 * goal's start) leaves its build folders in its throw-away copy, and they
 * are moved out of it (renamed, no link followed: a build folder the run
 * replaced by a link is not kept) into the goal's folder,
 * builds/<gate digest>/<worktree path digest>/<start tree>/, written
 * once and never again.  Every later run of that gate at that worktree
 * path gets a copy of it in its own throw-away copy (links copied as
 * links, times kept), which goes with that copy: what a model-shaped
 * run writes in a build folder dies with it.
 *
 * Times make an incremental build rebuild what changed: in the trusted
 * run's copy every file gets one fixed old time; in a warm run's copy
 * every file that is the same as in the start tree gets that time, every
 * other one the time of the run, so it is newer than everything built
 * from the start's sources.
 *
 * A warm run is keyed apart from a cold one in the first-run records
 * (verify_reuse.c): a warm pass never stands for a cold run.  The final
 * check runs cold (gates_ctx.cold).
 *
 * Top to bottom: where a warm folder lives; whether a run is trusted,
 * warm or cold (verify_warm_plan); the copy laid into a warm run's copy
 * (verify_warm_enter); the trusted run's folders kept (verify_warm_keep).
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "lifecycle/workspace.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/fstree.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/path.h"
#include "vcs/export.h"
#include "vcs/tree.h"

#define WARM_OLD_TIME 946684800        /* 2000-01-01: every file as at the start */
/* A larger set of build folders is not kept (gates.warm_max_mb); 0:
 * none is. */
static uint64_t warm_cap(void)
{
    return (uint64_t)config_int(CFG_GATES_WARM_MAX_MB) << 20;
}

/* The folder of g's warm builds at ws's path into out (n bytes): the
 * goal's folder/builds/<gate digest>/<path digest>; its start's under it. */
static int warm_parent(char *out, size_t n, struct job_ctx *j, const struct workspace *ws,
                       const struct gate_spec *g)
{
    char dir[4096], gd[HASH_HEX_SIZE], rd[HASH_HEX_SIZE];
    int rc;

    if ((rc = workspace_goal_dir(dir, sizeof(dir), j)) != 0)
        return rc;
    gates_run_env(gd, g);
    hash_sha256_hex(rd, ws->root, strlen(ws->root));
    if (snprintf(out, n, "%s/builds/%s/%s", dir, gd, rd) >= (int)n)
        return err_set(ERR_INVALID, "gate %s: the warm folder's path is too long", g->name);
    return 0;
}

void verify_warm_plan(struct warm_run *w, struct job_ctx *j, const struct workspace *ws,
                      const struct gates_ctx *gc, const struct gate_spec *g, const char *tree)
{
    char tree_id[VCS_OID_HEX], rev[600], parent[4300];

    memset(w, 0, sizeof(*w));
    if (!g->n_build_dirs || (gc && gc->cold) || !j->repo || !j->goal->base_branch || !warm_cap())
        return;
    if (snprintf(rev, sizeof(rev), "refs/heads/%s", j->goal->base_branch) >= (int)sizeof(rev) ||
        vcs_rev_tree(tree_id, j->repo, tree) != 0 || vcs_rev_tree(w->start, j->repo, rev) != 0 ||
        warm_parent(parent, sizeof(parent), j, ws, g) != 0) {
        err_clear(); /* no start to build from: cold */
        return;
    }
    if (snprintf(w->dir, sizeof(w->dir), "%s/%s", parent, w->start) >= (int)sizeof(w->dir))
        return;
    if (fs_is_dir(w->dir)) {
        hash_sha256_hex(w->id, w->dir, strlen(w->dir));
        w->mode = WARM_COPY;
    } else if (!strcmp(tree_id, w->start)) {
        w->mode = WARM_TRUSTED;
    } else {
        w->primable = 1;
    }
}

int verify_warm_prime(const struct warm_run *w)
{
    char mark[sizeof(w->dir) + 16], parent[sizeof(w->dir)];
    const char *slash = strrchr(w->dir, '/');
    int fd;

    if (!w->primable || !slash ||
        path_fmt(parent, sizeof(parent), "%.*s", (int)(slash - w->dir), w->dir) != 0 ||
        path_fmt(mark, sizeof(mark), "%s.primed", w->dir) != 0 || fs_mkdir_p(parent, 0700) != 0) {
        err_clear();
        return 0;
    }
    fd = open(mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0; /* tried already (or another run is trying now) */
    close(fd);
    return 1;
}

/* Open the folder rel beneath the open folder root, one component at a
 * time, never through a link; with mkdirs missing folders are made.  -1
 * (errno set) when a component is missing or not a folder. */
static int open_beneath(int root, const char *rel, int mkdirs)
{
    char comp[GATES_BUILD_DIR_LEN + 1];
    int fd = dup(root);

    while (fd >= 0 && *rel) {
        const char *slash = strchr(rel, '/');
        size_t n = slash ? (size_t)(slash - rel) : strlen(rel);
        int next;
        if (n >= sizeof(comp)) {
            close(fd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(comp, rel, n);
        comp[n] = '\0';
        if (mkdirs && mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
            close(fd);
            return -1;
        }
        next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
        rel += n + (slash ? 1 : 0);
    }
    return fd;
}

/* The folder part of rel into dir ("" when none) and its last component
 * into leaf (both GATES_BUILD_DIR_LEN + 1 bytes). */
static void split_rel(char *dir, char *leaf, const char *rel)
{
    const char *slash = strrchr(rel, '/');

    if (!slash) {
        dir[0] = '\0';
        /* truncation: ok, a build folder is at most GATES_BUILD_DIR_LEN bytes (checked at intake) */
        snprintf(leaf, GATES_BUILD_DIR_LEN + 1, "%s", rel);
        return;
    }
    /* truncation: ok, a build folder is at most GATES_BUILD_DIR_LEN bytes (checked at intake) */
    snprintf(dir, GATES_BUILD_DIR_LEN + 1, "%.*s", (int)(slash - rel), rel);
    /* truncation: ok, as above */
    snprintf(leaf, GATES_BUILD_DIR_LEN + 1, "%s", slash + 1);
}

/* The kept build folder k of g (d<k> in the warm folder wfd) copied into
 * the copy (its fd). */
static int copy_in(int wfd, int copy, const struct gate_spec *g, size_t k)
{
    char dir[GATES_BUILD_DIR_LEN + 1], leaf[GATES_BUILD_DIR_LEN + 1], kept[32];
    struct stat st;
    int pfd, rc;

    snprintf(kept, sizeof(kept), "d%zu", k); /* truncation: ok, a number fits */
    if (fstatat(wfd, kept, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0; /* the trusted run left none */
    split_rel(dir, leaf, g->build_dirs[k]);
    if ((pfd = open_beneath(copy, dir, 1)) < 0)
        return err_set(ERR_POLICY, "build folder %s: its folder is not one in the tree (%s)",
                       g->build_dirs[k], strerror(errno));
    rc = fs_tree_copy_at(wfd, kept, pfd, leaf, warm_cap(), NULL);
    close(pfd);
    return rc ? err_wrap(rc, "build folder %s", g->build_dirs[k]) : 0;
}

int verify_warm_enter(const struct warm_run *w, struct job_ctx *j, const struct gate_spec *g,
                      const char *tree, const char *copy)
{
    int wfd = -1, cfd = -1, rc;

    if (w->mode == WARM_NONE)
        return 0;
    /* the start's files old, the others (changed since) the time of the run */
    if ((rc = vcs_export_times(j->repo, tree, w->mode == WARM_COPY ? w->start : NULL, copy,
                               WARM_OLD_TIME)) != 0 ||
        w->mode == WARM_TRUSTED)
        return rc;
    wfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cfd = open(copy, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wfd < 0 || cfd < 0) {
        rc = err_set(ERR_IO, "gate %s: the warm folder or the copy: %s", g->name, strerror(errno));
        goto out;
    }
    for (size_t k = 0; k < g->n_build_dirs && rc == 0; k++)
        rc = copy_in(wfd, cfd, g, k);
out:
    if (wfd >= 0)
        close(wfd);
    if (cfd >= 0)
        close(cfd);
    return rc;
}

/* Build folder k of g in the copy (its fd) renamed to d<k> in the open
 * folder stage, following no link: a folder only (a link left where it
 * is).  *kept 1 when moved. */
static int move_out(int copy, int stage, const struct gate_spec *g, size_t k, int *kept)
{
    char dir[GATES_BUILD_DIR_LEN + 1], leaf[GATES_BUILD_DIR_LEN + 1], name[32];
    struct stat st;
    int pfd, rc = 0;

    *kept = 0;
    split_rel(dir, leaf, g->build_dirs[k]);
    if ((pfd = open_beneath(copy, dir, 0)) < 0)
        return 0; /* no such folder, or a link on the way: not kept */
    snprintf(name, sizeof(name), "d%zu", k); /* truncation: ok, a number fits */
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        if (renameat(pfd, leaf, stage, name) != 0)
            rc = err_set(ERR_IO, "build folder %s: %s", g->build_dirs[k], strerror(errno));
        else
            *kept = 1;
    }
    close(pfd);
    return rc;
}

/* The trusted run's build folders moved from copy into stage (a new
 * folder), their sizes counted; kept/skipped name them. */
static int keep_into(const char *stage, const char *copy, const struct gate_spec *g, cJSON *kept,
                     cJSON *skipped, uint64_t *bytes)
{
    uint64_t cap = warm_cap();
    int sfd = -1, cfd = -1, rc = 0;

    *bytes = 0;
    sfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cfd = open(copy, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0 || cfd < 0) {
        rc = err_set(ERR_IO, "%s: %s", sfd < 0 ? stage : copy, strerror(errno));
        goto out;
    }
    for (size_t k = 0; k < g->n_build_dirs && rc == 0; k++) {
        char name[32];
        uint64_t n = 0;
        int moved = 0;
        if ((rc = move_out(cfd, sfd, g, k, &moved)) != 0)
            break;
        cJSON_AddItemToArray(moved ? kept : skipped, cJSON_CreateString(g->build_dirs[k]));
        snprintf(name, sizeof(name), "d%zu", k); /* truncation: ok, a number fits */
        if (moved && (rc = fs_tree_size_at(sfd, name, cap - *bytes, &n)) == 0)
            *bytes += n;
    }
out:
    if (sfd >= 0)
        close(sfd);
    if (cfd >= 0)
        close(cfd);
    return rc;
}

/* The gate.build_kept event: what the trusted run left (kept) and what
 * it did not (skipped: missing, or not a folder). */
static void kept_event(struct job_ctx *j, const struct gate_spec *g, const struct warm_run *w,
                       cJSON *kept, cJSON *skipped, uint64_t bytes)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "gate", g->name);
    cJSON_AddStringToObject(p, "tree_id", w->start);
    cJSON_AddItemToObject(p, "kept", kept);
    cJSON_AddItemToObject(p, "skipped", skipped);
    cJSON_AddNumberToObject(p, "bytes", (double)bytes);
    job_event_or_warn(j, "gate.build_kept", p);
    cJSON_Delete(p);
}

void verify_warm_keep(const struct warm_run *w, struct job_ctx *j, const struct gate_spec *g,
                      const char *copy, const struct gate_result *r)
{
    static unsigned seq;
    char stage[sizeof(w->dir) + 128];
    cJSON *kept, *skipped;
    uint64_t bytes = 0;
    int rc;

    if (w->mode != WARM_TRUSTED || r->timed_out)
        return; /* a build cut short may leave a half-written object */
    if (snprintf(stage, sizeof(stage), "%s.new-%s-%u", w->dir, j->claim.run_id, seq++) >=
            (int)sizeof(stage) ||
        fs_mkdir_p(stage, 0700) != 0) {
        log_warn("gate %s: build folders not kept: %s", g->name, err_last());
        err_clear();
        return;
    }
    kept = cJSON_CreateArray();
    skipped = cJSON_CreateArray();
    rc = keep_into(stage, copy, g, kept, skipped, &bytes);
    /* written once: a folder another run kept first stays */
    if (rc == 0 && renameat2(AT_FDCWD, stage, AT_FDCWD, w->dir, RENAME_NOREPLACE) != 0)
        rc = err_set(ERR_IO, "%s: %s", w->dir, strerror(errno));
    if (rc != 0) {
        log_warn("gate %s: build folders not kept: %s", g->name, err_last());
        err_clear();
        if (fs_remove_tree(stage) != 0)
            log_warn("%s not removed: %s", stage, err_last());
        cJSON_Delete(kept);
        cJSON_Delete(skipped);
        return;
    }
    kept_event(j, g, w, kept, skipped, bytes);
}
