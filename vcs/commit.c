#include "vcs/commit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/internal.h"

void vcs_changed_files_free(struct vcs_changed_file *files, size_t nfiles)
{
    for (size_t i = 0; i < nfiles; i++)
        free(files[i].path);
    free(files);
}

void vcs_commit_result_release(struct vcs_commit_result *r)
{
    if (!r)
        return;
    vcs_changed_files_free(r->files, r->nfiles);
    memset(r, 0, sizeof(*r));
}

/* Append s as one line: line breaks and tabs become spaces, leading and
 * trailing spaces dropped. */
static int add_one_line(strbuf *sb, const char *s)
{
    size_t b = 0, e = strlen(s);
    int rc = 0;

    while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n'))
        b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n'))
        e--;
    for (size_t i = b; i < e && !rc; i++) {
        char c = s[i];
        rc = strbuf_addc(sb, (c == '\n' || c == '\r' || c == '\t') ? ' ' : c);
    }
    return rc;
}

static int blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* The longest prefix of the n bytes of s that holds at most max
 * characters, ending at a space when one is past its first half (the cut
 * is then at that space): a subject line or a wrapped body line. */
static size_t fit_chars(const char *s, size_t n, size_t max)
{
    size_t cut, sp;

    if (utf8_count(s, n) <= max)
        return n;
    cut = utf8_offset(s, n, max);
    for (sp = cut; sp > 0 && s[sp] != ' '; sp--)
        ;
    return utf8_count(s, sp) > max / 2 ? sp : cut;
}

/* Append one body line, wrapped at VCS_LINE_MAX characters at spaces.
 * An indented line (code, a quoted output) is kept whole. */
static int add_wrapped(strbuf *sb, const char *s, size_t n)
{
    int rc = 0;

    if (n && (s[0] == ' ' || s[0] == '\t'))
        return strbuf_add(sb, s, n);
    while (!rc && utf8_count(s, n) > VCS_LINE_MAX) {
        size_t cut = fit_chars(s, n, VCS_LINE_MAX);
        rc = strbuf_add(sb, s, cut);
        if (!rc)
            rc = strbuf_addc(sb, '\n');
        while (cut < n && s[cut] == ' ')
            cut++;
        s += cut;
        n -= cut;
    }
    return rc ? rc : strbuf_add(sb, s, n);
}

/* Append the body, its lines wrapped (add_wrapped).  git (and libgit2)
 * read a line starting with "---" and a space as the start of a patch and
 * look for trailers only above it, so such lines (markdown rules, diff
 * headers) get one leading space: the trailers below must stay visible to
 * `git interpret-trailers` and to vcs_commit_find_by_trailer(). */
static int add_body(strbuf *sb, const char *b, size_t n)
{
    size_t i = 0;
    int rc = 0;

    while (i < n && !rc) {
        const char *nl = memchr(b + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (b + i)) : n - i;
        if (len >= 3 && strncmp(b + i, "---", 3) == 0 &&
            (len == 3 || b[i + 3] == ' ' || b[i + 3] == '\t' || b[i + 3] == '\r'))
            rc = strbuf_addc(sb, ' ');
        if (!rc)
            rc = add_wrapped(sb, b + i, len);
        if (!rc && nl)
            rc = strbuf_addc(sb, '\n');
        i += len + (nl ? 1 : 0);
    }
    return rc;
}

/* The subject: the title on one line, at most VCS_LINE_MAX characters
 * (cut at a space); *cut is set when the whole title did not fit. */
static int add_subject(strbuf *sb, const char *title, int *cut)
{
    strbuf one;
    size_t n;
    int rc;

    strbuf_init(&one, 1 << 16);
    rc = add_one_line(&one, title);
    n = fit_chars(strbuf_cstr(&one), one.len, VCS_LINE_MAX);
    while (n > 0 && strbuf_cstr(&one)[n - 1] == ' ')
        n--;
    *cut = n < one.len;
    if (!rc)
        rc = strbuf_add(sb, strbuf_cstr(&one), n);
    strbuf_release(&one);
    return rc;
}

/* The commit message of docs/publishing.md: the subject, the full title
 * when the subject cut it, the body, the trailers. */
static int build_message(strbuf *sb, const struct vcs_commit_msg *m)
{
    int rc = 0, cut = 0;

    {
        const char *t = m->title + strspn(m->title, " \t\r\n");
        if (strncmp(t, "---", 3) == 0 && (t[3] == '\0' || strchr(" \t\r\n", t[3])))
            rc = strbuf_addc(sb, ' '); /* see add_body() */
    }
    if (!rc)
        rc = add_subject(sb, m->title, &cut);
    if (!rc && cut) {
        strbuf full;
        strbuf_init(&full, 1 << 16);
        rc = strbuf_adds(sb, "\n\n");
        if (!rc && (rc = add_one_line(&full, m->title)) == 0)
            rc = add_body(sb, strbuf_cstr(&full), full.len);
        strbuf_release(&full);
    }
    if (!rc && !blank(m->body)) {
        size_t e = strlen(m->body);
        const char *b = m->body;
        while (*b == '\n' || *b == '\r')
            b++;
        while (e > (size_t)(b - m->body) &&
               (m->body[e - 1] == '\n' || m->body[e - 1] == ' ' || m->body[e - 1] == '\r'))
            e--;
        rc = strbuf_adds(sb, "\n\n");
        if (!rc)
            rc = add_body(sb, b, e - (size_t)(b - m->body));
    }
    if (!rc)
        rc = strbuf_adds(sb, "\n\n" VCS_TRAILER_GOAL ": ");
    if (!rc)
        rc = add_one_line(sb, m->goal_id);
    if (!rc)
        rc = strbuf_adds(sb, "\n" VCS_TRAILER_ITEM ": ");
    if (!rc)
        rc = add_one_line(sb, m->work_item_id);
    if (!rc)
        rc = strbuf_adds(sb, "\n" VCS_TRAILER_GATES ": ");
    if (!rc)
        rc = add_one_line(sb, blank(m->gates) ? "none" : m->gates);
    if (!rc)
        rc = strbuf_addc(sb, '\n');
    return rc;
}

/* Resolve a revision to a commit id. */
static int resolve_commit(git_oid *out, git_repository *repo, const char *rev)
{
    git_object *obj = NULL, *c = NULL;
    int rc = 0;

    if (git_revparse_single(&obj, repo, rev) < 0)
        return vcs_git_err(ERR_INVALID, "unknown revision \"%s\"", rev);
    if (git_object_peel(&c, obj, GIT_OBJECT_COMMIT) < 0)
        rc = vcs_git_err(ERR_INVALID, "\"%s\" is not a commit", rev);
    else
        git_oid_cpy(out, git_object_id(c));
    git_object_free(c);
    git_object_free(obj);
    return rc;
}

/* The trailer value of key in a raw message into out; 1 when found. */
static int message_trailer(char *out, size_t n, const char *message, const char *key)
{
    git_message_trailer_array arr = {0};
    int found = 0;

    if (git_message_trailers(&arr, message) < 0) {
        git_error_clear();
        return 0;
    }
    /* the last one wins, as for `git interpret-trailers` readers */
    for (size_t i = 0; i < arr.count; i++) {
        if (strcasecmp(arr.trailers[i].key, key) == 0) {
            /* a value too long to hold is not taken: cut, it could match another */
            found = !out || (size_t)snprintf(out, n, "%s", arr.trailers[i].value) < n;
            if (!found)
                out[0] = '\0';
        }
    }
    git_message_trailer_array_free(&arr);
    return found;
}

int vcs_commit_find_by_trailer(char out[VCS_OID_HEX], vcs_worktree *wt, const char *base,
                               const char *key, const char *value)
{
    git_revwalk *walk = NULL;
    git_oid oid, stop;
    int rc = 0, found = 0;

    if (!key || !value || !*value)
        return err_set(ERR_INVALID, "find by trailer: key and value required");
    if (git_revwalk_new(&walk, wt->repo) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: revwalk", wt->path);
        goto out;
    }
    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
    if (git_revwalk_push_head(walk) < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "%s: HEAD", wt->path);
        goto out;
    }
    if (base) {
        if ((rc = resolve_commit(&stop, wt->repo, base)) != 0)
            goto out;
        if (git_revwalk_hide(walk, &stop) < 0) {
            rc = vcs_git_err(ERR_FAIL, "%s: revwalk", wt->path);
            goto out;
        }
    }
    while (!found && git_revwalk_next(&oid, walk) == 0) {
        git_commit *c = NULL;
        char v[512];
        if (git_commit_lookup(&c, wt->repo, &oid) < 0) {
            rc = vcs_git_err(ERR_FAIL, "%s: commit lookup", wt->path);
            goto out;
        }
        if (message_trailer(v, sizeof(v), git_commit_message(c), key) && strcmp(v, value) == 0) {
            git_oid_tostr(out, VCS_OID_HEX, &oid);
            found = 1;
        }
        git_commit_free(c);
    }
    git_error_clear(); /* GIT_ITEROVER */
    if (!found)
        rc = ERR_NOTFOUND;
out:
    git_revwalk_free(walk);
    return rc;
}

int vcs_commit_trailer(char *out, size_t n, vcs_worktree *wt, const char *sha, const char *key)
{
    git_oid oid;
    git_commit *c = NULL;
    int rc = 0;

    if ((rc = resolve_commit(&oid, wt->repo, sha)) != 0)
        return rc;
    if (git_commit_lookup(&c, wt->repo, &oid) < 0)
        return vcs_git_err(ERR_NOTFOUND, "commit %s", sha);
    if (!message_trailer(out, n, git_commit_message(c), key))
        rc = err_set(ERR_NOTFOUND, "commit %s has no %s trailer", sha, key);
    git_commit_free(c);
    return rc;
}

static char status_char(git_delta_t s)
{
    switch (s) {
    case GIT_DELTA_ADDED:
        return 'A';
    case GIT_DELTA_DELETED:
        return 'D';
    case GIT_DELTA_TYPECHANGE:
        return 'T';
    default:
        return 'M';
    }
}

int vcs_commit_files(struct vcs_changed_file **files, size_t *nfiles, vcs_worktree *wt,
                     const char *sha)
{
    git_oid oid;
    git_commit *c = NULL, *parent = NULL;
    git_tree *tree = NULL, *ptree = NULL;
    git_diff *diff = NULL;
    struct vcs_changed_file *v = NULL;
    size_t n = 0;
    int rc;

    *files = NULL;
    *nfiles = 0;
    if ((rc = resolve_commit(&oid, wt->repo, sha)) != 0)
        return rc;
    if (git_commit_lookup(&c, wt->repo, &oid) < 0 || git_commit_tree(&tree, c) < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "commit %s", sha);
        goto out;
    }
    if (git_commit_parentcount(c) > 0 &&
        (git_commit_parent(&parent, c, 0) < 0 || git_commit_tree(&ptree, parent) < 0)) {
        rc = vcs_git_err(ERR_FAIL, "parent of commit %s", sha);
        goto out;
    }
    if (git_diff_tree_to_tree(&diff, wt->repo, ptree, tree, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "diff of commit %s", sha);
        goto out;
    }
    n = git_diff_num_deltas(diff);
    v = xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        const git_diff_file *f = d->status == GIT_DELTA_DELETED ? &d->old_file : &d->new_file;
        v[i].status = status_char(d->status);
        v[i].path = xstrdup(f->path);
        if (d->status != GIT_DELTA_DELETED && f->mode != GIT_FILEMODE_COMMIT) {
            git_blob *b = NULL;
            if (git_blob_lookup(&b, wt->repo, &f->id) < 0) {
                rc = vcs_git_err(ERR_FAIL, "blob of %s", f->path);
                goto out;
            }
            hash_sha256_hex(v[i].sha256, git_blob_rawcontent(b), (size_t)git_blob_rawsize(b));
            git_blob_free(b);
        }
    }
    *files = v;
    *nfiles = n;
    v = NULL;
out:
    if (v)
        vcs_changed_files_free(v, n);
    git_diff_free(diff);
    git_tree_free(ptree);
    git_tree_free(tree);
    git_commit_free(parent);
    git_commit_free(c);
    return rc;
}

int vcs_commit_item(struct vcs_commit_result *out, vcs_worktree *wt, const char *base,
                    const struct vcs_commit_msg *msg)
{
    strbuf text = STRBUF_INIT;
    git_signature *sig = NULL;
    git_commit *head = NULL;
    git_tree *tree = NULL;
    git_oid tree_id, head_id, commit_id;
    const git_commit *parents[1];
    int rc;

    memset(out, 0, sizeof(*out));
    if (!msg || blank(msg->title) || blank(msg->goal_id) || blank(msg->work_item_id))
        return err_set(ERR_INVALID, "commit: title, goal id and work item id are required");

    /* 1. already committed for this item (a re-run after a crash)? */
    rc = vcs_commit_find_by_trailer(out->sha, wt, base, VCS_TRAILER_ITEM, msg->work_item_id);
    if (rc == 0)
        return vcs_commit_files(&out->files, &out->nfiles, wt, out->sha);
    if (rc != ERR_NOTFOUND)
        return rc;
    out->sha[0] = '\0';
    rc = 0;

    /* 2. stage everything; an unchanged tree means nothing to commit */
    if (git_reference_name_to_id(&head_id, wt->repo, "HEAD") < 0 ||
        git_commit_lookup(&head, wt->repo, &head_id) < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "%s: HEAD", wt->path);
        goto out;
    }
    /* the same bounds as the snapshots: nothing over the file cap is read */
    if ((rc = vcs_guard_changes(wt->repo)) != 0 ||
        (rc = vcs_stage_all(&tree_id, wt->repo, 1)) != 0) {
        err_wrap(rc, "%s", wt->path);
        goto out;
    }
    if (git_oid_equal(&tree_id, git_commit_tree_id(head)))
        goto out;

    if ((rc = build_message(&text, msg)) != 0)
        goto out;
    if (git_signature_now(&sig, config_str(CFG_VCS_AUTHOR_NAME), config_str(CFG_VCS_AUTHOR_EMAIL)) <
        0) {
        rc = vcs_git_err(ERR_INVALID, "vcs.author_name/vcs.author_email");
        goto out;
    }
    if (git_tree_lookup(&tree, wt->repo, &tree_id) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: staged tree", wt->path);
        goto out;
    }
    parents[0] = head;
    if (git_commit_create(&commit_id, wt->repo, "HEAD", sig, sig, NULL, strbuf_cstr(&text), tree, 1,
                          parents) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: commit", wt->path);
        goto out;
    }
    git_oid_tostr(out->sha, sizeof(out->sha), &commit_id);
    out->created = 1;
    rc = vcs_commit_files(&out->files, &out->nfiles, wt, out->sha);
out:
    git_tree_free(tree);
    git_commit_free(head);
    git_signature_free(sig);
    strbuf_release(&text);
    return rc;
}
