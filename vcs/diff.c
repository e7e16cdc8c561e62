#include "vcs/diff.h"

#include <stdio.h>
#include <string.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/path.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

int vcs_diff_is_empty(int *empty_out, vcs_worktree *wt)
{
    git_tree *head = NULL;
    git_oid state;
    int rc;

    if ((rc = vcs_head_tree(&head, wt->repo)) != 0)
        return err_wrap(rc, "%s", wt->path);
    if ((rc = vcs_snapshot_tree(&state, wt)) != 0)
        err_wrap(rc, "%s", wt->path);
    else
        *empty_out = git_oid_equal(git_tree_id(head), &state);
    git_tree_free(head);
    return rc;
}

struct print {
    strbuf *out;
    size_t start;
    int rc;
};

/* git_diff_to_buf()'s format, one line at a time. */
static int add_line(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
                    void *arg)
{
    struct print *p = arg;

    (void)d;
    (void)h;
    if ((l->origin == GIT_DIFF_LINE_ADDITION || l->origin == GIT_DIFF_LINE_DELETION ||
         l->origin == GIT_DIFF_LINE_CONTEXT) &&
        (p->rc = strbuf_addc(p->out, l->origin)) != 0)
        return -1;
    if ((p->rc = strbuf_add(p->out, l->content, l->content_len)) != 0)
        return -1;
    return 0;
}

/* HEAD's tree against the working folder itself (not the index): tracked
 * and untracked files, .gitignore honoured, links as links; what
 * vcs_commit_item() would commit.  Nothing is written. */
int vcs_diff_text(strbuf *out, vcs_worktree *wt)
{
    git_tree *head = NULL;
    git_diff *diff = NULL;
    git_diff_options o;
    struct print p;
    size_t cap;
    int rc;

    if ((rc = vcs_head_tree(&head, wt->repo)) != 0)
        return err_wrap(rc, "%s", wt->path);
    if ((rc = vcs_guard_changes(wt->repo)) != 0) {
        err_wrap(rc, "%s", wt->path);
        goto out;
    }
    git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
    o.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
              GIT_DIFF_SHOW_UNTRACKED_CONTENT | GIT_DIFF_INCLUDE_TYPECHANGE;
    /* A file larger than what out may hold is shown as "Binary files
     * differ": libgit2 would load it and keep a record per line only for
     * the print to stop at out's cap (the review keeps 200 KiB: a file at
     * tools.max_file_mb held the job at 3x the cap).  A large buffer (the
     * patch saved before a reset) keeps binary patches, so that it can be
     * applied again. */
    cap = out->cap ? out->cap : STRBUF_DEFAULT_CAP;
    o.max_size = (git_off_t)cap;
    if (cap >= ((size_t)1 << 20))
        o.flags |= GIT_DIFF_SHOW_BINARY;
    if (git_diff_tree_to_workdir(&diff, wt->repo, head, &o) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
        goto out;
    }
    /* streamed into out: the patch never grows past out's cap in memory */
    p.out = out;
    p.start = out->len;
    p.rc = 0;
    if (git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, add_line, &p) < 0) {
        if (p.rc) {
            rc = err_wrap(p.rc, "%s: diff", wt->path);
        } else {
            rc = vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
        }
        out->len = p.start; /* left as it was */
        if (out->buf)
            out->buf[out->len] = '\0';
    }
out:
    git_diff_free(diff);
    git_tree_free(head);
    return rc;
}

/* Whole lines while they fit; the first that does not ends the print. */
static int add_line_fit(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
                        void *arg)
{
    struct print *p = arg;
    size_t need = l->content_len + 1, cap = p->out->cap ? p->out->cap : STRBUF_DEFAULT_CAP;

    if (p->out->len + need + 1 > cap) {
        p->rc = ERR_TOOBIG;
        return -1;
    }
    return add_line(d, h, l, arg);
}

int vcs_diff_commits(strbuf *out, int *cut, vcs_worktree *wt, const char *base_sha)
{
    git_tree *base = NULL, *head = NULL;
    git_diff *diff = NULL;
    git_diff_options o;
    struct print p = {out, out->len, 0};
    int rc;

    *cut = 0;
    if ((rc = vcs_rev_tree_get(&base, wt->repo, base_sha)) != 0 ||
        (rc = vcs_head_tree(&head, wt->repo)) != 0)
        goto out;
    git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
    o.flags = GIT_DIFF_INCLUDE_TYPECHANGE;
    o.max_size = (git_off_t)(out->cap ? out->cap : STRBUF_DEFAULT_CAP);
    if (git_diff_tree_to_tree(&diff, wt->repo, base, head, &o) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
        goto out;
    }
    if (git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, add_line_fit, &p) < 0) {
        if (p.rc == ERR_TOOBIG)
            *cut = 1;
        else
            rc = p.rc ? err_wrap(p.rc, "%s: diff", wt->path)
                      : vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
    }
out:
    git_diff_free(diff);
    git_tree_free(base);
    git_tree_free(head);
    return rc;
}

int vcs_diff_path(strbuf *out, int *cut, const char *repo_path, const char *from_rev,
                  const char *to_rev, const char *path)
{
    git_repository *r = NULL;
    git_tree *a = NULL, *b = NULL;
    git_diff *diff = NULL;
    git_diff_options o;
    struct print p = {out, out->len, 0};
    char *spec[1] = {(char *)path};
    int rc;

    *cut = 0;
    if ((rc = vcs_init()) != 0 || (rc = vcs_repo_open(&r, repo_path)) != 0)
        return rc;
    if ((rc = vcs_rev_tree_get(&a, r, from_rev)) != 0 ||
        (rc = vcs_rev_tree_get(&b, r, to_rev)) != 0)
        goto out;
    git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
    o.flags = GIT_DIFF_DISABLE_PATHSPEC_MATCH;
    o.pathspec.strings = spec;
    o.pathspec.count = 1;
    o.max_size = (git_off_t)(out->cap ? out->cap : STRBUF_DEFAULT_CAP);
    if (git_diff_tree_to_tree(&diff, r, a, b, &o) < 0) {
        rc = vcs_git_err(ERR_FAIL, "diff %s", path);
        goto out;
    }
    if (git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, add_line_fit, &p) < 0) {
        if (p.rc == ERR_TOOBIG)
            *cut = 1;
        else
            rc = p.rc ? p.rc : vcs_git_err(ERR_FAIL, "diff %s", path);
    }
out:
    git_diff_free(diff);
    git_tree_free(a);
    git_tree_free(b);
    git_repository_free(r);
    return rc;
}

/* Make the worktree again from its branch: the folder is removed without
 * following any link (fs_remove_tree), the registration pruned, and a
 * fresh checkout made, so nothing goald writes can land outside it. */
static int rebuild(vcs_worktree *wt)
{
    vcs_worktree *fresh = NULL;
    char branch[256];
    int rc;

    if (path_fmt(branch, sizeof(branch), "%s", vcs_worktree_branch(wt)) != 0)
        return err_wrap(ERR_INVALID, "%s: the branch's name", wt->path);
    if (!*branch)
        return err_set(ERR_INVALID, "%s: HEAD is not on a branch (or its name is over %zu bytes)",
                       wt->path, sizeof(branch) - 1);
    if ((rc = vcs_worktree_remove(wt->repo_path, wt->path)) != 0 ||
        (rc = vcs_worktree_create(&fresh, wt->repo_path, NULL, branch, wt->path)) != 0)
        return err_wrap(rc, "%s: reset", wt->path);
    git_repository_free(wt->repo);
    wt->repo = fresh->repo;
    fresh->repo = NULL;
    vcs_worktree_free(fresh);
    return 0;
}

int vcs_worktree_reset(int *saved_out, vcs_worktree *wt, const char *patch_path)
{
    strbuf patch = STRBUF_INIT;
    char dir[4096];
    int rc = 0;

    if (saved_out)
        *saved_out = 0;
    if (patch_path) {
        /* every file the guard lets through (up to tools.max_file_mb) fits
         * in the patch as data: a file over the buffer's cap would be saved
         * as "Binary files differ", and deleted by the reset as if saved */
        size_t cap = (size_t)config_int(CFG_TOOLS_MAX_FILE_MB) << 21;
        cap += (size_t)1 << 20;
        strbuf_init(&patch, cap > STRBUF_DEFAULT_CAP ? cap : STRBUF_DEFAULT_CAP);
        rc = vcs_diff_text(&patch, wt);
        if (rc == ERR_TOOBIG || rc == ERR_POLICY) {
            /* too large (or unsafe) to save: the reset must still happen,
             * or every retry would start from the same wedged state */
            if (saved_out)
                *saved_out = -1;
            rc = 0;
        } else if (rc) {
            goto out;
        } else if (patch.len && (!strncmp(patch.buf, "Binary files ", 13) ||
                                 strstr(patch.buf, "\nBinary files "))) {
            /* a binary change without its data cannot be applied again:
             * not saved, whatever is written */
            if (saved_out)
                *saved_out = -1;
        } else if (patch.len) {
            if ((rc = fs_dirname(dir, sizeof(dir), patch_path)) != 0 ||
                (rc = fs_mkdir_p(dir, 0700)) != 0 ||
                (rc = fs_write_atomic(patch_path, patch.buf, patch.len, 0600)) != 0) {
                err_wrap(rc, "saving the patch before reset");
                goto out;
            }
            if (saved_out)
                *saved_out = 1;
        }
    }
    rc = rebuild(wt);
out:
    strbuf_release(&patch);
    return rc;
}

/* The patch applied in memory to HEAD's tree: the tree it makes. */
static int patched_tree(git_tree **out, vcs_worktree *wt, const strbuf *patch)
{
    git_diff *diff = NULL;
    git_tree *head = NULL;
    git_index *idx = NULL;
    git_oid oid;
    int rc;

    *out = NULL;
    if (git_diff_from_buffer(&diff, patch->buf, patch->len) < 0)
        return vcs_git_err(ERR_INVALID, "the saved patch does not parse");
    if ((rc = vcs_head_tree(&head, wt->repo)) != 0)
        goto out;
    if (git_apply_to_tree(&idx, wt->repo, head, diff, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "the saved patch does not apply to the item's start");
        goto out;
    }
    if (git_index_write_tree_to(&oid, idx, wt->repo) < 0 ||
        git_tree_lookup(out, wt->repo, &oid) < 0)
        rc = vcs_git_err(ERR_IO, "%s: tree", wt->path);
out:
    git_index_free(idx);
    git_tree_free(head);
    git_diff_free(diff);
    return rc;
}

int vcs_worktree_apply(vcs_worktree *wt, const char *patch_path)
{
    strbuf patch;
    git_tree *tree = NULL;
    int empty = 0, rc;

    strbuf_init(&patch, (size_t)64 << 20);
    if ((rc = vcs_diff_is_empty(&empty, wt)) != 0)
        goto out;
    if (!empty) {
        rc = err_set(ERR_FAIL, "%s: the worktree has changes; a patch applies to a clean one",
                     wt->path);
        goto out;
    }
    if ((rc = fs_read_file(&patch, patch_path, patch.cap - 1)) != 0 ||
        (rc = patched_tree(&tree, wt, &patch)) != 0)
        goto out;
    rc = vcs_checkout_changes(wt, tree);
out:
    git_tree_free(tree);
    strbuf_release(&patch);
    return rc;
}

int vcs_checkout_changes(struct vcs_worktree *wt, git_tree *tree)
{
    git_tree *head = NULL;
    git_index *index = NULL;
    git_checkout_options co;
    int rc = 0;

    /* the files written by libgit2's checkout (links as links, paths
     * checked as for any checkout); HEAD stays where it is */
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_SAFE;
    if (git_checkout_tree(wt->repo, (const git_object *)tree, &co) < 0)
        return vcs_git_err(ERR_IO, "%s: checkout of the changed tree", wt->path);
    /* the index back at HEAD: the changes are the worktree's, uncommitted */
    if ((rc = vcs_head_tree(&head, wt->repo)) != 0)
        goto out;
    if (git_repository_index(&index, wt->repo) < 0 || git_index_read_tree(index, head) < 0 ||
        git_index_write(index) < 0)
        rc = vcs_git_err(ERR_IO, "%s: index", wt->path);
out:
    git_index_free(index);
    git_tree_free(head);
    return rc;
}

