#include "vcs/push.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "util/err.h"
#include "util/secret.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

/* The environment variable holding the https token: its NAME only. */
static const char *token_env_name(void)
{
    const char *n = config_str(CFG_VCS_PUSH_TOKEN_ENV);

    if (!n || !*n)
        n = config_str(CFG_FORGE_TOKEN_ENV);
    return n && *n ? n : NULL;
}

/* libgit2 calls this each time the remote asks for credentials; a second
 * call for the same kind means the first was rejected, so give up rather
 * than loop. */
int vcs_auth_cb(git_credential **out, const char *url, const char *user_from_url,
                unsigned int allowed, void *payload)
{
    struct vcs_auth *c = payload;
    const char *user = user_from_url && *user_from_url ? user_from_url : NULL;

    (void)url;
    if (allowed & GIT_CREDENTIAL_SSH_KEY) {
        if (c->tried_agent++) {
            /* truncation: ok, a message */
            snprintf(c->why, sizeof(c->why), "the ssh agent's keys were rejected");
            return GIT_EUSER;
        }
        if (!getenv("SSH_AUTH_SOCK")) {
            /* truncation: ok, a message */
            snprintf(c->why, sizeof(c->why), "ssh remote, but no ssh agent (SSH_AUTH_SOCK unset)");
            return GIT_EUSER;
        }
        return git_credential_ssh_key_from_agent(out, user ? user : "git");
    }
    if (allowed & GIT_CREDENTIAL_USERNAME) {
        if (c->tried_user++) {
            snprintf(c->why, sizeof(c->why), "user name rejected"); /* truncation: ok, a message */
            return GIT_EUSER;
        }
        return git_credential_username_new(out, user ? user : "git");
    }
    if (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) {
        const char *name = token_env_name();
        const char *tok = name ? secret_get(name) : NULL;
        const char *u = user ? user : config_str(CFG_VCS_PUSH_USERNAME);
        if (c->tried_token++) {
            /* truncation: ok, a message */
            snprintf(c->why, sizeof(c->why), "the token in $%s was rejected", name ? name : "?");
            return GIT_EUSER;
        }
        if (!name) {
            snprintf(c->why, sizeof(c->why), /* truncation: ok, a message */
                     "the remote wants a token: set vcs.push_token_env or forge.token_env");
            return GIT_EUSER;
        }
        if (!tok || !*tok) {
            snprintf(c->why, sizeof(c->why), /* truncation: ok, a message */
                     "the remote wants a token: environment variable %s is not set", name);
            return GIT_EUSER;
        }
        return git_credential_userpass_plaintext_new(out, u && *u ? u : "x-access-token", tok);
    }
    /* truncation: ok, a message */
    snprintf(c->why, sizeof(c->why), "no supported way to authenticate (allowed types 0x%x)",
             allowed);
    return GIT_EUSER;
}

static int update_ref_cb(const char *refname, const char *status, void *payload)
{
    struct vcs_auth *c = payload;

    if (status && !c->rejected[0])
        /* truncation: ok, a message */
        snprintf(c->rejected, sizeof(c->rejected), "%s rejected: %s", refname, status);
    return 0;
}

static int looks_like_url(const char *s)
{
    return strchr(s, '/') || strchr(s, ':');
}

/* A named remote, else an anonymous one for a URL or path. */
static int remote_get(git_remote **out, git_repository *repo, const char *remote)
{
    if (git_remote_lookup(out, repo, remote) == 0)
        return 0;
    git_error_clear();
    if (looks_like_url(remote)) {
        if (git_remote_create_anonymous(out, repo, remote) < 0)
            return vcs_git_err(ERR_INVALID, "remote %s", remote);
        return 0;
    }
    return err_set(ERR_NOTFOUND, "no remote \"%s\"", remote);
}

int vcs_remote_url(char *out, size_t n, const char *repo_path, const char *remote)
{
    git_repository *repo = NULL;
    git_remote *r = NULL;
    const char *url;
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_remote_lookup(&r, repo, remote) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "%s: no remote \"%s\"", repo_path, remote);
        goto out;
    }
    url = git_remote_pushurl(r) ? git_remote_pushurl(r) : git_remote_url(r);
    if (!url || snprintf(out, n, "%s", url) >= (int)n)
        rc = err_set(ERR_TOOBIG, "remote \"%s\": URL missing or too long", remote);
out:
    git_remote_free(r);
    git_repository_free(repo);
    return rc;
}

/* Push refspec spec of the open repo to remote (a configured remote's
 * name, or a URL or path used anonymously).  Errors: ERR_NOTFOUND (no
 * such remote), ERR_FAIL "push to REMOTE: ..." (libgit2's message, why the
 * credentials gave up, or the ref the remote refused and its status). */
static int push_spec(git_repository *repo, const char *remote, const char *spec)
{
    git_remote *r = NULL;
    git_push_options po;
    struct vcs_auth c;
    char *specs[1] = {(char *)spec};
    git_strarray refspecs = {specs, 1};
    int rc;

    memset(&c, 0, sizeof(c));
    if ((rc = remote_get(&r, repo, remote)) != 0)
        return err_wrap(rc, "push to %s", remote);
    git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
    po.callbacks.credentials = vcs_auth_cb;
    po.callbacks.push_update_reference = update_ref_cb;
    po.callbacks.payload = &c;
    if (git_remote_push(r, &refspecs, &po) < 0) {
        if (c.why[0]) {
            git_error_clear();
            rc = err_set(ERR_FAIL, "push to %s: %s", remote, c.why);
        } else {
            rc = vcs_git_err(ERR_FAIL, "push to %s", remote);
        }
    } else if (c.rejected[0]) {
        rc = err_set(ERR_FAIL, "push to %s: %s", remote, c.rejected);
    }
    git_remote_free(r);
    return rc;
}

int vcs_push(const char *repo_path, const char *remote, const char *branch)
{
    git_repository *repo = NULL;
    git_reference *ref = NULL;
    char spec[600];
    int rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!remote || !*remote || !branch || !vcs_branch_name_valid(branch))
        return err_set(ERR_INVALID, "push: a remote and a valid branch name are required");
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_branch_lookup(&ref, repo, branch, GIT_BRANCH_LOCAL) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "push to %s: no branch \"%s\" in %s", remote, branch, repo_path);
        goto out;
    }
    if (snprintf(spec, sizeof(spec), "refs/heads/%s:refs/heads/%s", branch, branch) >=
        (int)sizeof(spec)) {
        rc = err_set(ERR_INVALID, "push: branch name too long");
        goto out;
    }
    rc = push_spec(repo, remote, spec);
out:
    git_reference_free(ref);
    git_repository_free(repo);
    return rc;
}

int vcs_push_commit(const char *repo_path, const char *remote, const char *sha, const char *ref,
                    int force)
{
    git_repository *repo = NULL;
    git_reference *local = NULL;
    git_commit *commit = NULL;
    git_oid oid;
    char spec[600];
    int valid = 0, rc;

    if ((rc = vcs_init()) != 0)
        return rc;
    if (!remote || !*remote || !sha || git_oid_fromstr(&oid, sha) < 0 || !ref ||
        strncmp(ref, "refs/", 5) != 0 || git_reference_name_is_valid(&valid, ref) < 0 || !valid) {
        git_error_clear();
        return err_set(ERR_INVALID,
                       "push: a remote, a commit id and a valid ref name are required");
    }
    if (snprintf(spec, sizeof(spec), "%s%s:%s", force ? "+" : "", ref, ref) >= (int)sizeof(spec))
        return err_set(ERR_INVALID, "push: ref name too long");
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_commit_lookup(&commit, repo, &oid) < 0) {
        git_error_clear();
        rc = err_set(ERR_NOTFOUND, "push to %s: no commit %s in %s", remote, sha, repo_path);
        goto out;
    }
    /* libgit2 pushes references, not ids: the local ref of the same name
     * names the commit first */
    if (git_reference_create(&local, repo, ref, &oid, 1, "goald: push") < 0) {
        rc = vcs_git_err(ERR_FAIL, "push to %s: %s", remote, ref);
        goto out;
    }
    rc = push_spec(repo, remote, spec);
out:
    git_reference_free(local);
    git_commit_free(commit);
    git_repository_free(repo);
    return rc;
}
