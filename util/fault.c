#include "util/fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

void fault_point(const char *name)
{
    static int hits[64];
    static const char *names[64];
    const char *spec = getenv("GOALD_FAULT");
    size_t n = strlen(name);
    int slot = -1, count;

    if (!spec || !*spec)
        return;
    for (int i = 0; i < 64; i++) {
        if (names[i] == name || (names[i] && !strcmp(names[i], name))) {
            slot = i;
            break;
        }
        if (!names[i]) {
            names[i] = name;
            slot = i;
            break;
        }
    }
    count = slot >= 0 ? ++hits[slot] : 1;
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        if (len >= n && !strncmp(p, name, n) && (len == n || p[n] == '@')) {
            int want = len > n ? atoi(p + n + 1) : 1;
            if (want <= 0 || want == count) {
                log_warn("fault injected at %s", name);
                kill(getpid(), SIGKILL);
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
}
