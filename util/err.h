/*
 * err.h - error codes and the per-thread error slot.
 *
 * Functions that can fail return 0 or one of the negative codes below and
 * leave a message in the slot with err_set().  The message is owned by the
 * slot: err_last() returns a pointer valid until the next err_set() or
 * err_clear() on the same thread; callers copy it if they keep it.
 */
#ifndef GOALD_UTIL_ERR_H
#define GOALD_UTIL_ERR_H

enum {
    ERR_OK = 0,
    ERR_FAIL = -1,      /* generic failure */
    ERR_NOTFOUND = -2,  /* the named thing does not exist */
    ERR_INVALID = -3,   /* bad input from a user or a model */
    ERR_AMBIGUOUS = -4, /* an id prefix matches more than one row */
    ERR_TRANSITION = -5,     /* a forbidden state transition */
    ERR_NOMEM = -6,
    ERR_IO = -7,
    ERR_DB = -8,
    ERR_POLICY = -9,    /* refused by a policy (paths, allowed actions) */
    ERR_TIMEOUT = -10,
    ERR_TOOBIG = -11,   /* a capped buffer would grow past its cap */
    ERR_BUSY = -12,     /* locked by someone else */
    ERR_VERSION = -13,  /* database newer than this binary */
};

#define ERR_MSG_MAX 1024

#if defined(__GNUC__)
#define GOALD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GOALD_PRINTF(a, b)
#endif

/* Functions whose result must be checked: with -Werror an
 * unchecked call does not build.  GCC warns even for a (void) cast, so a
 * result is checked by using it; text that may honestly be cut at its cap
 * goes through the strbuf_*_cut family, which says so. */
#ifndef GOALD_MUST_CHECK
#if defined(__GNUC__)
#define GOALD_MUST_CHECK __attribute__((warn_unused_result))
#else
#define GOALD_MUST_CHECK
#endif
#endif

/* Set the slot to a formatted message; returns code so that callers can
 * write `return err_set(ERR_INVALID, "...")`. */
int err_set(int code, const char *fmt, ...) GOALD_PRINTF(2, 3);

/* Prefix the current message with "PREFIX: " (adding context on the way up
 * without losing the lower message).  Returns code. */
int err_wrap(int code, const char *fmt, ...) GOALD_PRINTF(2, 3);

/* The last message on this thread, "" if none.  Never NULL. */
const char *err_last(void);

/* The code given to the last err_set()/err_wrap(), 0 if none. */
int err_last_code(void);

void err_clear(void);

/* A short name for a code ("invalid", "notfound", ...). */
const char *err_name(int code);

#endif
