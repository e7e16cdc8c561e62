#include "util/id.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "util/err.h"

int id_random(void *buf, size_t n)
{
    unsigned char *p = buf;

    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0)
            return err_set(ERR_IO, "getrandom failed");
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

int id_new(char out[ID_SIZE])
{
    unsigned char b[16];
    static const char hex[] = "0123456789abcdef";
    int rc = id_random(b, sizeof(b));
    char *o = out;

    if (rc)
        return rc;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o = '\0';
    return 0;
}

int id_prefix_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > ID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef-", s[i]))
            return 0;
    return 1;
}

void id_host(char *out, size_t n)
{
    if (n == 0)
        return;
    out[n - 1] = '\0';
    if (gethostname(out, n - 1) != 0 || !out[0])
        snprintf(out, n, "localhost"); /* truncation: ok, a fallback name, shown */
}
