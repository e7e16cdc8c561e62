/*
 * cron.h - 5-field cron expressions (minute hour day-of-month month
 * day-of-week) with ranges, steps, lists, names (JAN, MON) and the
 * @hourly/@daily/@midnight/@weekly/@monthly/@yearly/@annually aliases.
 * Day-of-month and day-of-week follow Vixie cron: when both are
 * restricted, a day matches if either matches.
 */
#ifndef GOALD_UTIL_CRON_H
#define GOALD_UTIL_CRON_H

#include <stdint.h>

struct cron_expr {
    uint64_t minute; /* bit n: minute n (0-59) */
    uint32_t hour;   /* 0-23 */
    uint32_t dom;    /* 1-31 */
    uint16_t month;  /* 1-12 */
    uint8_t dow;     /* 0-6, Sunday = 0 (7 is folded into 0) */
    int dom_star;    /* the field was "*" (or "*\/n" starting at *) */
    int dow_star;
};

/* Parse expr.  0, or ERR_INVALID with a message naming the field, e.g.
 * "hour: 24 is out of range 0-23". */
int cron_parse(struct cron_expr *out, const char *expr);

/* The first fire time strictly after `after` (ms since the epoch, UTC),
 * evaluated in UTC shifted by utc_offset_min minutes.  0 and *out set, or
 * ERR_NOTFOUND when the expression never fires (e.g. "0 0 30 2 *"). */
int cron_next(const struct cron_expr *c, int64_t after, int utc_offset_min, int64_t *out);

/* cron_next() in a time zone: tz is an IANA name ("Europe/Paris"), NULL
 * or "UTC" for UTC.  Daylight-saving changes are followed: a fire time is
 * the wall-clock time in that zone.  Sets TZ for the process (the daemon
 * uses one zone). */
int cron_next_tz(const struct cron_expr *c, int64_t after, const char *tz, int64_t *out);

#endif
