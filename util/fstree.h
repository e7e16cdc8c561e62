/*
 * fstree.h - whole folders copied and measured without following a link:
 * every folder is opened relative to its parent with O_NOFOLLOW, a
 * symbolic link is copied as a link (its target text, never what it
 * names), and what is neither a regular file, a folder nor a link (a
 * FIFO, a socket, a device) is left out.  Modification times are kept.
 * The caller owns the fds it passes; nothing here keeps one.
 */
#ifndef GOALD_UTIL_FSTREE_H
#define GOALD_UTIL_FSTREE_H

#include <stdint.h>

#define FS_TREE_DEPTH 64 /* folders deeper than this: ERR_TOOBIG */

/* Copy the folder src_name in the open folder src_dir into the folder
 * dst_name in dst_dir, made when missing (an existing one is merged into: what is
 * already there is kept, a folder there is entered, nothing is
 * replaced).  A dst_name that is not a folder (a link, a file):
 * ERR_POLICY, nothing copied.  *bytes (may be NULL) receives the bytes of
 * the files copied; more than cap bytes: ERR_TOOBIG with the copy left
 * partial (the caller removes it).  Files keep their permission bits
 * (0777 of them) and their access and modification times; folders their
 * modification times.  0, ERR_POLICY, ERR_TOOBIG or ERR_IO. */
int fs_tree_copy_at(int src_dir, const char *src_name, int dst_dir, const char *dst_name,
                    uint64_t cap, uint64_t *bytes);

/* The bytes of the regular files beneath the folder name in the open
 * folder dir into *bytes (links not followed, not counted); more than
 * cap: ERR_TOOBIG.  A name that is not a folder: ERR_POLICY. */
int fs_tree_size_at(int dir, const char *name, uint64_t cap, uint64_t *bytes);

#endif
