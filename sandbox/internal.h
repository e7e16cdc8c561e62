/*
 * internal.h - what the files of sandbox/ share (not for other folders):
 * bwrap.c builds bubblewrap's argument vector and the command's
 * environment, sandbox.c runs it (the child, the output, the deadlines).
 */
#ifndef GOALD_SANDBOX_INTERNAL_H
#define GOALD_SANDBOX_INTERNAL_H

#include <stddef.h>

#include "sandbox/drop.h"

struct sandbox_spec; /* sandbox.h */

#define SANDBOX_HOME "/tmp/home"

/* A growable NULL-terminated vector of malloc'd strings. */
struct strv {
    char **v;
    size_t n, alloc;
};

/* Free every string of sv and its vector (sv reusable, empty). */
void sandbox_strv_free(struct strv *sv);

/* name found in path_list (':'-separated; a name with '/' as it is) into
 * out (n bytes): an executable regular file.  0, or ERR_NOTFOUND. */
int sandbox_find_exe(char *out, size_t n, const char *name, const char *path_list);

/* spec checked: an absolute root that is a folder, something to run, a
 * known sandbox.mode.  0, or ERR_INVALID naming what is wrong. */
int sandbox_check_spec(const struct sandbox_spec *spec);

/* The command's environment into env: the safe variables, sandbox.env's,
 * spec's own, HOME.  0, or ERR_INVALID (an entry without '='). */
int sandbox_build_env(struct strv *env, const struct sandbox_spec *spec, const char *home);

/* bubblewrap's argument vector (bwrap: its path) without the command into
 * a; drop says which sources are staged (drop.h).  0, or an error. */
int sandbox_build_bwrap(struct strv *a, const struct sandbox_spec *spec, const char *bwrap,
                        const struct strv *env, struct sandbox_drop *drop);

/* The command of spec appended to a (bash -c COMMAND, or its argv). */
void sandbox_add_command(struct strv *a, const struct sandbox_spec *spec);

#endif
