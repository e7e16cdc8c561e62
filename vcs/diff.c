#include "vcs/diff.h"

#include <string.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "vcs/internal.h"

/* HEAD's tree and the tree of the working folder as it would be
 * committed; the on-disk index is not changed. */
static int both_trees(git_tree **head, git_tree **state, vcs_worktree *wt)
{
    git_oid id;
    int rc;

    *head = *state = NULL;
    if ((rc = vcs_head_tree(head, wt->repo)) != 0)
        return err_wrap(rc, "%s", wt->path);
    if ((rc = vcs_stage_all(&id, wt->repo, 0)) != 0)
        return err_wrap(rc, "%s", wt->path);
    if (git_tree_lookup(state, wt->repo, &id) < 0)
        return vcs_git_err(ERR_FAIL, "%s: working tree", wt->path);
    return 0;
}

int vcs_diff_is_empty(int *empty_out, vcs_worktree *wt)
{
    git_tree *head = NULL, *state = NULL;
    int rc = both_trees(&head, &state, wt);

    if (rc == 0)
        *empty_out = git_oid_equal(git_tree_id(head), git_tree_id(state));
    git_tree_free(head);
    git_tree_free(state);
    return rc;
}

/* Each line of the patch straight into the capped strbuf; past its cap the
 * print stops (printing the whole patch into a git_buf first held a
 * model-sized file several times over just to keep 200 KiB of it). */
struct printer {
    strbuf *out;
    int toobig;
};

static int print_line(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
                      void *arg)
{
    struct printer *p = arg;

    (void)d;
    (void)h;
    if (l->origin == GIT_DIFF_LINE_CONTEXT || l->origin == GIT_DIFF_LINE_ADDITION ||
        l->origin == GIT_DIFF_LINE_DELETION) {
        char c = l->origin;
        if (strbuf_add(p->out, &c, 1) != 0)
            return p->toobig = 1, -1;
    }
    if (strbuf_add(p->out, l->content, l->content_len) != 0)
        return p->toobig = 1, -1;
    return 0;
}

int vcs_diff_text(strbuf *out, vcs_worktree *wt)
{
    git_tree *head = NULL, *state = NULL;
    git_diff *diff = NULL;
    git_diff_options o;
    struct printer pr = {out, 0};
    size_t start = out->len;
    int rc, grc;

    if ((rc = both_trees(&head, &state, wt)) != 0)
        goto out;
    git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
    o.flags = GIT_DIFF_SHOW_BINARY;
    if (git_diff_tree_to_tree(&diff, wt->repo, head, state, &o) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
        goto out;
    }
    grc = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, print_line, &pr);
    if (pr.toobig || grc < 0)
        strbuf_setlen(out, start); /* all or nothing, as before */
    if (pr.toobig)
        rc = err_set(ERR_TOOBIG, "%s: diff: larger than %zu bytes", wt->path,
                     out->cap ? out->cap : STRBUF_DEFAULT_CAP);
    else if (grc < 0)
        rc = vcs_git_err(ERR_FAIL, "%s: diff", wt->path);
out:
    git_diff_free(diff);
    git_tree_free(head);
    git_tree_free(state);
    return rc;
}

int vcs_worktree_reset(int *saved_out, vcs_worktree *wt, const char *patch_path)
{
    strbuf patch = STRBUF_INIT;
    git_object *head = NULL;
    git_checkout_options co;
    char dir[4096];
    int rc = 0;

    if (saved_out)
        *saved_out = 0;
    if (patch_path) {
        if ((rc = vcs_diff_text(&patch, wt)) != 0)
            goto out;
        if (patch.len) {
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
    if (git_revparse_single(&head, wt->repo, "HEAD^{commit}") < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "%s: HEAD", wt->path);
        goto out;
    }
    /* FORCE: overwrite every change; REMOVE_UNTRACKED: `git clean -fd`
     * (ignored files are not untracked files for libgit2, so they stay).
     * git_reset() resets the index and the tracked files but keeps
     * untracked ones whatever the strategy, so a forced checkout of HEAD
     * follows it. */
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
    if (git_reset(wt->repo, head, GIT_RESET_HARD, &co) < 0 ||
        git_checkout_head(wt->repo, &co) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: reset", wt->path);
        goto out;
    }
out:
    git_object_free(head);
    strbuf_release(&patch);
    return rc;
}
