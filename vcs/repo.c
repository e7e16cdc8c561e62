#include "vcs/repo.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/path.h"
#include "vcs/internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void vcs_shutdown(void)
{
    git_libgit2_shutdown();
}

static void init_libgit2(void)
{
    if (git_libgit2_init() < 0) {
        init_rc = -1;
        return;
    }
    atexit(vcs_shutdown);
}

/* Once per process, from any thread (the daemon's lanes share it). */
int vcs_init(void)
{
    pthread_once(&init_once, init_libgit2);
    if (init_rc)
        return err_set(ERR_FAIL, "libgit2: cannot initialise");
    return 0;
}

/* The first of path and path/.git whose owner is not us (its uid into
 * *owner), else 0. */
static int foreign_owner(const char *path, uid_t *owner)
{
    char git[4200];
    struct stat st;

    if (stat(path, &st) == 0 && st.st_uid != geteuid()) {
        *owner = st.st_uid;
        return 1;
    }
    if (snprintf(git, sizeof(git), "%s/.git", path) < (int)sizeof(git) && stat(git, &st) == 0 &&
        st.st_uid != geteuid()) {
        *owner = st.st_uid;
        return 1;
    }
    return 0;
}

/* "uid N (name)" or "uid N" when the user database has no name. */
static void uid_text(char *out, size_t n, uid_t uid)
{
    struct passwd pw, *res = NULL;
    char buf[1024];

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_name)
        snprintf(out, n, "uid %u, %s", (unsigned)uid, res->pw_name); /* truncation: ok, a message */
    else
        snprintf(out, n, "uid %u", (unsigned)uid); /* truncation: ok, a message */
}

int vcs_repo_open_err(int code, const char *path)
{
    char me[300], git[4200];
    uid_t owner = 0;

    uid_text(me, sizeof(me), geteuid());
    if (path_fmt(git, sizeof(git), "%s/.git", path) != 0)
        return err_wrap(ERR_INVALID, "a repository's .git");
    /* libgit2 1.5 returns its ownership refusal as GIT_ENOTFOUND ("config
     * value 'safe.directory' was not found") when no safe.directory is
     * set: a .git owned by someone else that libgit2 would not open is
     * that refusal too */
    if (code == GIT_ENOTFOUND && foreign_owner(path, &owner) && access(git, F_OK) == 0)
        code = GIT_EOWNER;
    if (code == GIT_EOWNER && foreign_owner(path, &owner))
        return err_set(ERR_INVALID,
                       "%s is owned by uid %u, not by the user running goald (%s): make that "
                       "user its owner (chown -R) or add it to that user's safe.directory "
                       "(git config --global --add safe.directory %s)",
                       path, (unsigned)owner, me, path);
    if (code == GIT_EOWNER)
        return err_set(ERR_INVALID,
                       "%s: libgit2 refused it as not owned by the user running goald (%s): "
                       "make that user its owner (chown -R) or add it to that user's "
                       "safe.directory (git config --global --add safe.directory %s)",
                       path, me, path);
    if ((faccessat(AT_FDCWD, path, R_OK | X_OK, AT_EACCESS) != 0 && errno == EACCES) ||
        (faccessat(AT_FDCWD, git, R_OK | X_OK, AT_EACCESS) != 0 && errno == EACCES))
        return err_set(ERR_INVALID,
                       "%s: the user running goald (%s) cannot read it: make that user its "
                       "owner (chown -R) or give it read and write access",
                       path, me);
    return err_set(ERR_NOTFOUND, "not a git repository: %s", path);
}

int vcs_branch_name_valid(const char *name)
{
    char ref[512];
    int valid = 0;

    if (vcs_init() != 0)
        return 0;
    if (snprintf(ref, sizeof(ref), "refs/heads/%s", name) >= (int)sizeof(ref))
        return 0;
    if (git_reference_name_is_valid(&valid, ref) < 0)
        return 0;
    return valid;
}

int vcs_branch_name_for_goal(char *out, size_t n, const char *title, const char *goal_id)
{
    char slug[41], id8[9];
    size_t s = 0, k = 0;
    int w;

    for (const char *p = title ? title : ""; *p && s < sizeof(slug) - 1; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            slug[s++] = (char)c;
        else if (c >= 'A' && c <= 'Z')
            slug[s++] = (char)(c - 'A' + 'a');
        else if (s > 0 && slug[s - 1] != '-')
            slug[s++] = '-';
    }
    while (s > 0 && slug[s - 1] == '-')
        s--;
    slug[s] = '\0';
    for (const char *p = goal_id ? goal_id : ""; *p && k < 8; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            id8[k++] = (char)c;
        else if (c >= 'A' && c <= 'Z')
            id8[k++] = (char)(c - 'A' + 'a');
    }
    id8[k] = '\0';
    if (k == 0)
        return err_set(ERR_INVALID, "branch name: goal id \"%s\" has no letters or digits",
                       goal_id ? goal_id : "");
    w = snprintf(out, n, "goald/%s-%s", s ? slug : "goal", id8);
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "branch name: buffer too small");
    return 0;
}

/* The local branches of repo into out (n bytes), ", " between them,
 * "none" when it has none; cut with "..." when they do not fit. */
static void branch_list(char *out, size_t n, git_repository *repo)
{
    git_branch_iterator *it = NULL;
    git_reference *ref = NULL;
    git_branch_t type;
    size_t len = 0;

    snprintf(out, n, "none"); /* truncation: ok, a message */
    if (git_branch_iterator_new(&it, repo, GIT_BRANCH_LOCAL) < 0)
        return;
    while (git_branch_next(&ref, &type, it) == 0) {
        const char *name = git_reference_shorthand(ref);
        int w = snprintf(out + len, n - len, "%s%s", len ? ", " : "", name);
        git_reference_free(ref);
        if (w < 0 || (size_t)w >= n - len) {
            if (n > 4)
                memcpy(out + n - 4, "...", 4);
            break;
        }
        len += (size_t)w;
    }
    git_branch_iterator_free(it);
}

/* 1 when repo has a local branch (a commit to start from): libgit2's
 * git_repository_is_empty() asks only about its default branch name. */
static int has_branch(git_repository *repo)
{
    git_branch_iterator *it = NULL;
    git_reference *ref = NULL;
    git_branch_t type;
    int found;

    if (git_branch_iterator_new(&it, repo, GIT_BRANCH_LOCAL) < 0)
        return 1; /* unknown: the checks after this one say more */
    found = git_branch_next(&ref, &type, it) == 0;
    git_reference_free(ref);
    git_branch_iterator_free(it);
    return found;
}

/* HEAD's branch name into out: one too long to hold is never cut; it is
 * an error when it would be the base branch (base NULL), else left "". */
static int head_name(char *out, size_t n, const char *name, const char *base)
{
    if (path_fmt(out, n, "%s", name) == 0)
        return 0;
    if (!base)
        return err_wrap(ERR_INVALID, "the repository's branch");
    err_clear();
    return 0;
}

int vcs_repo_probe(const char *path, const char *branch, char *abs_out, size_t abs_n,
                   char *head_branch_out, size_t head_n)
{
    git_repository *repo = NULL;
    git_reference *ref = NULL;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if ((rc = git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) < 0) {
        rc = vcs_repo_open_err(rc, path);
        goto out;
    }
    if (abs_out) {
        const char *wd = git_repository_workdir(repo);
        if (!wd)
            wd = git_repository_path(repo);
        if ((rc = path_fmt(abs_out, abs_n, "%s", wd)) != 0) {
            err_wrap(rc, "the repository's folder");
            goto out;
        }
        /* libgit2 ends folders with '/'; keep paths canonical without it */
        size_t n = strlen(abs_out);
        if (n > 1 && abs_out[n - 1] == '/')
            abs_out[n - 1] = '\0';
    }
    if (head_branch_out) {
        head_branch_out[0] = '\0';
        if (git_repository_head(&ref, repo) == 0 && git_reference_is_branch(ref)) {
            if ((rc = head_name(head_branch_out, head_n, git_reference_shorthand(ref), branch)))
                goto out;
        } else if (git_repository_head_unborn(repo) == 1) {
            git_reference *h = NULL;
            if (git_reference_lookup(&h, repo, "HEAD") == 0 &&
                git_reference_type(h) == GIT_REFERENCE_SYMBOLIC) {
                const char *t = git_reference_symbolic_target(h);
                if (t && strncmp(t, "refs/heads/", 11) == 0 &&
                    (rc = head_name(head_branch_out, head_n, t + 11, branch)) != 0) {
                    git_reference_free(h);
                    goto out;
                }
            }
            git_reference_free(h);
        }
        git_reference_free(ref);
        ref = NULL;
    }
    if (!has_branch(repo)) {
        rc = err_set(ERR_INVALID,
                     "%s has no commits: goald works on a branch of an existing commit "
                     "(commit something first)",
                     path);
        goto out;
    }
    if (branch) {
        if (!vcs_branch_name_valid(branch)) {
            rc = err_set(ERR_INVALID, "\"%s\" is not a valid branch name", branch);
            goto out;
        }
        if (git_branch_lookup(&ref, repo, branch, GIT_BRANCH_LOCAL) < 0) {
            char have[512];
            branch_list(have, sizeof(have), repo);
            rc = err_set(ERR_NOTFOUND, "no branch \"%s\" in %s (its branches: %s)", branch, path,
                         have);
            goto out;
        }
    }
out:
    git_reference_free(ref);
    git_repository_free(repo);
    return rc;
}

int vcs_repo_init_commit(const char *path, const char *branch, const char *message)
{
    git_repository *repo = NULL;
    git_repository_init_options opts;
    git_signature *sig = NULL;
    git_tree *tree = NULL;
    git_oid tree_id, commit_id;
    char head[300];
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (git_repository_open_ext(NULL, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0)
        return err_set(ERR_INVALID, "%s: already a git repository", path);
    git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    opts.flags = GIT_REPOSITORY_INIT_MKPATH;
    if ((rc = path_fmt(head, sizeof(head), "refs/heads/%s", branch)) != 0)
        return err_wrap(rc, "the first branch's ref");
    opts.initial_head = head;
    if (git_repository_init_ext(&repo, path, &opts) < 0) {
        rc = vcs_git_err(ERR_IO, "%s: init", path);
        goto out;
    }
    if ((rc = vcs_stage_all(&tree_id, repo, 1)) != 0)
        goto out;
    if (git_tree_lookup(&tree, repo, &tree_id) < 0 ||
        git_signature_now(&sig, config_str(CFG_VCS_AUTHOR_NAME),
                          config_str(CFG_VCS_AUTHOR_EMAIL)) < 0 ||
        git_commit_create(&commit_id, repo, "HEAD", sig, sig, NULL, message, tree, 0, NULL) < 0)
        rc = vcs_git_err(ERR_FAIL, "%s: first commit", path);
out:
    git_signature_free(sig);
    git_tree_free(tree);
    git_repository_free(repo);
    return rc;
}

int vcs_repo_init_bare(const char *path)
{
    git_repository *repo = NULL;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (git_repository_init(&repo, path, 1) < 0)
        return vcs_git_err(ERR_IO, "%s: init --bare", path);
    git_repository_free(repo);
    return 0;
}

int vcs_remote_set(const char *repo_path, const char *name, const char *url)
{
    git_repository *repo = NULL;
    git_remote *remote = NULL;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_remote_lookup(&remote, repo, name) == 0)
        rc = git_remote_set_url(repo, name, url) < 0 ? vcs_git_err(ERR_FAIL, "remote %s", name)
                                                     : 0;
    else if (git_remote_create(&remote, repo, name, url) < 0)
        rc = vcs_git_err(ERR_FAIL, "remote %s", name);
    git_remote_free(remote);
    git_repository_free(repo);
    return rc;
}

int vcs_repo_open(git_repository **out, const char *path)
{
    int code = git_repository_open_ext(out, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);

    return code < 0 ? vcs_repo_open_err(code, path) : 0;
}

int vcs_git_err(int code, const char *fmt, ...)
{
    const git_error *e = git_error_last();
    char what[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return err_set(code, "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}
