#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char err_msg[ERR_MSG_MAX];
static _Thread_local int err_code;

int err_set(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    err_code = code;
    return code;
}

int err_wrap(int code, const char *fmt, ...)
{
    char prefix[ERR_MSG_MAX];
    char old[ERR_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err_msg, sizeof(old));
    {
        /* "PREFIX: OLD", cut at the slot's size */
        size_t n = strlen(prefix), o = strlen(old);
        size_t room = sizeof(err_msg) - 1;

        if (n > room)
            n = room;
        memcpy(err_msg, prefix, n);
        if (o && n + 2 <= room) {
            memcpy(err_msg + n, ": ", 2);
            n += 2;
            if (o > room - n)
                o = room - n;
            memcpy(err_msg + n, old, o);
            n += o;
        }
        err_msg[n] = '\0';
    }
    err_code = code;
    return code;
}

const char *err_last(void)
{
    return err_msg;
}

int err_last_code(void)
{
    return err_code;
}

void err_clear(void)
{
    err_msg[0] = '\0';
    err_code = 0;
}

const char *err_name(int code)
{
    switch (code) {
    case ERR_OK: return "ok";
    case ERR_FAIL: return "failure";
    case ERR_NOTFOUND: return "notfound";
    case ERR_INVALID: return "invalid";
    case ERR_AMBIGUOUS: return "ambiguous";
    case ERR_TRANSITION: return "state";
    case ERR_NOMEM: return "nomem";
    case ERR_IO: return "io";
    case ERR_DB: return "db";
    case ERR_POLICY: return "policy";
    case ERR_TIMEOUT: return "timeout";
    case ERR_TOOBIG: return "toobig";
    case ERR_BUSY: return "busy";
    case ERR_VERSION: return "version";
    default: return "unknown";
    }
}
