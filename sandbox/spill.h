/*
 * spill.h - the spill folder shared by the bash tool and the gates.
 */
#ifndef GOALD_SANDBOX_SPILL_H
#define GOALD_SANDBOX_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The folder for spill files (bash's full output, a gate's output while
 * it runs), into out: dir_override, else tools.spill_dir, else spill/
 * beside the database of st (of the default database when st is NULL) --
 * goald's state folder, never the host's TMPDIR.  Created mode 0700 and
 * checked to be ours.  Spills (files bash-*, gate-*) older than
 * tools.spill_keep_h are removed, and then, when want > 0, the oldest until
 * the folder plus want bytes fits tools.spill_total_mb.  0, ERR_INVALID or
 * ERR_IO. */
int sandbox_spill_prepare(store *st, const char *dir_override, uint64_t want, char *out,
                          size_t n);

#endif
