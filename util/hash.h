/*
 * hash.h - SHA-256 (through OpenSSL's libcrypto) as lowercase hex.
 */
#ifndef GOALD_UTIL_HASH_H
#define GOALD_UTIL_HASH_H

#include <stddef.h>

#define HASH_HEX_SIZE 65

/* out receives 64 hex characters and a NUL. */
void hash_sha256_hex(char out[HASH_HEX_SIZE], const void *data, size_t len);

/* SHA-256 of a file's contents.  0, ERR_NOTFOUND or ERR_IO. */
int hash_sha256_file(char out[HASH_HEX_SIZE], const char *path);

#endif
