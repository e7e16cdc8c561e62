/*
 * intake_roots.c - goals submitted over the HTTP API reach only what the
 * operator allows: their repo under http.repos, publish.remote under
 * http.remotes (docs/http.md).  A folder admits a path beneath it,
 * compared resolved; a URL prefix admits a plain URL starting with it at
 * a boundary (util/url.h).
 */
#include "lifecycle/intake_roots.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "util/config.h"
#include "util/err.h"
#include "util/url.h"
#include "vcs/clone.h"

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return 0;
    return 1;
}

/* The allowed roots of key, joined with ", " into out ("none" when empty). */
static const char *roots_list(char *out, size_t n, enum cfg_key key)
{
    const cJSON *it;
    size_t o = 0;

    out[0] = '\0';
    cJSON_ArrayForEach(it, config_json(key))
    {
        const char *r = cJSON_GetStringValue(it);
        int k;
        if (!r)
            continue;
        k = snprintf(out + o, n - o, "%s%s", o ? ", " : "", r);
        if (k < 0 || (size_t)k >= n - o)
            break; /* shown in a message: the list ends at its buffer */
        o += (size_t)k;
    }
    return o ? out : "none";
}

/* One value of a goal from the HTTP API (its repo, or publish.remote as a
 * path or URL) against the roots of key (http.repos, http.remotes): a
 * folder admits a path beneath it, compared resolved (real, when not
 * NULL, gets the resolved path); a URL prefix admits a plain URL starting
 * with it at a boundary (util/url.h).  0, or ERR_POLICY naming the
 * setting; the message never says whether a refused path exists. */
static int confine_one(const char *fname, const char *field, const char *v, enum cfg_key key,
                       char *real, size_t n)
{
    const cJSON *it;
    char shown[256], list[512];
    int url = vcs_repo_is_url(v);

    cJSON_ArrayForEach(it, config_json(key))
    {
        const char *r = cJSON_GetStringValue(it);
        if (!r)
            continue;
        if (r[0] == '/' && !url && url_path_under(v, r, real, n))
            return 0;
        if (r[0] != '/' && url && url_is_plain(v) && url_under_prefix(v, r))
            return 0;
    }
    if (real)
        real[0] = '\0';
    return err_set(ERR_POLICY,
                   "%s: %s: \"%s\" is not under %s, the %s a goal submitted over HTTP may "
                   "name (allowed: %s; an existing folder, symbolic links followed, or a URL "
                   "without . or .. segments)",
                   fname, field, url_mask(shown, sizeof(shown), v), config_defs[key].name,
                   key == CFG_HTTP_REPOS ? "repositories" : "remotes to publish to",
                   roots_list(list, sizeof(list), key));
}

/* A goal from the HTTP API names only what the operator allowed: its
 * repo under http.repos, publish.remote (a path or a URL: a remote's name
 * is one the repository's own configuration gives) under http.remotes.
 * A value holding a credential, or not a string, is left to the field
 * pass, which refuses it with its own message. */
int intake_confine(const cJSON *root, const char *fname, char *repo_real, size_t n)
{
    const char *repo = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "repo"));
    const cJSON *pub = cJSON_GetObjectItemCaseSensitive(root, "publish");
    const char *remote =
        cJSON_GetStringValue(cJSON_IsObject(pub) ? cJSON_GetObjectItemCaseSensitive(pub, "remote")
                                                 : NULL);
    int rc;

    if (repo && !is_blank(repo) && !url_has_credential(repo) &&
        (rc = confine_one(fname, "repo", repo, CFG_HTTP_REPOS, repo_real, n)) != 0)
        return rc;
    if (remote && !is_blank(remote) && !url_has_credential(remote) &&
        (strchr(remote, '/') || strchr(remote, ':')))
        return confine_one(fname, "publish.remote", remote, CFG_HTTP_REMOTES, NULL, 0);
    return 0;
}

