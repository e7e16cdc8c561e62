/*
 * diff.c - the unified diff of two texts, by libgit2's patch API (xdiff's
 * Myers diff: its cost follows the size of the change, not the product of
 * the two lengths).
 *
 * The text format is ours and stays as it was: "--- a/NAME", "+++ b/NAME",
 * then hunks headed "@@ -S,N +S,N @@" (both counts always written, no
 * function context), lines prefixed ' ', '-' or '+' and ended by '\n'.  A
 * text is a sequence of lines split at '\n'; a last line without one is a
 * line like the others (no "\ No newline at end of file"), so "x" and
 * "x\n" are equal.
 */
#include "tools/diff.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/repo.h"

#define CONTEXT 3

/* text as libgit2 should see it: ending in '\n' when not empty, so that a
 * missing last newline is not a difference.  *copy is the buffer to free
 * (NULL when text could be used as it is). */
static const char *with_last_newline(char **copy, const char *text, size_t *len)
{
    *copy = NULL;
    if (*len == 0 || text[*len - 1] == '\n')
        return text;
    *copy = xmalloc(*len + 1);
    memcpy(*copy, text, *len);
    (*copy)[(*len)++] = '\n';
    return *copy;
}

/* libgit2's error, once, into the error slot. */
static int git_fail(const char *what)
{
    const git_error *e = git_error_last();

    return err_set(ERR_FAIL, "libgit2: %s: %s", what, e && e->message ? e->message : "failed");
}

/* Append hunk h of patch (header and lines) to out. */
static int emit_hunk(strbuf *out, git_patch *patch, size_t h, size_t line0)
{
    const git_diff_hunk *hunk;
    size_t nlines;
    int rc;

    if (git_patch_get_hunk(&hunk, &nlines, patch, h) < 0)
        return git_fail("hunk");
    rc = strbuf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", (size_t)hunk->old_start + line0,
                     (size_t)hunk->old_lines, (size_t)hunk->new_start + line0,
                     (size_t)hunk->new_lines);
    for (size_t i = 0; i < nlines && !rc; i++) {
        const git_diff_line *l;
        size_t len;

        if (git_patch_get_line_in_hunk(&l, patch, h, i) < 0)
            return git_fail("line");
        if (l->origin != GIT_DIFF_LINE_CONTEXT && l->origin != GIT_DIFF_LINE_ADDITION &&
            l->origin != GIT_DIFF_LINE_DELETION)
            continue; /* the "no newline at end of file" markers: see with_last_newline */
        len = l->content_len;
        if (len && l->content[len - 1] == '\n')
            len--;
        if ((rc = strbuf_addc(out, l->origin)) == 0 && (rc = strbuf_add(out, l->content, len)) == 0)
            rc = strbuf_addc(out, '\n');
    }
    return rc;
}

int diff_unified(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                 size_t blen, size_t *added, size_t *removed)
{
    struct diff_stat stat;
    int rc = diff_unified_at(out, name, a, alen, b, blen, 0, &stat);

    if (added)
        *added = stat.added;
    if (removed)
        *removed = stat.removed;
    return rc;
}

int diff_unified_at(strbuf *out, const char *name, const char *a, size_t alen, const char *b,
                    size_t blen, size_t line0, struct diff_stat *stat)
{
    git_diff_options opts;
    git_patch *patch = NULL;
    char *acopy = NULL, *bcopy = NULL;
    size_t nadd = 0, nrem = 0, nhunks;
    int rc;

    if ((rc = vcs_init()) != 0)
        goto out;
    git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
    a = with_last_newline(&acopy, a, &alen);
    b = with_last_newline(&bcopy, b, &blen);
    opts.context_lines = CONTEXT;
    opts.interhunk_lines = 0;
    opts.flags = GIT_DIFF_FORCE_TEXT; /* a NUL byte does not make it "binary" */
    if (git_patch_from_buffers(&patch, a, alen, name, b, blen, name, &opts) < 0) {
        rc = git_fail("diff");
        goto out;
    }
    if (git_patch_line_stats(NULL, &nadd, &nrem, patch) < 0) {
        rc = git_fail("diff");
        goto out;
    }
    if (nadd || nrem)
        rc = strbuf_addf(out, "--- a/%s\n+++ b/%s\n", name, name);
    nhunks = git_patch_num_hunks(patch);
    for (size_t h = 0; h < nhunks && !rc; h++)
        rc = emit_hunk(out, patch, h, line0);
out:
    if (stat) {
        stat->added = nadd;
        stat->removed = nrem;
    }
    git_patch_free(patch);
    free(acopy);
    free(bcopy);
    return rc;
}
