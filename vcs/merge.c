#include "vcs/merge.h"

#include <errno.h>
#include <git2.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "vcs/diff.h"
#include "vcs/internal.h"
#include "vcs/repo.h"

#define CONFLICT_LIST_MAX 900 /* the conflicting paths named in the error */

/* The conflicting paths of idx into sb, comma separated, capped. */
static void conflict_paths(strbuf *sb, git_index *idx)
{
    git_index_conflict_iterator *it = NULL;
    const git_index_entry *anc, *ours, *theirs;

    if (git_index_conflict_iterator_new(&it, idx) < 0) {
        git_error_clear();
        strbuf_adds_cut(sb, "(paths unknown)");
        return;
    }
    while (git_index_conflict_next(&anc, &ours, &theirs, it) == 0) {
        const git_index_entry *e = ours ? ours : theirs ? theirs : anc;
        if (sb->len + strlen(e->path) + 2 > CONFLICT_LIST_MAX) {
            strbuf_adds_cut(sb, sb->len ? ", ..." : "...");
            break;
        }
        strbuf_addf_cut(sb, "%s%s", sb->len ? ", " : "", e->path);
    }
    git_error_clear();
    git_index_conflict_iterator_free(it);
}

/* The three-way merge of base, ours and theirs into *merged; a conflict
 * is ERR_FAIL naming its paths, with *conflict = 1. */
static int merge_trees(git_oid *merged, int *conflict, git_repository *r, const git_tree *base,
                       const git_tree *ours, const git_tree *theirs, const char *onto)
{
    git_index *idx = NULL;
    strbuf paths;
    int rc = 0;

    strbuf_init(&paths, CONFLICT_LIST_MAX + 16);
    if (git_merge_trees(&idx, r, base, ours, theirs, NULL) < 0) {
        rc = vcs_git_err(ERR_FAIL, "merge onto %.12s", onto);
    } else if (git_index_has_conflicts(idx)) {
        conflict_paths(&paths, idx);
        *conflict = 1;
        rc = err_set(ERR_FAIL, "conflict with %.12s: %s", onto, strbuf_cstr(&paths));
    } else if (git_index_write_tree_to(merged, idx, r) < 0) {
        rc = vcs_git_err(ERR_FAIL, "merged tree");
    }
    git_index_free(idx);
    strbuf_release(&paths);
    return rc;
}

/* Point the worktree's own branch (its HEAD) at onto. */
static int head_to(git_repository *r, const git_oid *onto)
{
    git_reference *head = NULL, *moved = NULL;
    int rc = 0;

    if (git_repository_head(&head, r) < 0 || !git_reference_is_branch(head))
        rc = vcs_git_err(ERR_FAIL, "the worktree's HEAD is not a branch");
    else if (git_reference_set_target(&moved, head, onto, "goald: onto the goal's head") < 0)
        rc = vcs_git_err(ERR_FAIL, "moving the worktree's branch");
    git_reference_free(moved);
    git_reference_free(head);
    return rc;
}

/* The journal of a catch-up under way: the worktree's HEAD before it,
 * onto and the merged tree, written (flushed, renamed into place) before
 * the worktree's HEAD moves. */
static int journal_write(const char *journal, const char *from, const char *onto,
                         const git_oid *merged)
{
    char line[3 * VCS_OID_HEX + 2], tree[VCS_OID_HEX];

    git_oid_tostr(tree, sizeof(tree), merged);
    /* truncation: ok, three ids always fit */
    snprintf(line, sizeof(line), "%.40s %.40s %.40s\n", from, onto, tree);
    return fs_write_atomic(journal, line, strlen(line), 0600);
}

/* The folder of wt made again at onto_id, the merged tree checked out
 * over it: the steps after the journal, which a resumed catch-up repeats
 * (each leaves the same state when done twice). */
static int journal_apply(vcs_worktree *wt, const git_oid *onto_id, const git_oid *merged)
{
    git_tree *merged_tree = NULL;
    int rc;

    /* the folder made again at onto (nothing in it followed; the reset
     * opens the worktree's repository again), then the merged tree over
     * it: the changes are the worktree's, against onto */
    if ((rc = head_to(wt->repo, onto_id)) != 0)
        return rc;
    fault_point("vcs.catch_up.moved");
    if ((rc = vcs_worktree_reset(NULL, wt, NULL)) != 0)
        return rc;
    if (git_tree_lookup(&merged_tree, wt->repo, merged) < 0)
        return vcs_git_err(ERR_FAIL, "merged tree");
    rc = vcs_checkout_changes(wt, merged_tree);
    git_tree_free(merged_tree);
    return rc;
}

int vcs_worktree_catch_up(int *moved, int *conflict, vcs_worktree *wt, const char *onto,
                          const char *journal)
{
    char head_hex[VCS_OID_HEX], mine_hex[VCS_OID_HEX];
    git_tree *base = NULL, *ours = NULL, *theirs = NULL;
    git_commit *onto_c = NULL;
    git_oid onto_id, mine, merged;
    int rc;

    *moved = *conflict = 0;
    if (!onto || git_oid_fromstr(&onto_id, onto) < 0) {
        git_error_clear();
        return err_set(ERR_INVALID, "catch up: a commit id is required");
    }
    if ((rc = vcs_worktree_head(head_hex, wt)) != 0)
        return rc;
    if (!strcmp(head_hex, onto))
        return 0;
    /* the worktree's tree, its objects written: the merge reads them */
    if ((rc = vcs_worktree_store_tree(mine_hex, wt)) != 0)
        return rc;
    git_oid_fromstr(&mine, mine_hex);
    if ((rc = vcs_head_tree(&base, wt->repo)) != 0)
        goto out;
    if (git_commit_lookup(&onto_c, wt->repo, &onto_id) < 0 || git_commit_tree(&ours, onto_c) < 0 ||
        git_tree_lookup(&theirs, wt->repo, &mine) < 0) {
        rc = vcs_git_err(ERR_NOTFOUND, "catch up onto %.12s", onto);
        goto out;
    }
    if ((rc = merge_trees(&merged, conflict, wt->repo, base, ours, theirs, onto)) != 0)
        goto out;
    if (journal && (rc = journal_write(journal, head_hex, onto, &merged)) != 0)
        goto out;
    if ((rc = journal_apply(wt, &onto_id, &merged)) != 0)
        goto out;
    if (journal && unlink(journal) != 0 && errno != ENOENT)
        rc = err_set(ERR_IO, "%s: %s", journal, strerror(errno));
    *moved = rc == 0;
out:
    git_tree_free(theirs);
    git_tree_free(ours);
    git_tree_free(base);
    git_commit_free(onto_c);
    return rc;
}

/* 1 when the commit onto and the tree merged are in r. */
static int objects_exist(git_repository *r, const git_oid *onto, const git_oid *merged)
{
    git_commit *c = NULL;
    git_tree *t = NULL;
    int ok = git_commit_lookup(&c, r, onto) == 0 && git_tree_lookup(&t, r, merged) == 0;

    git_commit_free(c);
    git_tree_free(t);
    git_error_clear();
    return ok;
}

int vcs_worktree_catch_up_resume(int *resumed, vcs_worktree *wt, const char *journal)
{
    strbuf text;
    char from[VCS_OID_HEX], onto[VCS_OID_HEX], tree[VCS_OID_HEX], head[VCS_OID_HEX];
    git_oid onto_id, merged;
    int rc;

    *resumed = 0;
    if (access(journal, F_OK) != 0)
        return errno == ENOENT ? 0 : err_set(ERR_IO, "%s: %s", journal, strerror(errno));
    strbuf_init(&text, 128);
    if ((rc = fs_read_file(&text, journal, 128)) != 0)
        goto out;
    if ((rc = vcs_worktree_head(head, wt)) != 0)
        goto out;
    /* one that does not read as a journal, or names objects the
     * repository lacks, can never be finished: it goes, and the run
     * starts as after any kill (its leftovers saved); one made for a
     * worktree made again since (at another head) is stale and goes too */
    if (sscanf(strbuf_cstr(&text), "%40s %40s %40s", from, onto, tree) != 3 ||
        git_oid_fromstr(&onto_id, onto) < 0 || git_oid_fromstr(&merged, tree) < 0 ||
        !objects_exist(wt->repo, &onto_id, &merged)) {
        git_error_clear();
        log_warn("%s: not a catch-up journal that can be finished: dropped", journal);
        from[0] = onto[0] = '\0';
    } else if ((!strcmp(head, from) || !strcmp(head, onto)) &&
               (rc = journal_apply(wt, &onto_id, &merged)) != 0) {
        goto out;
    }
    if (unlink(journal) != 0 && errno != ENOENT)
        rc = err_set(ERR_IO, "%s: %s", journal, strerror(errno));
    *resumed = rc == 0 && from[0] && (!strcmp(head, from) || !strcmp(head, onto));
out:
    strbuf_release(&text);
    return rc;
}

int vcs_worktree_stale(int *stale, vcs_worktree *wt)
{
    git_index *idx = NULL;
    git_tree *head = NULL;
    git_oid tree;
    int rc;

    *stale = 0;
    if ((rc = vcs_head_tree(&head, wt->repo)) != 0)
        return rc;
    if (git_repository_index(&idx, wt->repo) < 0 || git_index_read(idx, 1) < 0 ||
        git_index_write_tree(&tree, idx) < 0)
        rc = vcs_git_err(ERR_FAIL, "%s: index", wt->path);
    else
        *stale = !git_oid_equal(&tree, git_tree_id(head));
    git_index_free(idx);
    git_tree_free(head);
    return rc;
}

/* refs/heads/<branch> into name; ERR_INVALID for a bad branch name. */
static int branch_ref(char *name, size_t n, const char *branch)
{
    if (!branch || !vcs_branch_name_valid(branch) ||
        snprintf(name, n, "refs/heads/%s", branch) >= (int)n)
        return err_set(ERR_INVALID, "branch: a valid branch name is required");
    return 0;
}

int vcs_branch_move(const char *repo_path, const char *branch, const char *from, const char *to)
{
    git_repository *repo = NULL;
    git_reference *ref = NULL;
    git_oid from_id, to_id;
    char name[600];
    int rc, grc;

    if ((rc = vcs_init()) != 0 || (rc = branch_ref(name, sizeof(name), branch)) != 0)
        return rc;
    if (!from || !to || git_oid_fromstr(&from_id, from) < 0 || git_oid_fromstr(&to_id, to) < 0) {
        git_error_clear();
        return err_set(ERR_INVALID, "branch move: two commit ids are required");
    }
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    grc = git_reference_create_matching(&ref, repo, name, &to_id, 1, &from_id,
                                        "goald: an item landed");
    if (grc == GIT_EMODIFIED) {
        git_error_clear();
        rc = err_set(ERR_BUSY, "the branch %s moved: it is no longer at %.12s", branch, from);
    } else if (grc < 0) {
        rc = vcs_git_err(ERR_FAIL, "branch \"%s\"", branch);
    }
    git_reference_free(ref);
    git_repository_free(repo);
    return rc;
}

int vcs_commit_reaches(int *yes, const char *repo_path, const char *head, const char *sha)
{
    git_repository *repo = NULL;
    git_oid h, c;
    int rc, d;

    *yes = 0;
    if ((rc = vcs_init()) != 0)
        return rc;
    if (!head || !sha || git_oid_fromstr(&h, head) < 0 || git_oid_fromstr(&c, sha) < 0) {
        git_error_clear();
        return err_set(ERR_INVALID, "two commit ids are required");
    }
    if (git_oid_equal(&h, &c)) {
        *yes = 1;
        return 0;
    }
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if ((d = git_graph_descendant_of(repo, &h, &c)) < 0)
        rc = vcs_git_err(ERR_FAIL, "is %.12s in %.12s", sha, head);
    else
        *yes = d;
    git_repository_free(repo);
    return rc;
}

int vcs_branch_delete(const char *repo_path, const char *branch)
{
    git_repository *repo = NULL;
    git_reference *ref = NULL;
    char name[600];
    int rc;

    if ((rc = vcs_init()) != 0 || (rc = branch_ref(name, sizeof(name), branch)) != 0)
        return rc;
    if ((rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_reference_lookup(&ref, repo, name) < 0)
        git_error_clear();
    else if (git_reference_delete(ref) < 0)
        rc = vcs_git_err(ERR_FAIL, "deleting branch \"%s\"", branch);
    git_reference_free(ref);
    git_repository_free(repo);
    return rc;
}

int vcs_branch_delete_prefix(const char *repo_path, const char *prefix, int *n)
{
    git_repository *repo = NULL;
    git_reference_iterator *it = NULL;
    git_reference *ref;
    char glob[600];
    int rc;

    *n = 0;
    if (!prefix || strlen(prefix) < 8 || strpbrk(prefix, "*?[\\") ||
        snprintf(glob, sizeof(glob), "refs/heads/%s*", prefix) >= (int)sizeof(glob))
        return err_set(ERR_INVALID, "branch prefix: 8 or more plain characters are required");
    if ((rc = vcs_init()) != 0 || (rc = vcs_repo_open(&repo, repo_path)) != 0)
        return rc;
    if (git_reference_iterator_glob_new(&it, repo, glob) < 0) {
        rc = vcs_git_err(ERR_FAIL, "branches %s*", prefix);
        goto out;
    }
    while (rc == 0 && git_reference_next(&ref, it) == 0) {
        if (git_reference_delete(ref) < 0)
            rc = vcs_git_err(ERR_FAIL, "deleting %s", git_reference_name(ref));
        else
            (*n)++;
        git_reference_free(ref);
    }
    git_error_clear();
out:
    git_reference_iterator_free(it);
    git_repository_free(repo);
    return rc;
}
