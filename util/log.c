#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum log_level cur_level = LOG_WARN;
static const char *names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return ERR_INVALID;
}

const char *log_level_name(enum log_level lvl)
{
    return (unsigned)lvl < 4 ? names[lvl] : "?";
}

void log_init(enum log_level dflt)
{
    const char *e = getenv("GOALD_LOG_LEVEL");
    enum log_level l;

    cur_level = dflt;
    if (e && *e && log_level_parse(e, &l) == 0)
        cur_level = l;
}

void log_set_level(enum log_level lvl)
{
    cur_level = lvl;
}

enum log_level log_get_level(void)
{
    return cur_level;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    char line[2048];
    int n;
    va_list ap;

    if (lvl > cur_level)
        return;
    n = snprintf(line, sizeof(line), "goald[%ld]: %s: ", (long)getpid(), names[lvl]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(line);
    line[n++] = '\n';
    /* one write so that lines of concurrent processes do not interleave */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}
