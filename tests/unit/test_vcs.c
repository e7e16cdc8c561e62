/* Unit tests: vcs worktrees, commits with trailers, diffs, reset, push.
 * Repositories are made and checked with the real git CLI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "tests/unit/vcshelp.h"
#include "util/config.h"
#include "util/err.h"
#include "util/hash.h"
#include "vcs/clone.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/internal.h"
#include "vcs/merge.h"
#include "vcs/push.h"
#include "vcs/repo.h"
#include "vcs/tree.h"
#include "vcs/worktree.h"

#define BR "goald/fix-tests-0123abcd"

/* A fresh repository and worktree per test, under the test folder. */
struct fx {
    char repo[600];
    char wtp[600];
    vcs_worktree *wt;
};

static void fx_setup(struct fx *f, const char *name)
{
    char rel[128];

    snprintf(rel, sizeof(rel), "%s/repo", name);
    testutil_tmp_path(f->repo, sizeof(f->repo), rel);
    snprintf(rel, sizeof(rel), "%s/wts/g-0123abcd", name);
    testutil_tmp_path(f->wtp, sizeof(f->wtp), rel);
    assert_int_equal(make_repo(f->repo), 0);
    f->wt = NULL;
    if (vcs_worktree_create(&f->wt, f->repo, "main", BR, f->wtp) != 0)
        fail_msg("create: %s", err_last());
}

/* A repository (make_repo) at the test folder's src_rel, and a bare clone
 * of it at bare_rel: their paths into src and bare (n bytes each). */
static void make_origin(char *src, char *bare, size_t n, const char *src_rel, const char *bare_rel)
{
    testutil_tmp_path(src, n, src_rel);
    testutil_tmp_path(bare, n, bare_rel);
    assert_int_equal(make_repo(src), 0);
    assert_int_equal(sh("git clone -q --bare '%s' '%s'", src, bare), 0);
}

static struct vcs_changed_file *find_file(struct vcs_commit_result *r, const char *path)
{
    for (size_t i = 0; i < r->nfiles; i++)
        if (strcmp(r->files[i].path, path) == 0)
            return &r->files[i];
    return NULL;
}

/* vcs_worktree_create of branch at wtp refuses a lock it must not clear:
 * ERR_INVALID, the message says so, and no worktree. */
static void create_refused(const char *repo, const char *branch, const char *wtp)
{
    vcs_worktree *wt = NULL;

    assert_int_equal(vcs_worktree_create(&wt, repo, "main", branch, wtp), ERR_INVALID);
    assert_non_null(strstr(err_last(), "not a lock file goald can clear"));
    assert_null(wt);
}

/* A job killed while it created the goal branch left refs/heads/BR.lock:
 * the next job's worktree is made all the same (git would refuse the
 * branch for ever); a lock that is a symbolic link, or whose folder leads
 * out of the git folder, is refused and left alone. */
static void test_worktree_stale_branch_lock(void **state)
{
    char repo[600], wtp[600], outside[600], lock[700];
    vcs_worktree *wt = NULL;

    (void)state;
    testutil_tmp_path(repo, sizeof(repo), "stalelock/repo");
    testutil_tmp_path(wtp, sizeof(wtp), "stalelock/wts/g-1");
    testutil_tmp_path(outside, sizeof(outside), "stalelock/outside");
    assert_int_equal(make_repo(repo), 0);
    snprintf(lock, sizeof(lock), "%s/.git/refs/heads/goald/s-1.lock", repo);
    assert_int_equal(sh("mkdir -p '%s/.git/refs/heads/goald' && : > '%s'", repo, lock), 0);
    if (vcs_worktree_create(&wt, repo, "main", "goald/s-1", wtp) != 0)
        fail_msg("create over a stale lock: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", wtp), "goald/s-1");
    assert_int_equal(access(lock, F_OK), -1);
    vcs_worktree_free(wt);
    /* a link in the lock's place: refused, and its target kept */
    assert_int_equal(sh("mkdir -p '%s' && echo keep > '%s/t' && ln -s '%s/t' "
                        "'%s/.git/refs/heads/goald/s-2.lock'",
                        outside, outside, outside, repo),
                     0);
    testutil_tmp_path(wtp, sizeof(wtp), "stalelock/wts/g-2");
    create_refused(repo, "goald/s-2", wtp);
    assert_string_equal(cap("cat '%s/t'", outside), "keep");
    /* a folder on the way that leads out of the git folder: refused */
    assert_int_equal(sh("mkdir -p '%s/d' && : > '%s/d/s-3.lock' && ln -s '%s/d' "
                        "'%s/.git/refs/heads/goald/sub'",
                        outside, outside, outside, repo),
                     0);
    testutil_tmp_path(wtp, sizeof(wtp), "stalelock/wts/g-3");
    create_refused(repo, "goald/sub/s-3", wtp);
    assert_int_equal(access(cap("echo '%s/d/s-3.lock'", outside), F_OK), 0);
}

/* A job killed in its commit leaves the branch's lock and the worktree's
 * index lock; the next job takes the worktree up again: both are removed
 * (only goald writes there) and its commit goes through.  A link in the
 * index lock's place is refused, its target kept. */
static void test_worktree_reuse_clears_commit_locks(void **state)
{
    struct fx f;
    struct vcs_commit_result r = {0};
    struct vcs_commit_msg m = {"an item", NULL, "goal-1", "item-1", NULL};
    vcs_worktree *again = NULL;
    char p[700], outside[600], index_lock[800];

    (void)state;
    fx_setup(&f, "commitlocks");
    vcs_worktree_free(f.wt);
    f.wt = NULL;
    snprintf(index_lock, sizeof(index_lock), "%s/.git/worktrees/g-0123abcd/index.lock", f.repo);
    assert_int_equal(sh("mkdir -p '%s/.git/refs/heads/goald' && : > '%s/.git/refs/heads/" BR
                        ".lock' && : > '%s'",
                        f.repo, f.repo, index_lock),
                     0);
    if (vcs_worktree_create(&again, f.repo, "main", BR, f.wtp) != 0)
        fail_msg("taking the worktree up again over stale locks: %s", err_last());
    snprintf(p, sizeof(p), "%s/.git/refs/heads/" BR ".lock", f.repo);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(access(index_lock, F_OK), -1);
    snprintf(p, sizeof(p), "%s/new.txt", f.wtp);
    write_text(p, "new\n");
    if (vcs_commit_item(&r, again, "main", &m) != 0)
        fail_msg("commit after the locks: %s", err_last());
    assert_int_equal(r.created, 1);
    assert_string_equal(cap("git -C '%s' rev-parse " BR, f.repo), r.sha);
    vcs_commit_result_release(&r);
    vcs_worktree_free(again);
    /* a link in the index lock's place: refused, its target kept */
    testutil_tmp_path(outside, sizeof(outside), "commitlocks/outside");
    assert_int_equal(sh("mkdir -p '%s' && echo keep > '%s/t' && ln -s '%s/t' '%s'", outside,
                        outside, outside, index_lock),
                     0);
    create_refused(f.repo, BR, f.wtp);
    assert_string_equal(cap("cat '%s/t'", outside), "keep");
}

/* A job killed inside git_worktree_add can leave the registration's
 * folder (.git/worktrees/NAME) without the files that make it one: the
 * next create removes it and succeeds.  One whose folder is a link is
 * refused, its target kept. */
static void test_worktree_half_registered(void **state)
{
    char repo[600], wtp[600], outside[600], admin[700];
    vcs_worktree *wt = NULL;

    (void)state;
    testutil_tmp_path(repo, sizeof(repo), "halfreg/repo");
    testutil_tmp_path(wtp, sizeof(wtp), "halfreg/wts/g-1");
    testutil_tmp_path(outside, sizeof(outside), "halfreg/outside");
    assert_int_equal(make_repo(repo), 0);
    snprintf(admin, sizeof(admin), "%s/.git/worktrees/g-1", repo);
    assert_int_equal(sh("mkdir -p '%s' && echo 'ref: refs/heads/x' > '%s/HEAD'", admin, admin),
                     0);
    if (vcs_worktree_create(&wt, repo, "main", "goald/h-1", wtp) != 0)
        fail_msg("create over a half-made registration: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", wtp), "goald/h-1");
    vcs_worktree_free(wt);
    wt = NULL;
    /* a link in the registration's place: refused, its target kept */
    assert_int_equal(sh("mkdir -p '%s' && echo keep > '%s/HEAD' && "
                        "ln -s '%s' '%s/.git/worktrees/g-2'",
                        outside, outside, outside, repo),
                     0);
    testutil_tmp_path(wtp, sizeof(wtp), "halfreg/wts/g-2");
    assert_int_equal(vcs_worktree_create(&wt, repo, "main", "goald/h-2", wtp), ERR_INVALID);
    assert_non_null(strstr(err_last(), "left alone"));
    assert_null(wt);
    assert_string_equal(cap("cat '%s/HEAD'", outside), "keep");
}

/* An item's worktree (<root>/<goal id>.items/<item id>) left half-made by
 * a job killed in git_worktree_add (its folder, no registration) is made
 * again, as a goal's is.  The same under a ".items" that is a link out of
 * the root is refused, the folder it points at kept. */
static void test_worktree_half_made_item(void **state)
{
    char repo[600], root[600], wtp[800], outside[600], items[700];
    const char *gid = "0123abcd-0000-4000-8000-000000000001";
    const char *iid = "89abcdef-0000-4000-8000-000000000002";
    vcs_worktree *wt = NULL;

    (void)state;
    testutil_tmp_path(repo, sizeof(repo), "halfitem/repo");
    testutil_tmp_path(root, sizeof(root), "halfitem/root");
    testutil_tmp_path(outside, sizeof(outside), "halfitem/outside");
    assert_int_equal(make_repo(repo), 0);
    setenv("GOALD_VCS_WORKTREE_ROOT", root, 1);
    assert_int_equal(config_load(NULL), 0);
    snprintf(wtp, sizeof(wtp), "%s/%s.items/%s", root, gid, iid);
    assert_int_equal(sh("mkdir -p '%s' && printf 'gitdir: %s/.git/worktrees/%s\\n' > '%s/.git' && "
                        "echo half > '%s/README'",
                        wtp, repo, iid, wtp, wtp),
                     0);
    if (vcs_worktree_create(&wt, repo, "main", "goald/i-1", wtp) != 0)
        fail_msg("create over a half-made item worktree: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", wtp), "goald/i-1");
    assert_string_equal(cap("cat '%s/README'", wtp), "hello\nmore");
    vcs_worktree_free(wt);
    wt = NULL;
    /* ".items" a link to a folder outside the root: not goald's folder */
    snprintf(items, sizeof(items), "%s/%s.items", root, "0123abcd-0000-4000-8000-000000000003");
    assert_int_equal(sh("mkdir -p '%s/%s' && echo keep > '%s/%s/keep.txt' && ln -s '%s' '%s'",
                        outside, iid, outside, iid, outside, items),
                     0);
    snprintf(wtp, sizeof(wtp), "%s/%s", items, iid);
    assert_int_equal(vcs_worktree_create(&wt, repo, "main", "goald/i-2", wtp), ERR_INVALID);
    assert_null(wt);
    assert_non_null(strstr(err_last(), "is not a worktree of"));
    assert_string_equal(cap("cat '%s/%s/keep.txt'", outside, iid), "keep");
    unsetenv("GOALD_VCS_WORKTREE_ROOT");
    config_reset();
}

static void test_worktree_create(void **state)
{
    struct fx f;
    vcs_worktree *again = NULL, *other = NULL;
    char head[VCS_OID_HEX], tree[VCS_OID_HEX], p[700];

    (void)state;
    fx_setup(&f, "create");
    /* on the new branch, at main's head, in the given folder */
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", f.wtp), BR);
    assert_string_equal(cap("git -C '%s' rev-parse HEAD", f.wtp),
                        cap("git -C '%s' rev-parse main", f.repo));
    assert_string_equal(cap("git -C '%s' rev-parse --verify -q refs/heads/" BR, f.repo),
                        cap("git -C '%s' rev-parse main", f.repo));
    assert_string_equal(vcs_worktree_branch(f.wt), BR);
    assert_int_equal(vcs_worktree_head(head, f.wt), 0);
    assert_string_equal(head, cap("git -C '%s' rev-parse main", f.repo));
    assert_string_equal(vcs_worktree_path(f.wt), cap("realpath '%s'", f.wtp));
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
    assert_string_equal(tree, cap("git -C '%s' rev-parse 'HEAD^{tree}'", f.wtp));
    assert_true(strstr(cap("git -C '%s' worktree list --porcelain", f.repo), f.wtp) != NULL);
    assert_string_equal(cap("cat '%s/README'", f.wtp), "hello\nmore");

    /* the state tree follows the working folder, without staging */
    snprintf(p, sizeof(p), "%s/new.txt", f.wtp);
    write_text(p, "new\n");
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
    assert_string_not_equal(tree, cap("git -C '%s' rev-parse 'HEAD^{tree}'", f.wtp));
    assert_string_equal(tree, cap("cd '%s' && export GIT_INDEX_FILE=$(mktemp -u) && "
                                  "git add -A && git write-tree; rm -f \"$GIT_INDEX_FILE\"",
                                  f.wtp));
    assert_string_equal(cap("git -C '%s' status --porcelain", f.wtp), "?? new.txt");

    /* idempotent: the same call reuses it and keeps the change */
    assert_int_equal(vcs_worktree_create(&again, f.repo, "main", BR, f.wtp), 0);
    assert_string_equal(vcs_worktree_branch(again), BR);
    assert_string_equal(cap("cat '%s'", p), "new");
    vcs_worktree_free(again);

    /* the folder holds another branch's worktree: refused */
    assert_int_equal(vcs_worktree_create(&other, f.repo, "main", "goald/other-11112222", f.wtp),
                     ERR_INVALID);
    assert_null(other);
    /* a base that does not exist */
    snprintf(p, sizeof(p), "%s/../x-1", f.wtp);
    assert_int_equal(vcs_worktree_create(&other, f.repo, "nope", "goald/x-1", p), ERR_NOTFOUND);
    assert_null(other);
    /* an invalid branch name */
    assert_int_equal(vcs_worktree_create(&other, f.repo, "main", "bad..name", p), ERR_INVALID);
    /* a plain non-empty folder is never taken over */
    assert_int_equal(sh("mkdir -p '%s' && echo x > '%s/keep'", p, p), 0);
    assert_int_equal(vcs_worktree_create(&other, f.repo, "main", "goald/x-1", p), ERR_INVALID);
    assert_string_equal(cap("cat '%s/keep'", p), "x");
    vcs_worktree_free(f.wt);
}

static void test_commit_exact_changes(void **state)
{
    struct fx f;
    struct vcs_commit_result r = {0}, r2 = {0};
    struct vcs_commit_msg m = {.title = "Fix the failing test",
                               .body = "Summary: fixed it.\n\nEvidence: make test passes.",
                               .goal_id = "g-0123abcd-aaaa",
                               .work_item_id = "wi-0001",
                               .gates = "tests=pass lint=pass"};
    char p[700], sha[HASH_HEX_SIZE];
    int empty = -1;
    const char *base;
    struct vcs_changed_file *cf;

    (void)state;
    fx_setup(&f, "commit");
    base = strdup(cap("git -C '%s' rev-parse HEAD", f.wtp));
    assert_int_equal(vcs_diff_is_empty(&empty, f.wt), 0);
    assert_int_equal(empty, 1);

    /* modify, add, delete; plus ignored files that must stay out */
    snprintf(p, sizeof(p), "%s/README", f.wtp);
    write_text(p, "hello\nchanged\n");
    snprintf(p, sizeof(p), "%s/src/new.c", f.wtp);
    assert_int_equal(sh("mkdir -p '%s/src' '%s/build'", f.wtp, f.wtp), 0);
    write_text(p, "int main(void) { return 0; }\n");
    snprintf(p, sizeof(p), "%s/old.txt", f.wtp);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof(p), "%s/debug.log", f.wtp);
    write_text(p, "noise\n");
    snprintf(p, sizeof(p), "%s/build/out.o", f.wtp);
    write_text(p, "obj\n");

    assert_int_equal(vcs_diff_is_empty(&empty, f.wt), 0);
    assert_int_equal(empty, 0);
    /* the query did not stage anything */
    assert_true(strstr(cap("git -C '%s' status --porcelain", f.wtp), " D old.txt") != NULL);

    if (vcs_commit_item(&r, f.wt, "main", &m) != 0)
        fail_msg("commit: %s", err_last());
    assert_int_equal(r.created, 1);
    assert_int_equal(strlen(r.sha), 40);
    assert_string_equal(r.sha, cap("git -C '%s' rev-parse " BR, f.repo));
    assert_string_equal(cap("git -C '%s' rev-parse HEAD^", f.wtp), base);
    /* exactly the three changes, as git sees them */
    assert_string_equal(cap("git -C '%s' show --name-status --format= HEAD | LC_ALL=C sort", f.wtp),
                        "A\tsrc/new.c\nD\told.txt\nM\tREADME");
    assert_int_equal(r.nfiles, 3);
    assert_non_null(cf = find_file(&r, "src/new.c"));
    assert_int_equal(cf->status, 'A');
    hash_sha256_hex(sha, "int main(void) { return 0; }\n", 29);
    assert_string_equal(cf->sha256, sha);
    assert_non_null(cf = find_file(&r, "old.txt"));
    assert_int_equal(cf->status, 'D');
    assert_string_equal(cf->sha256, "");
    assert_non_null(cf = find_file(&r, "README"));
    assert_int_equal(cf->status, 'M');
    assert_string_equal(cf->sha256, cap("sha256sum '%s/README' | cut -c1-64", f.wtp));
    /* message, trailers, author from the configuration */
    assert_string_equal(cap("git -C '%s' log -1 --format=%%s", f.wtp), "Fix the failing test");
    assert_true(strstr(cap("git -C '%s' log -1 --format=%%b", f.wtp),
                       "Summary: fixed it.\n\nEvidence: make test passes.") != NULL);
    assert_string_equal(
        cap("git -C '%s' log -1 --format=%%B | git interpret-trailers --parse", f.wtp),
        "Goal-Id: g-0123abcd-aaaa\nWork-Item-Id: wi-0001\nGates: tests=pass lint=pass");
    assert_string_equal(cap("git -C '%s' log -1 --format='%%an <%%ae>|%%cn <%%ce>'", f.wtp),
                        "goald <goald@localhost>|goald <goald@localhost>");
    /* clean afterwards; the ignored files are still there and untracked */
    assert_string_equal(cap("git -C '%s' status --porcelain", f.wtp), "");
    assert_string_equal(cap("cat '%s/debug.log' '%s/build/out.o'", f.wtp, f.wtp), "noise\nobj");
    assert_string_equal(cap("git -C '%s' ls-files debug.log build", f.wtp), "");
    /* fsck: exit 0 and nothing to say (dangling objects aside: the
     * read-only diff queries may leave unreferenced blobs, as git add does) */
    assert_int_equal(sh("git -C '%s' fsck --strict --no-dangling --no-progress", f.repo), 0);
    assert_string_equal(cap("git -C '%s' fsck --strict --no-dangling --no-progress 2>&1", f.repo),
                        "");

    /* the find helper sees the commit, bounded by the base */
    char found[VCS_OID_HEX];
    assert_int_equal(vcs_commit_find_by_trailer(found, f.wt, "main", VCS_TRAILER_ITEM, "wi-0001"),
                     0);
    assert_string_equal(found, r.sha);
    assert_int_equal(vcs_commit_find_by_trailer(found, f.wt, "main", VCS_TRAILER_ITEM, "wi-0002"),
                     ERR_NOTFOUND);
    assert_int_equal(vcs_commit_find_by_trailer(found, f.wt, r.sha, VCS_TRAILER_ITEM, "wi-0001"),
                     ERR_NOTFOUND); /* below the base: not searched */
    assert_int_equal(
        vcs_commit_find_by_trailer(found, f.wt, "no-such-base", VCS_TRAILER_ITEM, "wi-0001"),
        ERR_INVALID);
    char val[128];
    assert_int_equal(vcs_commit_trailer(val, sizeof(val), f.wt, r.sha, VCS_TRAILER_GATES), 0);
    assert_string_equal(val, "tests=pass lint=pass");

    /* a re-run of the same item (crash after commit): no second commit */
    snprintf(p, sizeof(p), "%s/later.txt", f.wtp);
    write_text(p, "later\n");
    assert_int_equal(vcs_commit_item(&r2, f.wt, "main", &m), 0);
    assert_int_equal(r2.created, 0);
    assert_string_equal(r2.sha, r.sha);
    assert_int_equal(r2.nfiles, 3);
    assert_string_equal(cap("git -C '%s' rev-list --count main.." BR, f.repo), "1");
    assert_string_equal(cap("git -C '%s' status --porcelain", f.wtp), "?? later.txt");
    vcs_commit_result_release(&r2);

    /* the next item commits the new file alone */
    m.work_item_id = "wi-0002";
    m.title = "Second\nitem";
    m.body = NULL;
    m.gates = NULL;
    assert_int_equal(vcs_commit_item(&r2, f.wt, "main", &m), 0);
    assert_int_equal(r2.created, 1);
    assert_int_equal(r2.nfiles, 1);
    assert_string_equal(r2.files[0].path, "later.txt");
    assert_string_equal(cap("git -C '%s' log -1 --format=%%B", f.wtp),
                        "Second item\n\nGoal-Id: g-0123abcd-aaaa\nWork-Item-Id: wi-0002\n"
                        "Gates: none");
    assert_string_equal(cap("git -C '%s' rev-list --count main.." BR, f.repo), "2");
    vcs_commit_result_release(&r2);

    /* a body with patch-like "---" lines keeps its trailers readable */
    snprintf(p, sizeof(p), "%s/third.txt", f.wtp);
    write_text(p, "3\n");
    m.work_item_id = "wi-0004";
    m.body = "Evidence:\n\n---\n--- a/x.c\n+++ b/x.c\n---";
    m.title = "--- odd title";
    assert_int_equal(vcs_commit_item(&r2, f.wt, "main", &m), 0);
    assert_int_equal(r2.created, 1);
    assert_string_equal(
        cap("git -C '%s' log -1 --format=%%B | git interpret-trailers --parse", f.wtp),
        "Goal-Id: g-0123abcd-aaaa\nWork-Item-Id: wi-0004\nGates: none");
    assert_string_equal(cap("git -C '%s' log -1 --format=%%s", f.wtp), " --- odd title");
    assert_true(strstr(cap("git -C '%s' log -1 --format=%%b", f.wtp),
                       "Evidence:\n\n ---\n --- a/x.c\n+++ b/x.c\n ---") != NULL);
    assert_int_equal(vcs_commit_find_by_trailer(found, f.wt, "main", VCS_TRAILER_ITEM, "wi-0004"),
                     0);
    assert_string_equal(found, r2.sha);
    assert_string_equal(cap("git -C '%s' rev-list --count main.." BR, f.repo), "3");
    vcs_commit_result_release(&r2);
    m.body = NULL;

    /* nothing changed: no commit */
    m.work_item_id = "wi-0003";
    assert_int_equal(vcs_commit_item(&r2, f.wt, "main", &m), 0);
    assert_int_equal(r2.created, 0);
    assert_string_equal(r2.sha, "");
    assert_int_equal(r2.nfiles, 0);
    assert_string_equal(cap("git -C '%s' rev-list --count main.." BR, f.repo), "3");
    vcs_commit_result_release(&r2);

    /* required fields */
    m.title = "";
    assert_int_equal(vcs_commit_item(&r2, f.wt, "main", &m), ERR_INVALID);
    vcs_commit_result_release(&r);
    free((void *)base);
    vcs_worktree_free(f.wt);
}

static void test_commit_author_from_config(void **state)
{
    struct fx f;
    struct vcs_commit_result r = {0};
    struct vcs_commit_msg m = {.title = "t", .goal_id = "g", .work_item_id = "w"};
    char p[700];

    (void)state;
    fx_setup(&f, "author");
    setenv("GOALD_VCS_AUTHOR_NAME", "Robo Dev", 1);
    setenv("GOALD_VCS_AUTHOR_EMAIL", "robo@example.org", 1);
    assert_int_equal(config_load(NULL), 0);
    snprintf(p, sizeof(p), "%s/a.txt", f.wtp);
    write_text(p, "a\n");
    assert_int_equal(vcs_commit_item(&r, f.wt, NULL, &m), 0);
    assert_string_equal(cap("git -C '%s' log -1 --format='%%an <%%ae>|%%cn <%%ce>'", f.wtp),
                        "Robo Dev <robo@example.org>|Robo Dev <robo@example.org>");
    unsetenv("GOALD_VCS_AUTHOR_NAME");
    unsetenv("GOALD_VCS_AUTHOR_EMAIL");
    config_reset();
    vcs_commit_result_release(&r);
    vcs_worktree_free(f.wt);
}

static void test_reset_saves_patch(void **state)
{
    struct fx f;
    strbuf d = STRBUF_INIT;
    char p[700], patch[700], before[700];
    int saved = -1, empty = -1;
    static const unsigned char bin[] = {0, 1, 2, 3, 255, 0, 'x', '\n'};
    FILE *fp;

    (void)state;
    fx_setup(&f, "reset");
    snprintf(p, sizeof(p), "%s/README", f.wtp);
    write_text(p, "rewritten\n");
    snprintf(p, sizeof(p), "%s/dir/untracked.txt", f.wtp);
    assert_int_equal(sh("mkdir -p '%s/dir'", f.wtp), 0);
    write_text(p, "u\n");
    snprintf(p, sizeof(p), "%s/old.txt", f.wtp);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof(p), "%s/blob.bin", f.wtp);
    fp = fopen(p, "wb");
    assert_non_null(fp);
    fwrite(bin, 1, sizeof(bin), fp);
    fclose(fp);
    snprintf(p, sizeof(p), "%s/keep.log", f.wtp);
    write_text(p, "ignored\n");
    /* the expected post-patch state, for comparison after apply */
    testutil_tmp_path(before, sizeof(before), "reset/before");
    assert_int_equal(sh("mkdir -p '%s' && cd '%s' && tar cf '%s/t.tar' --exclude=.git "
                        "--exclude=keep.log .",
                        before, f.wtp, before),
                     0);

    assert_int_equal(vcs_diff_text(&d, f.wt), 0);
    assert_true(strstr(strbuf_cstr(&d), "diff --git a/README b/README") != NULL);
    assert_true(strstr(strbuf_cstr(&d), "+++ b/dir/untracked.txt") != NULL);
    assert_true(strstr(strbuf_cstr(&d), "deleted file mode") != NULL);
    assert_true(strstr(strbuf_cstr(&d), "GIT binary patch") != NULL);
    assert_null(strstr(strbuf_cstr(&d), "keep.log"));
    /* a small cap is reported, not overrun */
    strbuf small = STRBUF_INIT;
    strbuf_init(&small, 16);
    assert_int_equal(vcs_diff_text(&small, f.wt), ERR_TOOBIG);
    assert_int_equal(small.len, 0);
    strbuf_release(&small);

    testutil_tmp_path(patch, sizeof(patch), "reset/artifacts/run-1.patch");
    if (vcs_worktree_reset(&saved, f.wt, patch) != 0)
        fail_msg("reset: %s", err_last());
    assert_int_equal(saved, 1);
    /* the patch file is the diff text */
    strbuf pf = STRBUF_INIT;
    assert_int_equal(fs_read_file(&pf, patch, 1 << 20), 0);
    assert_int_equal(pf.len, d.len);
    assert_memory_equal(pf.buf, d.buf, d.len);
    strbuf_release(&pf);
    assert_string_equal(cap("stat -c %%a '%s'", patch), "600");
    /* clean: no changes; the folder was made again from the branch, so
     * untracked and ignored files are gone alike */
    assert_string_equal(
        cap("git -C '%s' status --porcelain --untracked-files=all --ignored", f.wtp), "");
    assert_string_equal(cap("cat '%s/README'", f.wtp), "hello\nmore");
    assert_int_not_equal(access(p, F_OK), 0); /* keep.log */
    snprintf(p, sizeof(p), "%s/dir/untracked.txt", f.wtp);
    assert_int_not_equal(access(p, F_OK), 0);
    assert_int_equal(vcs_diff_is_empty(&empty, f.wt), 0);
    assert_int_equal(empty, 1);
    /* git accepts the patch and it restores the run's state exactly */
    assert_int_equal(sh("cd '%s' && git apply --check '%s'", f.wtp, patch), 0);
    assert_int_equal(sh("cd '%s' && git apply '%s'", f.wtp, patch), 0);
    assert_int_equal(sh("mkdir -p '%s/x' && cd '%s/x' && tar xf ../t.tar && "
                        "diff -r --exclude=.git --exclude=keep.log '%s/x' '%s' >&2",
                        before, before, before, f.wtp),
                     0);
    /* nothing to save: no file */
    assert_int_equal(vcs_worktree_reset(NULL, f.wt, NULL), 0);
    testutil_tmp_path(patch, sizeof(patch), "reset/artifacts/run-2.patch");
    assert_int_equal(vcs_worktree_reset(&saved, f.wt, patch), 0);
    assert_int_equal(saved, 0);
    assert_int_not_equal(access(patch, F_OK), 0);
    strbuf_release(&d);
    vcs_worktree_free(f.wt);
}

static void test_push_bare_remote(void **state)
{
    struct fx f;
    struct vcs_commit_result r = {0};
    struct vcs_commit_msg m = {.title = "t", .goal_id = "g", .work_item_id = "w1"};
    char bare[600], bare2[600], p[700], url[700];

    (void)state;
    fx_setup(&f, "push");
    testutil_tmp_path(bare, sizeof(bare), "push/remote.git");
    testutil_tmp_path(bare2, sizeof(bare2), "push/plain.git");
    assert_int_equal(sh("git init -q --bare '%s' && git init -q --bare '%s' && "
                        "git -C '%s' remote add origin 'file://%s' && "
                        "git -C '%s' remote add plain '%s'",
                        bare, bare2, f.repo, bare, f.repo, bare2),
                     0);
    snprintf(p, sizeof(p), "%s/a.txt", f.wtp);
    write_text(p, "a\n");
    assert_int_equal(vcs_commit_item(&r, f.wt, "main", &m), 0);

    if (vcs_push(f.repo, "origin", BR) != 0)
        fail_msg("push: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/" BR, bare), r.sha);
    /* again: up to date, fine */
    assert_int_equal(vcs_push(f.wtp, "origin", BR), 0);
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/" BR, bare), r.sha);
    /* a remote given as a local path, and a URL used directly */
    assert_int_equal(vcs_push(f.repo, "plain", BR), 0);
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/" BR, bare2), r.sha);
    assert_int_equal(sh("git -C '%s' fsck --no-progress >&2", bare), 0);
    assert_int_equal(vcs_remote_url(url, sizeof(url), f.repo, "origin"), 0);
    assert_true(strncmp(url, "file://", 7) == 0);
    /* errors name the remote */
    assert_int_equal(vcs_push(f.repo, "nosuch", BR), ERR_NOTFOUND);
    assert_true(strstr(err_last(), "nosuch") != NULL);
    assert_int_equal(vcs_push(f.repo, "origin", "goald/absent-1"), ERR_NOTFOUND);
    assert_int_equal(vcs_remote_url(url, sizeof(url), f.repo, "nosuch"), ERR_NOTFOUND);
    /* a non-fast-forward is refused, not forced */
    assert_int_equal(sh("cd '%s' && git commit -q --amend -m rewritten", f.wtp), 0);
    assert_int_not_equal(vcs_push(f.repo, "origin", BR), 0);
    assert_true(strstr(err_last(), "push to origin") != NULL);
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/" BR, bare), r.sha);
    /* an unreachable remote: an error naming it */
    assert_int_equal(sh("git -C '%s' remote add gone 'file:///nonexistent/x.git'", f.repo), 0);
    assert_int_not_equal(vcs_push(f.repo, "gone", BR), 0);
    assert_true(strstr(err_last(), "push to gone") != NULL);
    vcs_commit_result_release(&r);
    vcs_worktree_free(f.wt);
}

static void test_worktree_remove_keeps_branch(void **state)
{
    struct fx f;
    struct vcs_commit_result r = {0};
    struct vcs_commit_msg m = {.title = "t", .goal_id = "g", .work_item_id = "w1"};
    char p[700], head[VCS_OID_HEX];

    (void)state;
    fx_setup(&f, "remove");
    snprintf(p, sizeof(p), "%s/a.txt", f.wtp);
    write_text(p, "a\n");
    assert_int_equal(vcs_commit_item(&r, f.wt, "main", &m), 0);
    vcs_worktree_free(f.wt);

    if (vcs_worktree_remove(f.repo, f.wtp) != 0)
        fail_msg("remove: %s", err_last());
    assert_int_not_equal(access(f.wtp, F_OK), 0);
    assert_null(strstr(cap("git -C '%s' worktree list --porcelain", f.repo), "g-0123abcd"));
    assert_string_equal(cap("git -C '%s' rev-parse refs/heads/" BR, f.repo), r.sha);
    assert_string_equal(cap("ls '%s/.git/worktrees' 2>/dev/null", f.repo), "");
    /* again: nothing to do */
    assert_int_equal(vcs_worktree_remove(f.repo, f.wtp), 0);
    /* the main work folder is never removed */
    assert_int_equal(vcs_worktree_remove(f.repo, f.repo), ERR_INVALID);
    assert_int_equal(access(f.repo, F_OK), 0);

    /* made again: the kept branch is used as it is, not reset to main */
    assert_int_equal(vcs_worktree_create(&f.wt, f.repo, "main", BR, f.wtp), 0);
    assert_int_equal(vcs_worktree_head(head, f.wt), 0);
    assert_string_equal(head, r.sha);
    assert_string_equal(cap("cat '%s/a.txt'", f.wtp), "a");
    vcs_worktree_free(f.wt);

    /* the folder deleted behind git's back: the stale entry is pruned */
    assert_int_equal(sh("rm -rf '%s'", f.wtp), 0);
    assert_int_equal(vcs_worktree_create(&f.wt, f.repo, "main", BR, f.wtp), 0);
    assert_string_equal(cap("git -C '%s' rev-parse HEAD", f.wtp), r.sha);
    vcs_worktree_free(f.wt);
    vcs_commit_result_release(&r);
}

/* A worktree whose branch name (307 bytes) is longer than the 255 bytes
 * it is read into: the reset's rebuild (which removes the folder and makes
 * it again on that branch) refuses before removing anything, rather than
 * make it again on the branch the cut name would give. */
static void test_reset_long_branch_not_cut(void **state)
{
    char repo[600], wtp[600], p[700], branch[400], cut[256], a[201], b[101];
    vcs_worktree *wt = NULL;

    (void)state;
    memset(a, 'a', 200);
    a[200] = '\0';
    memset(b, 'b', 100);
    b[100] = '\0';
    snprintf(branch, sizeof(branch), "goald/%s/%s", a, b);
    memcpy(cut, branch, sizeof(cut) - 1);
    cut[sizeof(cut) - 1] = '\0';
    testutil_tmp_path(repo, sizeof(repo), "longbranch/repo");
    testutil_tmp_path(wtp, sizeof(wtp), "longbranch/wts/g-0123abcd");
    assert_int_equal(make_repo(repo), 0);
    if (vcs_worktree_create(&wt, repo, "main", branch, wtp) != 0)
        fail_msg("create: %s", err_last());
    snprintf(p, sizeof(p), "%s/work.txt", wtp);
    write_text(p, "work\n");

    assert_int_not_equal(vcs_worktree_reset(NULL, wt, NULL), 0);
    assert_non_null(strstr(err_last(), "HEAD is not on a branch (or its name is over 255 bytes)"));
    /* nothing removed, nothing made on the cut name */
    assert_string_equal(cap("cat '%s'", p), "work");
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", wtp), branch);
    assert_string_equal(cap("git -C '%s' branch --list '%s'", repo, cut), "");
    vcs_worktree_free(wt);
}

/* A catch-up journal that can never be finished (not one, or naming
 * objects the repository lacks) is dropped, nothing done: it never holds
 * the item's next run back; one at a HEAD the worktree no longer has is
 * stale and dropped too. */
static void test_catch_up_journal_dropped(void **state)
{
    static const char *const bad[] = {
        "not a journal\n",
        "1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 "
        "3333333333333333333333333333333333333333\n",
    };
    struct fx f;
    char journal[700], p[700], head[VCS_OID_HEX];
    int resumed = -1;

    (void)state;
    fx_setup(&f, "journal");
    snprintf(journal, sizeof(journal), "%s.catch-up", f.wtp);
    snprintf(p, sizeof(p), "%s/work.txt", f.wtp);
    write_text(p, "work\n");
    assert_int_equal(vcs_worktree_head(head, f.wt), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_text(journal, bad[i]);
        if (vcs_worktree_catch_up_resume(&resumed, f.wt, journal) != 0)
            fail_msg("journal %zu: %s", i, err_last());
        assert_int_equal(resumed, 0);
        assert_int_equal(access(journal, F_OK), -1);
        assert_string_equal(cap("cat '%s'", p), "work"); /* nothing done */
    }
    /* a well-formed journal of another HEAD: stale */
    {
        char line[200];
        snprintf(line, sizeof(line), "%s %s %s\n", "4444444444444444444444444444444444444444",
                 "5555555555555555555555555555555555555555", head);
        write_text(journal, line);
        assert_int_equal(vcs_worktree_catch_up_resume(&resumed, f.wt, journal), 0);
        assert_int_equal(resumed, 0);
        assert_int_equal(access(journal, F_OK), -1);
        assert_string_equal(cap("cat '%s'", p), "work");
    }
    /* none: nothing to do */
    assert_int_equal(vcs_worktree_catch_up_resume(&resumed, f.wt, journal), 0);
    assert_int_equal(resumed, 0);
    vcs_worktree_free(f.wt);
}

/* Worktrees are opened through goald's records: a rewritten or forged .git
 * is refused by vcs_worktree_open and makes vcs_worktree_create rebuild
 * the folder; snapshots write no object into the repository. */
static void test_records_and_snapshots(void **state)
{
    struct fx f;
    vcs_worktree *wt = NULL;
    char p[700], out[700], tree[VCS_OID_HEX], objs[64];
    int empty = -1;

    (void)state;
    fx_setup(&f, "records");
    testutil_tmp_path(out, sizeof(out), "records/outside");
    assert_int_equal(sh("mkdir -p '%s/.git' && echo keep > '%s/keep'", out, out), 0);
    assert_string_equal(vcs_worktree_git_common(f.wt), cap("realpath '%s/.git'", f.repo));
    assert_string_equal(vcs_worktree_git_dir(f.wt),
                        cap("realpath '%s/.git/worktrees/g-0123abcd'", f.repo));
    assert_null(vcs_worktree_rebuilt(f.wt));

    /* snapshots of changes write nothing into the object store */
    snprintf(objs, sizeof(objs), "%s", cap("find '%s/.git/objects' -type f | wc -l", f.repo));
    snprintf(p, sizeof(p), "%s/new.txt", f.wtp);
    for (int i = 0; i < 3; i++) {
        char text[32];
        snprintf(text, sizeof(text), "version %d\n", i);
        write_text(p, text);
        assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
        assert_string_equal(tree, cap("cd '%s' && export GIT_INDEX_FILE=$(mktemp -u) && "
                                      "git add -A && git write-tree; rm -f \"$GIT_INDEX_FILE\"",
                                      f.wtp));
        assert_int_equal(vcs_diff_is_empty(&empty, f.wt), 0);
        assert_int_equal(empty, 0);
    }
    /* (the write-tree above went through git itself: count after a reset) */
    assert_int_equal(sh("git -C '%s' prune --expire=now", f.repo), 0);
    assert_string_equal(cap("find '%s/.git/objects' -type f | wc -l", f.repo), objs);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
    assert_string_equal(cap("find '%s/.git/objects' -type f | wc -l", f.repo), objs);

    /* over the cap: refused, named relative to the worktree */
    setenv("GOALD_TOOLS_MAX_FILE_MB", "1", 1);
    assert_int_equal(config_load(NULL), 0);
    assert_int_equal(sh("head -c 1100000 /dev/zero > '%s/big.bin'", f.wtp), 0);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), ERR_TOOBIG);
    assert_non_null(strstr(err_last(), "big.bin is 1.0 MiB, over tools.max_file_mb (1 MiB)"));
    assert_int_equal(sh("echo big.bin >> '%s/.gitignore'", f.wtp), 0); /* ignored: fine */
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
    unsetenv("GOALD_TOOLS_MAX_FILE_MB");
    config_reset();
    vcs_worktree_free(f.wt);

    /* .git rewritten to name another folder: open refuses, create rebuilds */
    snprintf(p, sizeof(p), "%s/.git", f.wtp);
    write_text(p, "gitdir: /\n");
    assert_int_equal(vcs_worktree_open(&wt, f.repo, f.wtp), ERR_INVALID);
    assert_null(wt);
    assert_int_equal(vcs_worktree_create(&wt, f.repo, "main", BR, f.wtp), 0);
    assert_non_null(vcs_worktree_rebuilt(wt));
    assert_string_not_equal(cap("cat '%s'", p), "gitdir: /");
    assert_string_equal(cap("git -C '%s' status --porcelain", f.wtp), "");
    vcs_worktree_free(wt);
    /* a link to a folder outside: same, and nothing outside is touched */
    assert_int_equal(sh("rm '%s' && ln -s '%s' '%s'", p, out, p), 0);
    assert_int_equal(vcs_worktree_open(&wt, f.repo, f.wtp), ERR_INVALID);
    assert_int_equal(vcs_worktree_create(&wt, f.repo, "main", BR, f.wtp), 0);
    assert_non_null(strstr(vcs_worktree_rebuilt(wt), "symbolic link"));
    assert_string_equal(cap("ls -A '%s'", out), ".git\nkeep");
    assert_int_equal(vcs_worktree_open(&f.wt, f.repo, f.wtp), 0); /* intact again */
    vcs_worktree_free(f.wt);

    /* reset: a tracked file swapped for a link to outside comes back as
     * the file, and the target outside keeps its content */
    assert_int_equal(sh("cd '%s' && rm README && ln -s '%s/keep' README", f.wtp, out), 0);
    assert_int_equal(vcs_worktree_reset(NULL, wt, NULL), 0);
    assert_string_equal(cap("cat '%s/keep'", out), "keep");
    assert_string_equal(cap("test -L '%s/README' || cat '%s/README'", f.wtp, f.wtp), "hello\nmore");
    vcs_worktree_free(wt);
    /* not registered here: nothing is touched */
    assert_int_equal(vcs_worktree_open(&wt, f.repo, out), ERR_NOTFOUND);
}

static void test_branch_name_for_goal(void **state)
{
    char b[128];

    (void)state;
    assert_int_equal(
        vcs_branch_name_for_goal(b, sizeof(b), "Fix the failing test!", "0123ABCD-ef45-6789"), 0);
    assert_string_equal(b, "goald/fix-the-failing-test-0123abcd");
    assert_true(vcs_branch_name_valid(b));
    assert_int_equal(vcs_branch_name_for_goal(b, sizeof(b), "  ..\xc3\xbcn/..~^:?*[ \\ ", "9f"), 0);
    assert_string_equal(b, "goald/n-9f");
    assert_true(vcs_branch_name_valid(b));
    assert_int_equal(vcs_branch_name_for_goal(b, sizeof(b), "", "abcdef0123456789"), 0);
    assert_string_equal(b, "goald/goal-abcdef01");
    assert_int_equal(vcs_branch_name_for_goal(b, sizeof(b),
                                              "a very long title that goes on and on and on "
                                              "beyond forty characters",
                                              "11112222"),
                     0);
    assert_string_equal(b, "goald/a-very-long-title-that-goes-on-and-on-an-11112222");
    assert_true(vcs_branch_name_valid(b));
    assert_int_equal(vcs_branch_name_for_goal(b, sizeof(b), "x", "--"), ERR_INVALID);
    assert_int_equal(vcs_branch_name_for_goal(b, 8, "x", "11112222"), ERR_INVALID);
}

/* Names libgit2 takes as branch names (the quick reader that once
 * pre-checked them went with vcs/probe.c). */
static void test_branch_name_valid(void **state)
{
    static const char *const yes[] = {
        "main",   "feature/x", "v1.0-rc_2", "_a/b.c/d-e", "goald/fix-the-failing-test-0123abcd",
        "a.locks"};

    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        assert_true(vcs_branch_name_valid(yes[i]));
}

/* The guard before staging: a tracked file over the cap is refused even
 * when .gitignore names it (libgit2 stages tracked files whatever
 * .gitignore says). */
static void test_guard_tracked_ignored(void **state)
{
    struct fx f;
    char tree[VCS_OID_HEX];
    int saved = 0;

    (void)state;
    fx_setup(&f, "guard");
    setenv("GOALD_TOOLS_MAX_FILE_MB", "1", 1);
    assert_int_equal(config_load(NULL), 0);
    /* README is tracked: ignoring it does not spare it */
    assert_int_equal(
        sh("cd '%s' && echo README >> .gitignore && head -c 1100000 /dev/zero > README", f.wtp), 0);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), ERR_TOOBIG);
    assert_non_null(strstr(err_last(), "README is 1.0 MiB, over tools.max_file_mb (1 MiB)"));
    assert_int_equal(vcs_worktree_store_tree(tree, f.wt), ERR_TOOBIG);
    assert_int_equal(vcs_worktree_reset(&saved, f.wt, NULL), 0);
    assert_string_equal(cap("git -C '%s' status --porcelain", f.wtp), "");
    /* an untracked ignored file over the cap: fine */
    assert_int_equal(sh("cd '%s' && head -c 1100000 /dev/zero > keep.log", f.wtp), 0);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), 0);
    unsetenv("GOALD_TOOLS_MAX_FILE_MB");
    config_reset();
    vcs_worktree_free(f.wt);
}

/* A nested repository (`git init sub`, a vendored clone) is refused by
 * name, not left to libgit2's "invalid path 'sub/'" on every turn; an
 * ignored folder holding one is skipped. */
static void test_guard_nested_repository(void **state)
{
    struct fx f;
    char tree[VCS_OID_HEX];

    (void)state;
    fx_setup(&f, "nested");
    /* a nested repository: refused with a message naming it */
    assert_int_equal(sh("cd '%s' && git init -q sub && echo x > sub/f.txt", f.wtp), 0);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), ERR_POLICY);
    assert_non_null(strstr(err_last(), "sub/.git: a nested repository goald will not commit: "
                                       "remove it or add sub/ to .gitignore"));
    /* deeper, and as a gitlink file: the same */
    assert_int_equal(sh("cd '%s' && mv sub a && mkdir -p b/c && echo 'gitdir: /x' > b/c/.git && "
                        "echo sub/ >> .gitignore && echo a/ >> .gitignore",
                        f.wtp),
                     0);
    assert_int_equal(vcs_worktree_state_tree(tree, f.wt), ERR_POLICY);
    assert_non_null(strstr(err_last(), "b/c/.git: a nested repository"));
    /* ignored folders are skipped */
    assert_int_equal(sh("cd '%s' && echo b/ >> .gitignore", f.wtp), 0);
    if (vcs_worktree_state_tree(tree, f.wt) != 0)
        fail_msg("ignored nested repositories: %s", err_last());
    vcs_worktree_free(f.wt);
}

/* With tools.max_file_mb above the patch buffer's default 64 MiB, a
 * changed file between the two is saved with its data (not as "Binary
 * files differ" reported as saved and then deleted by the reset). */
static void test_reset_patch_holds_large_file(void **state)
{
    struct fx f;
    char patch[700];
    strbuf pf = STRBUF_INIT;
    int saved = 0;

    (void)state;
    fx_setup(&f, "resetbig");
    setenv("GOALD_TOOLS_MAX_FILE_MB", "80", 1);
    assert_int_equal(config_load(NULL), 0);
    /* 65 MiB that do not compress: the binary patch is ~82 MiB */
    assert_int_equal(sh("head -c 68157440 /dev/urandom > '%s/big.bin'", f.wtp), 0);
    testutil_tmp_path(patch, sizeof(patch), "resetbig/run-1.patch");
    strbuf_init(&pf, (size_t)1 << 28);
    if (vcs_worktree_reset(&saved, f.wt, patch) != 0)
        fail_msg("reset: %s", err_last());
    assert_int_equal(saved, 1);
    assert_int_equal(fs_read_file(&pf, patch, (size_t)1 << 28), 0);
    assert_non_null(strstr(strbuf_cstr(&pf), "GIT binary patch"));
    assert_null(strstr(strbuf_cstr(&pf), "Binary files"));
    strbuf_release(&pf);
    /* the patch brings the file back */
    assert_int_equal(
        sh("cd '%s' && git apply '%s' && test $(stat -c %%s big.bin) = 68157440", f.wtp, patch), 0);
    unsetenv("GOALD_TOOLS_MAX_FILE_MB");
    config_reset();
    vcs_worktree_free(f.wt);
}

/* Clone mode's primitives: which repos are shared, the clone's folder,
 * fetching the base and the goal's ref (absent at first), the goal branch
 * set anywhere, and a forced push of a commit to refs/goald/<id>. */
static void test_repo_is_url(void **state)
{
    char bare[600], plain[600];

    (void)state;
    assert_true(vcs_repo_is_url("https://example.com/acme/widgets.git"));
    assert_true(vcs_repo_is_url("ssh://git@example.com:2222/acme/widgets.git"));
    assert_true(vcs_repo_is_url("file:///srv/git/widgets.git"));
    assert_true(vcs_repo_is_url("git+ssh://example.com/w"));
    assert_true(vcs_repo_is_url("git@example.com:acme/widgets.git"));
    assert_false(vcs_repo_is_url("/srv/git/widgets.git"));
    assert_false(vcs_repo_is_url("widgets"));
    assert_false(vcs_repo_is_url("https://"));
    assert_false(vcs_repo_is_url("git@example.com:"));
    assert_false(vcs_repo_is_url("@example.com:w"));
    assert_false(vcs_repo_is_url("dir/git@host:path"));
    assert_false(vcs_repo_is_url("https://example.com/a b"));
    assert_false(vcs_repo_is_url("3ttp://example.com/w"));
    assert_false(vcs_repo_is_url(""));
    assert_false(vcs_repo_is_url("-oProxyCommand=x@host:path"));
    make_origin(plain, bare, sizeof(plain), "isurl/plain", "isurl/bare.git");
    assert_true(vcs_repo_is_shared(bare));
    assert_true(vcs_repo_is_shared("https://example.com/acme/widgets.git"));
    assert_false(vcs_repo_is_shared(plain));
    assert_false(vcs_repo_is_shared("/nonexistent/x"));
}

/* A fetch killed while it wrote a ref leaves the ref's lock file in the
 * node's clone (refs/heads/<base>.lock, <goal ref>.lock); git takes it for
 * a writer at work and refuses the ref for ever.  Only a fetch writes
 * those refs in the clone, under the clone's lock: the next fetch clears
 * them.  A link in a lock's place is refused, its target kept. */
static void test_clone_fetch_stale_locks(void **state)
{
    char src[600], bare[600], dir[600], clone[700], outside[600];
    const char *ref = "refs/goald/0123abcd";
    char gitdir[800];

    (void)state;
    make_origin(src, bare, sizeof(src), "fetchlock/src", "fetchlock/origin.git");
    testutil_tmp_path(dir, sizeof(dir), "fetchlock/node");
    testutil_tmp_path(outside, sizeof(outside), "fetchlock/outside");
    assert_int_equal(vcs_clone_path(clone, sizeof(clone), dir, bare), 0);
    if (vcs_clone_fetch(clone, bare, "main", ref) != 0)
        fail_msg("fetch: %s", err_last());
    snprintf(gitdir, sizeof(gitdir), "%s", cap("git -C '%s' rev-parse --absolute-git-dir", clone));
    /* the origin moves on, both refs; a killed fetch left both locks */
    assert_int_equal(sh("cd '%s' && echo n >> README && git commit -qam next && "
                        "git push -q '%s' main && git push -q '%s' main:%s",
                        src, bare, bare, ref),
                     0);
    assert_int_equal(sh("mkdir -p '%s/refs/goald' && : > '%s/refs/heads/main.lock' && "
                        ": > '%s/%s.lock'",
                        gitdir, gitdir, gitdir, ref),
                     0);
    if (vcs_clone_fetch(clone, bare, "main", ref) != 0)
        fail_msg("fetch over stale ref locks: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse main", clone),
                        cap("git -C '%s' rev-parse main", bare));
    assert_string_equal(cap("git -C '%s' rev-parse %s", clone, ref),
                        cap("git -C '%s' rev-parse main", bare));
    /* a link in the lock's place: refused, its target kept */
    assert_int_equal(sh("mkdir -p '%s' && echo keep > '%s/t' && ln -s '%s/t' '%s/refs/heads/main.lock'",
                        outside, outside, outside, gitdir),
                     0);
    assert_int_equal(vcs_clone_fetch(clone, bare, "main", ref), ERR_INVALID);
    assert_non_null(strstr(err_last(), "not a lock file goald can clear"));
    assert_string_equal(cap("cat '%s/t'", outside), "keep");
}

static void test_clone_fetch_push(void **state)
{
    char src[600], bare[600], dir[600], clone[700], wt[700], sha[VCS_OID_HEX], other[VCS_OID_HEX];
    const char *ref = "refs/goald/0123abcd";
    char hex[HASH_HEX_SIZE];
    vcs_worktree *w = NULL;

    (void)state;
    make_origin(src, bare, sizeof(src), "clone/src", "clone/origin.git");
    testutil_tmp_path(dir, sizeof(dir), "clone/node");
    /* the folder's name is a hash of the repo string, never its text */
    assert_int_equal(vcs_clone_path(clone, sizeof(clone), dir, bare), 0);
    hash_sha256_hex(hex, bare, strlen(bare));
    assert_true(strncmp(clone + strlen(dir), "/repos/", 7) == 0);
    assert_int_equal(strlen(clone + strlen(dir) + 7), 16);
    assert_true(strncmp(clone + strlen(dir) + 7, hex, 16) == 0);
    /* a half-made folder there is made again */
    assert_int_equal(sh("mkdir -p '%s/junk'", clone), 0);
    /* the goal's ref is absent at first: not an error */
    if (vcs_clone_fetch(clone, bare, "main", ref) != 0)
        fail_msg("fetch: %s", err_last());
    assert_string_equal(cap("git -C '%s' config remote.origin.url", clone), bare);
    assert_string_equal(cap("git -C '%s' rev-parse main", clone),
                        cap("git -C '%s' rev-parse main", bare));
    assert_int_not_equal(access(cap("echo '%s/junk'", clone), F_OK), 0);
    assert_int_equal(vcs_clone_fetch(clone, bare, "nope", ref), ERR_NOTFOUND);
    assert_true(strstr(err_last(), "nope") != NULL);
    /* the goal branch, then a commit on it pushed to the goal's ref */
    assert_int_equal(vcs_rev_commit(sha, clone, "refs/heads/main"), 0);
    assert_int_equal(vcs_branch_set(clone, BR, sha), 0);
    testutil_tmp_path(wt, sizeof(wt), "clone/wts/g-0123abcd");
    if (vcs_worktree_create(&w, clone, "main", BR, wt) != 0)
        fail_msg("worktree: %s", err_last());
    assert_int_equal(sh("cd '%s' && echo a >a.txt && git add a.txt && "
                        "git -c user.email=t@e -c user.name=t commit -q -m a",
                        wt),
                     0);
    assert_int_equal(vcs_worktree_head(sha, w), 0);
    if (vcs_push_commit(clone, "origin", sha, ref, 1) != 0)
        fail_msg("push: %s", err_last());
    assert_string_equal(cap("git -C '%s' rev-parse %s", bare, ref), sha);
    /* someone else's commit there: refused without force, replaced with */
    assert_int_equal(vcs_rev_commit(other, clone, "refs/heads/main"), 0);
    assert_int_equal(
        sh("cd '%s' && git -c user.email=t@e -c user.name=t commit -q --amend -m b", wt), 0);
    assert_int_equal(vcs_worktree_head(sha, w), 0);
    assert_int_not_equal(vcs_push_commit(clone, "origin", sha, ref, 0), 0);
    assert_true(strstr(err_last(), "push to origin") != NULL);
    assert_int_equal(vcs_push_commit(clone, "origin", sha, ref, 1), 0);
    assert_string_equal(cap("git -C '%s' rev-parse %s", bare, ref), sha);
    /* the branch moves anywhere, even under its worktree; an unknown commit
     * is refused */
    assert_int_equal(vcs_branch_set(clone, BR, other), 0);
    assert_string_equal(cap("git -C '%s' rev-parse " BR, clone), other);
    assert_int_equal(vcs_branch_set(clone, BR, "0123456789012345678901234567890123456789"),
                     ERR_NOTFOUND);
    assert_int_equal(
        vcs_push_commit(clone, "origin", "0123456789012345678901234567890123456789", ref, 1),
        ERR_NOTFOUND);
    assert_int_equal(vcs_push_commit(clone, "origin", sha, "goald/x", 1), ERR_INVALID);
    vcs_worktree_free(w);
}

/* The pipes between a process held by hold_here() and the test. */
static int held_up = -1, held_down = -1;

/* vcs_test_pause: at "remove.before_prune" (the worktree's folder deleted,
 * its registration not yet pruned) say so on held_up, then wait until
 * held_down says go on, or 2 s: the other process may be waiting for this
 * one's lock. */
static void hold_here(const char *point)
{
    struct pollfd p = {held_down, POLLIN, 0};
    char c = 'x';

    if (strcmp(point, "remove.before_prune") != 0)
        return;
    if (write(held_up, &c, 1) != 1)
        _exit(3);
    poll(&p, 1, 2000);
}

/* Worktree operations on one repository take turns across processes: a
 * process removing the worktree is held between deleting its folder and
 * pruning its registration, and another makes the worktree again
 * meanwhile (a node's next run on the goal).  With the lock the second
 * waits for the first, and the worktree it makes is whole; without, the
 * first's prune would drop the second's new registration (the folder
 * left behind, not a worktree of the repository any more). */
static void test_worktree_ops_take_turns(void **state)
{
    struct fx f;
    int up[2], down[2], status = 0, rc;
    char c;
    pid_t pid;

    (void)state;
    fx_setup(&f, "turns");
    vcs_worktree_free(f.wt);
    f.wt = NULL;
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        held_up = up[1];
        held_down = down[0];
        vcs_test_pause = hold_here;
        _exit(vcs_worktree_remove(f.repo, f.wtp) == 0 ? 0 : 1);
    }
    close(up[1]);
    close(down[0]);
    /* the remover is held with the folder gone */
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_not_equal(access(f.wtp, F_OK), 0);
    rc = vcs_worktree_create(&f.wt, f.repo, "main", BR, f.wtp);
    if (rc != 0)
        fail_msg("create beside a removal: %s", err_last());
    /* go on (with the lock, the remover went on long ago, and is gone:
     * the write may meet a closed pipe) */
    signal(SIGPIPE, SIG_IGN);
    if (write(down[1], "x", 1) != 1)
        assert_int_equal(errno, EPIPE);
    signal(SIGPIPE, SIG_DFL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(up[0]);
    close(down[1]);
    vcs_worktree_free(f.wt);
    f.wt = NULL;
    /* the worktree made second is whole: registered, opened through the
     * records, seen by git on its branch */
    if (vcs_worktree_open(&f.wt, f.repo, f.wtp) != 0)
        fail_msg("the worktree made beside a removal: %s", err_last());
    vcs_worktree_free(f.wt);
    assert_non_null(strstr(cap("git -C '%s' worktree list --porcelain", f.repo), f.wtp));
    assert_string_equal(cap("git -C '%s' rev-parse --abbrev-ref HEAD", f.wtp), BR);
}

/* vcs_worktree_prune removes the worktrees doomed() picks, the folder
 * with a planted link and a planted .git file in it (neither followed),
 * and a registration whose folder is already gone; the others stay. */
static int doom_g(const char *path, void *ctx)
{
    (void)ctx;
    return strstr(path, "/wts/g-") != NULL;
}

static void test_worktree_prune(void **state)
{
    struct fx f;
    vcs_worktree *w = NULL;
    char keep[700], gone[700], outside[700], decoy[700];
    int removed = -1;

    (void)state;
    fx_setup(&f, "prune");
    vcs_worktree_free(f.wt);
    testutil_tmp_path(keep, sizeof(keep), "prune/wts/keep");
    testutil_tmp_path(gone, sizeof(gone), "prune/wts/g-gone");
    testutil_tmp_path(outside, sizeof(outside), "prune/outside");
    testutil_tmp_path(decoy, sizeof(decoy), "prune/decoy");
    assert_int_equal(vcs_worktree_create(&w, f.repo, "main", "goald/keep", keep), 0);
    vcs_worktree_free(w);
    assert_int_equal(vcs_worktree_create(&w, f.repo, "main", "goald/gone", gone), 0);
    vcs_worktree_free(w);
    assert_int_equal(sh("rm -rf '%s'", gone), 0);
    /* what a model could leave: a link out, a .git naming another repository */
    assert_int_equal(make_repo(decoy), 0);
    assert_int_equal(sh("mkdir -p '%s' && echo k >'%s/k.txt' && ln -s '%s' '%s/out'", outside,
                        outside, outside, f.wtp),
                     0);
    assert_int_equal(sh("rm '%s/.git' && echo 'gitdir: %s/.git' >'%s/.git'", f.wtp, decoy, f.wtp),
                     0);
    if (vcs_worktree_prune(f.repo, doom_g, NULL, &removed) != 0)
        fail_msg("prune: %s", err_last());
    assert_int_equal(removed, 2);
    assert_int_not_equal(access(f.wtp, F_OK), 0);
    assert_string_equal(cap("cat '%s/k.txt'", outside), "k");
    assert_string_equal(cap("git -C '%s' rev-parse --is-inside-work-tree", decoy), "true");
    assert_int_equal(access(keep, F_OK), 0);
    assert_null(strstr(cap("git -C '%s' worktree list --porcelain", f.repo), "/wts/g-"));
    assert_non_null(strstr(cap("git -C '%s' worktree list --porcelain", f.repo), keep));
    assert_string_equal(cap("git -C '%s' worktree list --porcelain | grep -c prunable", f.repo),
                        "0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worktree_create),
        cmocka_unit_test(test_worktree_stale_branch_lock),
        cmocka_unit_test(test_worktree_reuse_clears_commit_locks),
        cmocka_unit_test(test_worktree_half_registered),
        cmocka_unit_test(test_worktree_half_made_item),
        cmocka_unit_test(test_records_and_snapshots),
        cmocka_unit_test(test_guard_tracked_ignored),
        cmocka_unit_test(test_guard_nested_repository),
        cmocka_unit_test(test_commit_exact_changes),
        cmocka_unit_test(test_commit_author_from_config),
        cmocka_unit_test(test_reset_saves_patch),
        cmocka_unit_test(test_reset_patch_holds_large_file),
        cmocka_unit_test(test_push_bare_remote),
        cmocka_unit_test(test_worktree_remove_keeps_branch),
        cmocka_unit_test(test_branch_name_for_goal),
        cmocka_unit_test(test_branch_name_valid),
        cmocka_unit_test(test_repo_is_url),
        cmocka_unit_test(test_clone_fetch_push),
        cmocka_unit_test(test_clone_fetch_stale_locks),
        cmocka_unit_test(test_worktree_ops_take_turns),
        cmocka_unit_test(test_worktree_prune),
        cmocka_unit_test(test_reset_long_branch_not_cut),
        cmocka_unit_test(test_catch_up_journal_dropped),
    };
    char home[600];

    testutil_setup("vcs");
    /* keep the user's git configuration out of both git and libgit2 */
    testutil_tmp_path(home, sizeof(home), "home");
    fs_mkdir_p(home, 0700);
    setenv("HOME", home, 1);
    setenv("XDG_CONFIG_HOME", home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    unsetenv("GOALD_VCS_AUTHOR_NAME");
    unsetenv("GOALD_VCS_AUTHOR_EMAIL");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
