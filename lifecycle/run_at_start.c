/*
 * run_at_start.c - the run_at_start tool (run_at_start.h): "run the new
 * tests against the old code".
 *
 * Top to bottom: each file named is checked as hostile input (relative,
 * no "..", no git metadata, no link on the way or at the end, a regular
 * file within tools.max_file_mb) (start_path); the tree laid over is the
 * item's start commit with those files as the worktree holds them
 * (vcs_tree_restore on the worktree's stored snapshot: nothing is read
 * from the folder itself); the command runs on that tree through
 * verification's gate copy (verify_run_on_tree: exported beside the
 * database, bound at the worktree's path in the sandbox, removed after);
 * the result goes to the model and into an event.
 */
#include "lifecycle/run_at_start.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "lifecycle/verify_internal.h"
#include "lifecycle/workspace.h"
#include "sandbox/path.h"
#include "tools/tool.h"
#include "util/config.h"
#include "util/err.h"
#include "util/path.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

#define START_FILES 20
#define START_PATH_MAX 1024
#define START_SHOWN 8000 /* bytes of the output's tail shown */
#define START_EVENT_TAIL 2000

/* rel's components from the worktree's root: folders that are no links,
 * then a regular file that is no link, within the file cap.  0, or -1
 * with the reason in why. */
static int walk_beneath(const char *root, const char *rel, char *why, size_t n)
{
    char part[START_PATH_MAX];
    const char *p = rel;
    int dfd = -1, rc = -1;
    struct stat st;

    if (path_open_root(&dfd, root) != 0) {
        snprintf(why, n, "%s", err_last()); /* truncation: ok, a message */
        err_clear();
        return -1;
    }
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        int next;
        if (path_fmt(part, sizeof(part), "%.*s", (int)len, p) != 0) {
            err_clear();
            snprintf(why, n, "a path too long"); /* truncation: ok, a message */
            break;
        }
        if (fstatat(dfd, part, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(why, n, "not in the worktree"); /* truncation: ok, a message */
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            /* truncation: ok, a message */
            snprintf(why, n, "%.200s is a symbolic link: links are not laid over", part);
            break;
        }
        if (!slash) {
            if (!S_ISREG(st.st_mode))
                snprintf(why, n, "not a regular file"); /* truncation: ok, a message */
            else if ((uint64_t)st.st_size > (uint64_t)config_int(CFG_TOOLS_MAX_FILE_MB) << 20)
                snprintf(why, n, "larger than tools.max_file_mb"); /* truncation: ok, a message */
            else
                rc = 0;
            break;
        }
        if (!S_ISDIR(st.st_mode) ||
            (next = openat(dfd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            snprintf(why, n, "%.200s is not a folder", part); /* truncation: ok, a message */
            break;
        }
        close(dfd);
        dfd = next;
        p = slash + 1;
    }
    close(dfd);
    return rc;
}

/* One file argument p checked into rel.  0, or -1 with res failed. */
static int start_path(char *rel, size_t n, const char *root, const char *p,
                      struct tool_result *res)
{
    char why[256] = "";
    enum tool_class cls = TOOL_POLICY;

    if (!*p || strlen(p) >= n) {
        cls = TOOL_VALIDATION;
        snprintf(why, sizeof(why), "an empty or too long path"); /* truncation: ok, a message */
    } else if (p[0] == '/') {
        /* truncation: ok, a message */
        snprintf(why, sizeof(why), "an absolute path; name files relative to the worktree's "
                                   "root");
    } else if (path_has_git(p)) {
        snprintf(why, sizeof(why), "git metadata is refused"); /* truncation: ok, a message */
    } else {
        for (const char *c = p; c && *c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL)
            if (!strncmp(c, "..", 2) && (c[2] == '/' || !c[2]))
                snprintf(why, sizeof(why), "\"..\" is refused"); /* truncation: ok, a message */
    }
    if (!why[0] && (path_rel(rel, n, root, p) != 0 || !strcmp(rel, "."))) {
        err_clear();
        snprintf(why, sizeof(why), "not a file path"); /* truncation: ok, a message */
    }
    if (!why[0] && walk_beneath(root, rel, why, sizeof(why)) == 0)
        return 0;
    tool_fail(res, cls, "run_at_start: %s: %s", p, why);
    return -1;
}

/* The files of the tree over that differ from the start, into out. */
static void laid_over(strbuf *out, const struct job_ctx *j, const char *start, const char *over,
                      size_t asked)
{
    struct vcs_tree_change *ch = NULL;
    size_t nch = 0;

    if (vcs_tree_changes(&ch, &nch, j->repo, start, over) != 0) {
        err_clear();
        return;
    }
    strbuf_addf_cut(out, "laid over (differ from the start): ");
    for (size_t i = 0; i < nch; i++)
        strbuf_addf_cut(out, "%s%s (%s)", i ? ", " : "", ch[i].path,
                        ch[i].status == 'A' ? "new" : ch[i].status == 'D' ? "gone" : "changed");
    if (!nch)
        strbuf_adds_cut(out, "none");
    if (nch < asked)
        strbuf_addf_cut(out, "; %zu of the files named are as they were at the start",
                        asked - nch);
    strbuf_adds_cut(out, "\n");
    vcs_tree_changes_free(ch, nch);
}

/* The result for the model and the event. */
static void report(struct tool_result *res, struct job_ctx *j, const struct gate_result *r,
                   const char *start, const cJSON *files)
{
    const char *t = r->output_tail ? r->output_tail : "";
    size_t len = strlen(t);
    size_t from = utf8_cut_forward(t, len > START_SHOWN ? len - START_SHOWN : 0, len);
    size_t efrom = utf8_cut_forward(t, len > START_EVENT_TAIL ? len - START_EVENT_TAIL : 0, len);
    cJSON *p = cJSON_CreateObject();

    strbuf_addf_cut(&res->output, "exit %d%s, %lld ms, on the item's start %.12s\n",
                    r->exit_code, r->timed_out ? " (timed out)" : "",
                    (long long)r->duration_ms, start);
    strbuf_addf_cut(&res->output, "--- output (last %zu bytes) ---\n%s\n---\n", len - from,
                    t + from);
    res->ok = 1;
    res->exit_code = r->exit_code;
    cJSON_AddStringToObject(p, "start", start);
    cJSON_AddItemToObject(p, "files", cJSON_Duplicate(files, 1));
    cJSON_AddNumberToObject(p, "exit_code", r->exit_code);
    cJSON_AddBoolToObject(p, "timed_out", r->timed_out);
    cJSON_AddNumberToObject(p, "duration_ms", (double)r->duration_ms);
    cJSON_AddStringToObject(p, "output_hash", r->output_hash);
    cJSON_AddStringToObject(p, "output_tail", t + efrom); /* redacted by the gate run */
    job_event_or_warn(j, "run_at_start.completed", p);
    cJSON_Delete(p);
}

int run_at_start(struct job_ctx *j, struct workspace *ws, const cJSON *args,
                 struct tool_result *res)
{
    const char *command = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "command"));
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(args, "files");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(args, "timeout_s");
    char rels[START_FILES][START_PATH_MAX];
    const char *paths[START_FILES];
    char start[VCS_OID_HEX], tree[VCS_OID_HEX] = "", over[VCS_OID_HEX];
    struct gate_spec spec = {.name = "run_at_start", .type = "custom", .must_pass = 1};
    struct gates_ctx gc = {.goal_id = j->goal->id,       .item_id = j->item->id,
                           .run_id = j->claim.run_id,    .git_common = ws->git_common,
                           .git_dir = ws->git_dir};
    struct gate_result r;
    const cJSON *it;
    size_t n = 0;
    int rc;

    if (!ws->wt || !j->repo)
        return tool_fail(res, TOOL_POLICY, "run_at_start: the goal has no git repository: "
                                           "there is no start to run on");
    if (!command || !*command)
        return tool_fail(res, TOOL_VALIDATION, "run_at_start: command: expected a command");
    if (cJSON_GetArraySize(files) > START_FILES)
        return tool_fail(res, TOOL_VALIDATION, "run_at_start: files: at most %d",
                         START_FILES);
    cJSON_ArrayForEach(it, files)
    {
        if (!cJSON_IsString(it))
            return tool_fail(res, TOOL_VALIDATION, "run_at_start: files: expected strings");
        if (start_path(rels[n], sizeof(rels[n]), ws->root, it->valuestring, res) != 0)
            return 0;
        paths[n] = rels[n];
        n++;
    }
    if (vcs_worktree_head(start, ws->wt) != 0)
        return tool_fail(res, TOOL_IO, "run_at_start: the item's start: %s", err_last());
    if ((rc = workspace_store(ws, tree, sizeof(tree))) != 0 ||
        (rc = vcs_tree_restore(over, j->repo, start, tree, paths, n)) != 0)
        return tool_fail(res, rc == ERR_TOOBIG || rc == ERR_POLICY ? TOOL_POLICY : TOOL_IO,
                         "run_at_start: the tree to run on: %s", err_last());
    laid_over(&res->output, j, start, over, n);
    spec.command = (char *)command;
    spec.timeout_s = cJSON_IsNumber(to) ? (int)to->valuedouble : 300;
    if ((rc = verify_run_on_tree(j, ws, &gc, &spec, over, &r)) != 0) {
        gate_result_release(&r);
        return tool_fail(res, rc == ERR_POLICY ? TOOL_POLICY : TOOL_IO, "run_at_start: %s",
                         err_last());
    }
    report(res, j, &r, start, files);
    gate_result_release(&r);
    return 0;
}
