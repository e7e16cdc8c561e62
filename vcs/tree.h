/*
 * tree.h - commits and trees by id, for verification: the item's baseline
 * commit, what an item changed against it, and a tree with some of those
 * changes undone (the "tests weakened" check).  Nothing here touches a
 * work folder: trees are read and written in the object database only.
 */
#ifndef GOALD_VCS_TREE_H
#define GOALD_VCS_TREE_H

#include <stddef.h>

#include "vcs/worktree.h"

/* The commit rev names (a branch, a sha, "sha^"), as hex.  ERR_NOTFOUND
 * when there is no such commit. */
int vcs_rev_commit(char out[VCS_OID_HEX], const char *repo_path, const char *rev);
/* The tree rev names (a commit's tree, or a tree), as hex.  ERR_NOTFOUND
 * when there is none. */
int vcs_rev_tree(char out[VCS_OID_HEX], const char *repo_path, const char *rev);

struct vcs_tree_change {
    char *path;  /* '/' separated, relative to the root */
    char status; /* 'A' added, 'M' modified (or type change), 'D' deleted */
};

/* The files that differ between the tree of commit base_rev and tree
 * tree_sha (blobs and links; folders are walked).  Free with
 * vcs_tree_changes_free(). */
int vcs_tree_changes(struct vcs_tree_change **out, size_t *n, const char *repo_path,
                     const char *base_rev, const char *tree_sha);
void vcs_tree_changes_free(struct vcs_tree_change *v, size_t n);

/* Write a tree that is tree_sha with each of paths[0..n) as it is in the
 * tree of commit base_rev: modified and deleted files come back, a path
 * absent at base_rev is dropped (the caller names only the additions it
 * wants gone).  Its id into out. */
int vcs_tree_restore(char out[VCS_OID_HEX], const char *repo_path, const char *tree_sha,
                     const char *base_rev, const char *const *paths, size_t n);

#endif
