/*
 * run.h - the runs table: one attempt of a stage on a goal or item.
 *
 * Strings returned through char ** out-parameters are malloc'd: the
 * caller free()s them.
 */
#ifndef GOALD_STORE_RUN_H
#define GOALD_STORE_RUN_H

#include "store/store.h"

/* The latest finished, unsuccessful run of item_id other than
 * except_run_id that recorded a failure reason: *error_class and *reason
 * malloc'd (*error_class may be NULL), or both NULL when there is none. */
int store_run_last_failure(store *st, const char *item_id, const char *except_run_id,
                           char **error_class, char **reason);

#endif
