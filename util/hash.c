#include "util/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"
#include "util/xalloc.h"

static void to_hex(char out[HASH_HEX_SIZE], const unsigned char *md, unsigned n)
{
    static const char hex[] = "0123456789abcdef";

    for (unsigned i = 0; i < n && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

void hash_sha256_hex(char out[HASH_HEX_SIZE], const void *data, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;

    if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL))
        abort(); /* SHA-256 of memory fails only when libcrypto is broken */
    to_hex(out, md, n);
}

int hash_sha256_file(char out[HASH_HEX_SIZE], const char *path)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned char buf[65536];
    unsigned n = 0;
    int rc = 0;
    EVP_MD_CTX *ctx = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return err_set(errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s", path,
                       strerror(errno));
    ctx = EVP_MD_CTX_new();
    xcheck(ctx); /* a variable: xcheck evaluates its argument twice */
    if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
        abort(); /* SHA-256 is always there: libcrypto is broken */
    for (;;) {
        ssize_t got = read(fd, buf, sizeof(buf));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(ERR_IO, "%s: read failed: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)got);
    }
    EVP_DigestFinal_ex(ctx, md, &n);
    to_hex(out, md, n);
out:
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}
