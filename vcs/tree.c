#include "vcs/tree.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

static int open_repo(git_repository **r, const char *repo_path)
{
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if ((rc = vcs_repo_open(r, repo_path)) != 0)
        return rc;
    return 0;
}

int vcs_rev_tree_get(git_tree **out, git_repository *r, const char *rev)
{
    git_object *obj = NULL;
    int rc = 0;

    if (git_revparse_single(&obj, r, rev) < 0) {
        git_error_clear();
        return err_set(ERR_NOTFOUND, "no revision \"%s\"", rev);
    }
    if (git_object_peel((git_object **)out, obj, GIT_OBJECT_TREE) < 0)
        rc = vcs_git_err(ERR_NOTFOUND, "%s: no tree", rev);
    git_object_free(obj);
    return rc;
}

/* The object of type what rev names, peeled (a commit's tree), as hex. */
static int rev_peel(char out[VCS_OID_HEX], const char *repo_path, const char *rev,
                    git_object_t what)
{
    git_repository *r = NULL;
    git_object *obj = NULL, *c = NULL;
    int rc;

    if ((rc = open_repo(&r, repo_path)) != 0)
        return rc;
    if (git_revparse_single(&obj, r, rev) < 0 || git_object_peel(&c, obj, what) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "%s: no %s \"%s\"", repo_path,
                     what == GIT_OBJECT_TREE ? "tree" : "commit", rev);
        goto out;
    }
    git_oid_tostr(out, VCS_OID_HEX, git_object_id(c));
out:
    git_object_free(c);
    git_object_free(obj);
    git_repository_free(r);
    return rc;
}

int vcs_rev_commit(char out[VCS_OID_HEX], const char *repo_path, const char *rev)
{
    return rev_peel(out, repo_path, rev, GIT_OBJECT_COMMIT);
}

int vcs_rev_tree(char out[VCS_OID_HEX], const char *repo_path, const char *rev)
{
    return rev_peel(out, repo_path, rev, GIT_OBJECT_TREE);
}

void vcs_tree_changes_free(struct vcs_tree_change *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].path);
    free(v);
}

int vcs_tree_changes(struct vcs_tree_change **out, size_t *n, const char *repo_path,
                     const char *base_rev, const char *tree_sha)
{
    git_repository *r = NULL;
    git_tree *a = NULL, *b = NULL;
    git_diff *d = NULL;
    git_diff_options o;
    struct vcs_tree_change *v = NULL;
    size_t k = 0, nd;
    int rc;

    *out = NULL;
    *n = 0;
    git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
    if ((rc = open_repo(&r, repo_path)) != 0)
        return rc;
    if ((rc = vcs_rev_tree_get(&a, r, base_rev)) != 0 || (rc = vcs_rev_tree_get(&b, r, tree_sha)) != 0)
        goto out;
    if (git_diff_tree_to_tree(&d, r, a, b, &o) < 0) {
        rc = vcs_git_err(ERR_IO, "diff %s %s", base_rev, tree_sha);
        goto out;
    }
    nd = git_diff_num_deltas(d);
    v = xcalloc(nd + 1, sizeof(*v));
    for (size_t i = 0; i < nd; i++) {
        const git_diff_delta *dl = git_diff_get_delta(d, i);
        const char *p = dl->new_file.path ? dl->new_file.path : dl->old_file.path;
        v[k].status = dl->status == GIT_DELTA_ADDED     ? 'A'
                      : dl->status == GIT_DELTA_DELETED ? 'D'
                                                        : 'M';
        v[k].path = xstrdup(p ? p : "");
        k++;
    }
    *out = v;
    *n = k;
    v = NULL;
out:
    vcs_tree_changes_free(v, k);
    git_diff_free(d);
    git_tree_free(a);
    git_tree_free(b);
    git_repository_free(r);
    return rc;
}

int vcs_tree_restore(char out[VCS_OID_HEX], const char *repo_path, const char *tree_sha,
                     const char *base_rev, const char *const *paths, size_t n)
{
    git_repository *r = NULL;
    git_tree *now = NULL, *base = NULL;
    git_index *idx = NULL;
    git_oid oid;
    int rc;

    if ((rc = open_repo(&r, repo_path)) != 0)
        return rc;
    if ((rc = vcs_rev_tree_get(&now, r, tree_sha)) != 0 || (rc = vcs_rev_tree_get(&base, r, base_rev)) != 0)
        goto out;
    if (git_index_new(&idx) < 0 || git_index_read_tree(idx, now) < 0) {
        rc = vcs_git_err(ERR_IO, "index of %s", tree_sha);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        git_tree_entry *e = NULL;
        if (git_tree_entry_bypath(&e, base, paths[i]) < 0) {
            git_error_clear(); /* absent at the base: the addition goes */
            if (git_index_remove(idx, paths[i], 0) < 0)
                git_error_clear(); /* not in tree_sha either */
            continue;
        }
        if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
            git_index_entry ie;
            memset(&ie, 0, sizeof(ie));
            ie.mode = git_tree_entry_filemode(e);
            ie.id = *git_tree_entry_id(e);
            ie.path = paths[i];
            if (git_index_add(idx, &ie) < 0) {
                git_tree_entry_free(e);
                rc = vcs_git_err(ERR_IO, "restore %s", paths[i]);
                goto out;
            }
        }
        git_tree_entry_free(e);
    }
    if (git_index_write_tree_to(&oid, idx, r) < 0) {
        rc = vcs_git_err(ERR_IO, "write tree");
        goto out;
    }
    git_oid_tostr(out, VCS_OID_HEX, &oid);
out:
    git_index_free(idx);
    git_tree_free(now);
    git_tree_free(base);
    git_repository_free(r);
    return rc;
}

int vcs_stage_all(git_oid *tree_out, git_repository *repo, int persist)
{
    git_index *idx = NULL;
    int rc = 0;

    if (git_repository_index(&idx, repo) < 0)
        return vcs_git_err(ERR_FAIL, "cannot open the index");
    /* start from what is on disk, not from a cached in-memory state */
    if (git_index_read(idx, 1) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot read the index");
        goto out;
    }
    /* add_all: new and modified files, .gitignore honoured for untracked
     * ones; update_all: drops entries whose files were deleted */
    if (git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, NULL, NULL) < 0 ||
        git_index_update_all(idx, NULL, NULL, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot stage the changes");
        goto out;
    }
    if (git_index_write_tree(tree_out, idx) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot write the tree");
        goto out;
    }
    if (persist ? git_index_write(idx) < 0 : git_index_read(idx, 1) < 0) {
        rc = vcs_git_err(ERR_FAIL, "cannot %s the index", persist ? "write" : "reload");
        goto out;
    }
out:
    if (rc && idx)
        git_index_read(idx, 1); /* never leave half-staged state in memory */
    git_index_free(idx);
    return rc;
}

int vcs_head_tree(git_tree **tree_out, git_repository *repo)
{
    git_object *obj = NULL;
    int rc = 0;

    if (git_revparse_single(&obj, repo, "HEAD^{tree}") < 0)
        return vcs_git_err(ERR_NOTFOUND, "HEAD has no commit");
    *tree_out = (git_tree *)obj;
    return rc;
}
