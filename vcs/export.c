#include "vcs/export.h"

#include <git2.h>
#include <string.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

int vcs_export(const char *repo_path, const char *rev, const char *dir)
{
    git_repository *repo = NULL;
    git_object *obj = NULL;
    git_checkout_options opts;
    const git_error *e;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
    if ((rc = fs_mkdir_p(dir, 0700)) != 0)
        return rc;
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        goto out;
    if (git_revparse_single(&obj, repo, rev) < 0) {
        rc = err_set(ERR_NOTFOUND, "%s: no revision \"%s\"", repo_path, rev);
        goto out;
    }
    opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
    opts.target_directory = dir;
    if (git_checkout_tree(repo, obj, &opts) < 0) {
        e = git_error_last();
        rc = err_set(ERR_IO, "export %s to %s: %s", rev, dir, e ? e->message : "checkout failed");
    }
out:
    git_object_free(obj);
    git_repository_free(repo);
    return rc;
}
