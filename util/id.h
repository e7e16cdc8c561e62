/*
 * id.h - identifiers.
 *
 * Ids are random UUID version 4 strings in lowercase canonical form
 * ("3f2c9a1e-...": 36 characters).  Random rather than time-ordered so that
 * the first 8 characters, used as a short id and in branch names, differ
 * between goals submitted in the same second.
 */
#ifndef GOALD_UTIL_ID_H
#define GOALD_UTIL_ID_H

#include <stddef.h>

#define ID_LEN 36
#define ID_SIZE (ID_LEN + 1)
#define ID_SHORT 8

/* Write a new id into out (ID_SIZE bytes).  Returns 0 or ERR_IO. */
int id_new(char out[ID_SIZE]);

/* Random bytes from the kernel.  0 or ERR_IO. */
int id_random(void *buf, size_t n);

/* This machine's name (gethostname; "localhost" when it has none), cut
 * to n - 1 bytes: a node's host in its heartbeat and default id. */
void id_host(char *out, size_t n);

/* 1 when s looks like a usable id prefix: 1..36 chars of [0-9a-f-]. */
int id_prefix_valid(const char *s);

#endif
