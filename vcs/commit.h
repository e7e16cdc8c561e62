/*
 * commit.h - one commit per finished work item, with trailers.
 *
 * Message format (docs/publishing.md):
 *
 *     <subject: the title>
 *
 *     <body, when given>
 *
 *     Goal-Id: <goal id>
 *     Work-Item-Id: <work item id>
 *     Gates: <gate summary>
 *
 * The subject is the title on one line, at most VCS_LINE_MAX characters
 * (cut at a space; the whole title then opens the body).  Body lines are
 * wrapped at VCS_LINE_MAX characters at spaces, except indented ones
 * (code, quoted output).  The trailer values are single lines (line
 * breaks become spaces).  Title and body lines starting with "---" and a space get one
 * leading space, or git would take them for the start of a patch and miss
 * the trailers.  Author and committer come from vcs.author_name and
 * vcs.author_email (default "goald <goald@localhost>").
 *
 * Idempotency: vcs_commit_item() first looks on the branch for a commit
 * whose Work-Item-Id trailer is the item's id and returns it instead of
 * committing again, so a re-run after a crash between the commit and the
 * store update never makes a second commit for the same item.
 */
#ifndef GOALD_VCS_COMMIT_H
#define GOALD_VCS_COMMIT_H

#include <stddef.h>

#include "util/hash.h"
#include "vcs/worktree.h"

#define VCS_TRAILER_GOAL "Goal-Id"
#define VCS_TRAILER_ITEM "Work-Item-Id"
#define VCS_TRAILER_GATES "Gates"

/* The subject and the body lines: at most this many characters. */
#define VCS_LINE_MAX 72

struct vcs_commit_msg {
    const char *title;        /* required: the work item's title */
    const char *body;         /* may be NULL: summary and evidence */
    const char *goal_id;      /* required */
    const char *work_item_id; /* required */
    const char *gates;        /* may be NULL: e.g. "tests=pass lint=pass" */
};

struct vcs_changed_file {
    char *path;                 /* relative to the worktree, '/' separated */
    char status;                /* 'A' added, 'M' modified, 'D' deleted, 'T' type change */
    char sha256[HASH_HEX_SIZE]; /* of the committed content; "" when deleted */
};

struct vcs_commit_result {
    char sha[VCS_OID_HEX];          /* "" when nothing was committed (empty diff) */
    int created;                    /* 1: committed now; 0: found or nothing to do */
    struct vcs_changed_file *files; /* the commit's changes against its parent */
    size_t nfiles;
};

/* Free the contents of r (not r itself) and zero it. */
void vcs_commit_result_release(struct vcs_commit_result *r);

/* Commit the worktree's changes for one work item.
 *
 * base (may be NULL) names a branch or commit where the search for an
 * earlier commit of the same item stops (the goal's base branch).
 *
 * 1. A commit of this item already on the branch (see
 *    vcs_commit_find_by_trailer): out describes it, created = 0, and the
 *    worktree is left alone.
 * 2. Otherwise every change is staged, honouring .gitignore (additions,
 *    modifications, deletions), and when the result differs from HEAD one
 *    commit is made on the branch: created = 1.
 * 3. Nothing to commit: out->sha is "", created = 0, no files.
 *
 * out is zeroed first; release it with vcs_commit_result_release() (also
 * after an error).  ERR_INVALID for a missing title or id. */
int vcs_commit_item(struct vcs_commit_result *out, vcs_worktree *wt, const char *base,
                    const struct vcs_commit_msg *msg);

/* Walk the branch from its head down to (not including) commits
 * reachable from base (NULL: the whole history) and find the newest
 * commit whose message has the trailer key with value.  out receives its
 * sha.  0 when found; ERR_NOTFOUND when not (no message set then);
 * other codes for a broken repository or an unknown base. */
int vcs_commit_find_by_trailer(char out[VCS_OID_HEX], vcs_worktree *wt, const char *base,
                               const char *key, const char *value);

/* The value of trailer key in the message of commit sha, into out.
 * ERR_NOTFOUND when the commit has no such trailer. */
int vcs_commit_trailer(char *out, size_t n, vcs_worktree *wt, const char *sha, const char *key);

/* The changes of commit sha against its first parent (against the empty
 * tree for a root commit), into files/nfiles; free with
 * vcs_changed_files_free(). */
int vcs_commit_files(struct vcs_changed_file **files, size_t *nfiles, vcs_worktree *wt,
                     const char *sha);

void vcs_changed_files_free(struct vcs_changed_file *files, size_t nfiles);

#endif
