#include "vcs/export.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fsutil.h"
#include "util/path.h"
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

/* The times pass of vcs_export_times: the folder of the last file, kept
 * open while the walk stays in it. */
struct stamp {
    int root;            /* the export */
    int dir;             /* the open folder of path `at`, or -1 */
    char at[4096];       /* its path relative to the export ("" the export) */
    git_tree *same;      /* NULL: every file is stamped */
    struct timespec ts[2];
    int rc;
};

/* Open the folder rel (a tree's path, ending in '/', or "") beneath
 * s->root one component at a time, never through a link, into s->dir. */
static int stamp_enter(struct stamp *s, const char *rel)
{
    char comp[4096];
    int fd = dup(s->root);

    if (s->dir >= 0)
        close(s->dir);
    s->dir = -1;
    /* truncation: ok, a cut name only makes the next file open its folder again */
    snprintf(s->at, sizeof(s->at), "%s", rel);
    while (fd >= 0 && *rel) {
        const char *slash = strchr(rel, '/');
        size_t n = slash ? (size_t)(slash - rel) : strlen(rel);
        int next;
        if (n >= sizeof(comp))
            n = sizeof(comp) - 1;
        memcpy(comp, rel, n);
        comp[n] = '\0';
        next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
        rel += n + (slash ? 1 : 0);
    }
    if (fd < 0)
        return err_set(ERR_IO, "the export's folder %s: %s", s->at, strerror(errno));
    s->dir = fd;
    return 0;
}

/* The file entry e of folder root in the tree, stamped with the old time
 * when the same tree has it at the same path with the same blob and mode. */
static int stamp_entry(const char *root, const git_tree_entry *e, void *arg)
{
    struct stamp *s = arg;
    const char *name = git_tree_entry_name(e);
    char path[4096 + 256];

    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB)
        return 0;
    if (s->same) {
        git_tree_entry *o = NULL;
        int same;
        if (path_fmt(path, sizeof(path), "%s%s", root, name) != 0) {
            err_clear(); /* too long to look up: taken as changed, the run's time */
            return 0;
        }
        if (git_tree_entry_bypath(&o, s->same, path) != 0)
            return 0; /* new since */
        same = git_oid_equal(git_tree_entry_id(o), git_tree_entry_id(e)) &&
               git_tree_entry_filemode(o) == git_tree_entry_filemode(e);
        git_tree_entry_free(o);
        if (!same)
            return 0;
    }
    if ((s->dir < 0 || strcmp(s->at, root) != 0) && (s->rc = stamp_enter(s, root)) != 0)
        return -1;
    if (utimensat(s->dir, name, s->ts, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
        s->rc = err_set(ERR_IO, "the export's %s%s: times: %s", root, name, strerror(errno));
        return -1;
    }
    return 0;
}

/* The tree rev names in repo into out. */
static int rev_tree(git_tree **out, git_repository *repo, const char *rev)
{
    git_object *obj = NULL;
    int rc = 0;

    if (git_revparse_single(&obj, repo, rev) < 0 ||
        git_object_peel((git_object **)out, obj, GIT_OBJECT_TREE) < 0)
        rc = err_set(ERR_NOTFOUND, "no tree \"%s\"", rev);
    git_object_free(obj);
    return rc;
}

int vcs_export_times(const char *repo_path, const char *rev, const char *same, const char *dir,
                     time_t old)
{
    git_repository *repo = NULL;
    git_tree *tree = NULL;
    struct stamp s;
    int rc;

    memset(&s, 0, sizeof(s));
    s.dir = -1;
    s.ts[0].tv_nsec = UTIME_OMIT;
    s.ts[1].tv_sec = old;
    if ((rc = vcs_init()) != 0)
        return rc;
    s.root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s.root < 0)
        return err_set(ERR_IO, "export %s: %s", dir, strerror(errno));
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0 || (rc = rev_tree(&tree, repo, rev)) != 0 ||
        (same && (rc = rev_tree(&s.same, repo, same)) != 0))
        goto out;
    if (git_tree_walk(tree, GIT_TREEWALK_PRE, stamp_entry, &s) != 0)
        rc = s.rc ? s.rc : err_set(ERR_IO, "export %s: walking %s", dir, rev);
out:
    if (s.dir >= 0)
        close(s.dir);
    close(s.root);
    git_tree_free(s.same);
    git_tree_free(tree);
    git_repository_free(repo);
    return rc;
}
