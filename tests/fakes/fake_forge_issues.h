/*
 * fake_forge_issues.h - the issue side of tests/fakes/fake_forge.c
 * (included there once; static functions only).
 *
 *   GET   /repos/{o}/{r}                        {"default_branch"} ("main")
 *   GET   /repos/{o}/{r}/issues?labels=L&state=open  open issues with label
 *         L (none: every open one), with an ETag; If-None-Match equal to it
 *         answers 304 with no body
 *   GET   /repos/{o}/{r}/issues/{n}/events      GitHub: "labeled" events
 *   GET   /repos/{o}/{r}/issues/{n}/timeline    Gitea: "label" entries
 *   GET   /repos/{o}/{r}/issues/{n}/comments    with an ETag (304 as above)
 *   POST  /repos/{o}/{r}/issues/{n}/comments    {"body"}: 201, by "goald-bot"
 *   PATCH /repos/{o}/{r}/issues/comments/{id}   {"body"}: 200, or 404
 *   GET   /repos/{o}/{r}/collaborators/{u}/permission  {"permission"}, or
 *         404 for a stranger
 *   POST  /_fake/issue {"repo","number","title","body","user","labels":[],
 *         "labeler","state"}  adds (or replaces) an issue; labeler: who
 *         put each label on it (an event apiece)
 *   POST  /_fake/comment {"repo","number","user","body"}  a person's comment
 *   POST  /_fake/collaborator {"repo","login","permission"}
 *   GET   /repos/{o}/{r}/pulls/{n}/reviews      with an ETag (304 as above)
 *   GET   /repos/{o}/{r}/pulls/{n}/reviews/{id}/comments
 *   POST  /_fake/review {"repo","number","user","state","body",
 *         "comments":[{"path","line","body"}]}  a review of pull request n
 *   GET   /_fake/state   {"issues": [...], "rate_used": N}
 * Every API answer but a 304 counts against a rate limit of 5000
 * (x-ratelimit-remaining, x-ratelimit-used), as GitHub's does.
 */
#ifndef FAKE_FORGE_ISSUES_H
#define FAKE_FORGE_ISSUES_H

static cJSON *issues;        /* each has "_repo", "labels", "_events", "_comments" */
static cJSON *collaborators; /* {"o/r": {"login": "permission"}} */
static cJSON *reviews; /* each has "_repo", "_pr", "_comments" */
static long rate_used;
static long next_comment_id = 1000;

static void issues_init(void)
{
    issues = cJSON_CreateArray();
    collaborators = cJSON_CreateObject();
    reviews = cJSON_CreateArray();
}

static void issues_cleanup(void)
{
    cJSON_Delete(issues);
    cJSON_Delete(collaborators);
    cJSON_Delete(reviews);
}

static cJSON *issue_find(const char *repo, long n)
{
    cJSON *it;
    cJSON_ArrayForEach(it, issues)
    {
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "_repo"));
        const cJSON *num = cJSON_GetObjectItemCaseSensitive(it, "number");
        if (r && !strcmp(r, repo) && cJSON_IsNumber(num) && (long)num->valuedouble == n)
            return it;
    }
    return NULL;
}

static cJSON *user_obj(const char *login)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "login", login ? login : "");
    return u;
}

/* POST /_fake/issue */
static cJSON *issue_seed(int *status, const cJSON *in)
{
    const char *repo = jstr(in, "repo"), *labeler = jstr(in, "labeler");
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(in, "number"), *l;
    cJSON *is, *labels, *events;
    int i = 0;

    if (!repo || !cJSON_IsNumber(num)) {
        *status = 400;
        return cJSON_CreateObject();
    }
    if ((is = issue_find(repo, (long)num->valuedouble)) != NULL) {
        cJSON *old_c = cJSON_DetachItemFromObjectCaseSensitive(is, "_comments");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "title");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "body");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "state");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "labels");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "user");
        cJSON_DeleteItemFromObjectCaseSensitive(is, "_events");
        cJSON_AddItemToObject(is, "_comments", old_c);
    } else {
        is = cJSON_CreateObject();
        cJSON_AddStringToObject(is, "_repo", repo);
        cJSON_AddNumberToObject(is, "number", num->valuedouble);
        cJSON_AddItemToObject(is, "_comments", cJSON_CreateArray());
        cJSON_AddItemToArray(issues, is);
    }
    cJSON_AddStringToObject(is, "title", jstr(in, "title") ? jstr(in, "title") : "");
    cJSON_AddStringToObject(is, "body", jstr(in, "body") ? jstr(in, "body") : "");
    cJSON_AddStringToObject(is, "state", jstr(in, "state") ? jstr(in, "state") : "open");
    cJSON_AddItemToObject(is, "user", user_obj(jstr(in, "user") ? jstr(in, "user") : "someone"));
    labels = cJSON_AddArrayToObject(is, "labels");
    events = cJSON_AddArrayToObject(is, "_events");
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(in, "labels"))
    {
        cJSON *lo = cJSON_CreateObject(), *ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(lo, "id", ++i);
        cJSON_AddStringToObject(lo, "name", cJSON_GetStringValue(l));
        cJSON_AddItemToArray(labels, lo);
        cJSON_AddStringToObject(ev, "event", "labeled");
        cJSON_AddItemToObject(ev, "label", cJSON_Duplicate(lo, 1));
        cJSON_AddItemToObject(ev, "actor", user_obj(labeler ? labeler : "someone"));
        cJSON_AddItemToArray(events, ev);
    }
    *status = 201;
    return cJSON_Duplicate(is, 1);
}

static cJSON *comment_make(const char *user, const char *body)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "id", (double)++next_comment_id);
    cJSON_AddStringToObject(c, "body", body ? body : "");
    cJSON_AddItemToObject(c, "user", user_obj(user));
    return c;
}

/* POST /_fake/comment */
static cJSON *comment_seed(int *status, const cJSON *in)
{
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(in, "number");
    cJSON *is = jstr(in, "repo") && cJSON_IsNumber(num)
                    ? issue_find(jstr(in, "repo"), (long)num->valuedouble)
                    : NULL;
    cJSON *c;

    if (!is) {
        *status = 404;
        return cJSON_CreateObject();
    }
    c = comment_make(jstr(in, "user"), jstr(in, "body"));
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(is, "_comments"), c);
    *status = 201;
    return cJSON_Duplicate(c, 1);
}

/* The public form of an issue (private "_" keys dropped). */
static cJSON *issue_public(const cJSON *is)
{
    cJSON *c = cJSON_Duplicate(is, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "_repo");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "_events");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "_comments");
    return c;
}

static int has_label(const cJSON *is, const char *label)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(is, "labels"))
        if (!strcmp(jstr(l, "name") ? jstr(l, "name") : "", label)) return 1;
    return 0;
}

/* "\"HEX\"" of text (FNV-1a), as an ETag. */
static void etag_of(char *out, size_t n, const char *text)
{
    unsigned long long h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    snprintf(out, n, "\"%016llx\"", h);
}

/* Answer ans with an ETag; 304 (ans NULL) when If-None-Match has it. */
static cJSON *with_etag(int *status, cJSON *ans, cJSON *extra, struct MHD_Connection *c)
{
    char *text = cJSON_PrintUnformatted(ans), tag[40];
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");

    etag_of(tag, sizeof(tag), text);
    cJSON_free(text);
    cJSON_AddStringToObject(extra, "ETag", tag);
    if (inm && !strcmp(inm, tag)) {
        cJSON_Delete(ans);
        *status = 304;
        return NULL;
    }
    *status = 200;
    return ans;
}

static cJSON *issue_list(int *status, cJSON *extra, struct MHD_Connection *c, const char *repo)
{
    const char *label = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labels");
    cJSON *arr = cJSON_CreateArray(), *it;

    cJSON_ArrayForEach(it, issues)
    {
        if (strcmp(jstr(it, "_repo"), repo) || strcmp(jstr(it, "state"), "open"))
            continue;
        if (label && *label && !has_label(it, label))
            continue;
        cJSON_AddItemToArray(arr, issue_public(it));
    }
    return with_etag(status, arr, extra, c);
}

/* GitHub's events, or Gitea's timeline, of an issue. */
static cJSON *issue_events(const cJSON *is, int gitea)
{
    cJSON *arr = cJSON_CreateArray();
    const cJSON *ev;

    cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(is, "_events"))
    {
        cJSON *o;
        if (!gitea) {
            cJSON_AddItemToArray(arr, cJSON_Duplicate(ev, 1));
            continue;
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "label");
        cJSON_AddStringToObject(o, "body", "1");
        cJSON_AddItemToObject(o, "label",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "label"), 1));
        cJSON_AddItemToObject(o, "user",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "actor"), 1));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* PATCH /repos/{o}/{r}/issues/comments/{id} */
static cJSON *comment_patch(int *status, const char *repo, long id, const cJSON *in)
{
    cJSON *is, *cm;

    cJSON_ArrayForEach(is, issues)
    {
        if (strcmp(jstr(is, "_repo"), repo))
            continue;
        cJSON_ArrayForEach(cm, cJSON_GetObjectItemCaseSensitive(is, "_comments"))
        {
            if ((long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cm, "id")) != id)
                continue;
            cJSON_ReplaceItemInObjectCaseSensitive(
                cm, "body", cJSON_CreateString(jstr(in, "body") ? jstr(in, "body") : ""));
            *status = 200;
            return cJSON_Duplicate(cm, 1);
        }
    }
    *status = 404;
    return NULL;
}

/* Does rest match "/issues/%ld" + tail exactly?  The number into *n. */
static int issue_path(const char *rest, const char *tail, long *n)
{
    int used = 0;
    if (sscanf(rest, "/issues/%ld%n", n, &used) != 1)
        return 0;
    return strcmp(rest + used, tail) == 0;
}

/* POST /_fake/review */
static cJSON *review_seed(int *status, const cJSON *in)
{
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(in, "number");
    const cJSON *cms = cJSON_GetObjectItemCaseSensitive(in, "comments");
    cJSON *rv;

    if (!jstr(in, "repo") || !cJSON_IsNumber(num)) {
        *status = 400;
        return cJSON_CreateObject();
    }
    rv = cJSON_CreateObject();
    cJSON_AddNumberToObject(rv, "id", (double)++next_comment_id);
    cJSON_AddItemToObject(rv, "user", user_obj(jstr(in, "user")));
    cJSON_AddStringToObject(rv, "state", jstr(in, "state") ? jstr(in, "state") : "COMMENTED");
    cJSON_AddStringToObject(rv, "body", jstr(in, "body") ? jstr(in, "body") : "");
    cJSON_AddStringToObject(rv, "_repo", jstr(in, "repo"));
    cJSON_AddNumberToObject(rv, "_pr", num->valuedouble);
    cJSON_AddItemToObject(rv, "_comments",
                          cJSON_IsArray(cms) ? cJSON_Duplicate(cms, 1) : cJSON_CreateArray());
    cJSON_AddItemToArray(reviews, rv);
    *status = 201;
    return cJSON_Duplicate(rv, 1);
}

/* The reviews of pull request n (public form), or the comments of
 * review id when id > 0 (NULL: no such review). */
static cJSON *review_list(const char *repo, long n, long id)
{
    cJSON *arr = cJSON_CreateArray(), *rv;

    cJSON_ArrayForEach(rv, reviews)
    {
        cJSON *c;
        if (strcmp(jstr(rv, "_repo"), repo) ||
            (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rv, "_pr")) != n)
            continue;
        if (id > 0) {
            if ((long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rv, "id")) != id)
                continue;
            cJSON_Delete(arr);
            return cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rv, "_comments"), 1);
        }
        c = cJSON_Duplicate(rv, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(c, "_repo");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "_pr");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "_comments");
        cJSON_AddItemToArray(arr, c);
    }
    if (id > 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

/* The review routes: /pulls/{n}/reviews and /pulls/{n}/reviews/{id}/comments. */
static int reviews_route(cJSON **ans, int *status, cJSON *extra, struct MHD_Connection *c,
                         const char *repo, const char *rest)
{
    long n = 0, id = 0;
    int used = 0;

    if (sscanf(rest, "/pulls/%ld/reviews%n", &n, &used) != 1 || used == 0)
        return 0;
    if (!rest[used]) {
        *ans = with_etag(status, review_list(repo, n, 0), extra, c);
        return 1;
    }
    used = 0;
    if (sscanf(rest, "/pulls/%ld/reviews/%ld/comments%n", &n, &id, &used) != 2 || rest[used] ||
        used == 0)
        return 0;
    *ans = review_list(repo, n, id);
    *status = *ans ? 200 : 404;
    return 1;
}

/* The issue routes under /repos/{o}/{r}; 1 when path was one of them. */
static int issues_route(cJSON **ans, int *status, cJSON *extra, struct MHD_Connection *c,
                        const char *method, const char *path, const cJSON *in, int gitea)
{
    char o[256], r[256], repo[520], rest[512] = "", user[256];
    long n = 0;
    int get = !strcmp(method, "GET");
    cJSON *is;

    if (sscanf(path, "/repos/%255[^/]/%255[^/]%511s", o, r, rest) < 2)
        return 0;
    snprintf(repo, sizeof(repo), "%s/%s", o, r);
    if (get && reviews_route(ans, status, extra, c, repo, rest)) {
        /* a review answer */
    } else if (!rest[0] && get) {
        *ans = cJSON_CreateObject();
        cJSON_AddStringToObject(*ans, "full_name", repo);
        cJSON_AddStringToObject(*ans, "default_branch", "main");
        *status = 200;
    } else if (!strcmp(rest, "/issues") && get) {
        *ans = issue_list(status, extra, c, repo);
    } else if (!strncmp(rest, "/issues/comments/", 17) && !strcmp(method, "PATCH") &&
               (n = strtol(rest + 17, NULL, 10)) > 0) {
        *ans = comment_patch(status, repo, n, in);
    } else if (issue_path(rest, "/events", &n) && get && (is = issue_find(repo, n))) {
        *ans = issue_events(is, 0);
        *status = 200;
    } else if (issue_path(rest, "/timeline", &n) && get &&
               (is = issue_find(repo, n))) {
        *ans = issue_events(is, 1);
        *status = 200;
    } else if (issue_path(rest, "/comments", &n) && (is = issue_find(repo, n))) {
        cJSON *cms = cJSON_GetObjectItemCaseSensitive(is, "_comments");
        if (get) {
            *ans = with_etag(status, cJSON_Duplicate(cms, 1), extra, c);
        } else if (!strcmp(method, "POST")) {
            cJSON *cm = comment_make("goald-bot", jstr(in, "body"));
            cJSON_AddItemToArray(cms, cm);
            *ans = cJSON_Duplicate(cm, 1);
            *status = 201;
        } else {
            return 0;
        }
    } else if (sscanf(rest, "/collaborators/%255[^/]/permission", user) == 1 && get) {
        const char *p = jstr(cJSON_GetObjectItemCaseSensitive(collaborators, repo), user);
        *ans = cJSON_CreateObject();
        if (p) {
            cJSON_AddStringToObject(*ans, "permission", p);
            cJSON_AddItemToObject(*ans, "user", user_obj(user));
            *status = 200;
        } else {
            cJSON_AddStringToObject(*ans, "message", gitea ? "user is not a collaborator" : "Not Found");
            *status = 404;
        }
    } else {
        return 0;
    }
    return 1;
}

/* POST /_fake/collaborator */
static cJSON *collaborator_seed(int *status, const cJSON *in)
{
    const char *repo = jstr(in, "repo"), *login = jstr(in, "login"), *p = jstr(in, "permission");
    cJSON *m;

    if (!repo || !login || !p) {
        *status = 400;
        return cJSON_CreateObject();
    }
    if (!(m = cJSON_GetObjectItemCaseSensitive(collaborators, repo)))
        m = cJSON_AddObjectToObject(collaborators, repo);
    cJSON_DeleteItemFromObjectCaseSensitive(m, login);
    cJSON_AddStringToObject(m, login, p);
    *status = 200;
    return cJSON_CreateObject();
}

static cJSON *fake_state(int *status)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToObject(s, "issues", cJSON_Duplicate(issues, 1));
    cJSON_AddNumberToObject(s, "rate_used", (double)rate_used);
    *status = 200;
    return s;
}

/* Count an API answer against the rate limit (a 304 is free). */
static void rate_count(int status, cJSON *extra)
{
    char v[32];
    if (status != 304)
        rate_used++;
    snprintf(v, sizeof(v), "%ld", 5000 - rate_used);
    cJSON_AddStringToObject(extra, "x-ratelimit-remaining", v);
    snprintf(v, sizeof(v), "%ld", rate_used);
    cJSON_AddStringToObject(extra, "x-ratelimit-used", v);
}

#endif
