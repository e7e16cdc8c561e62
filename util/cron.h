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
 * or "UTC" for UTC.  A fire time is a wall-clock time in that zone, with
 * Vixie cron's rules across daylight-saving changes: a time skipped by a
 * spring-forward change fires at the change; in an hour that repeats, a
 * schedule with a fixed hour fires once (the first pass) and one with
 * "*" as its hour fires in both.  Sets TZ for the process (the daemon uses
 * one zone).  ERR_INVALID for an unknown zone. */
int cron_next_tz(const struct cron_expr *c, int64_t after, const char *tz, int64_t *out);

/* 0 when tz is "UTC" or names a tzdata zone file ($TZDIR or
 * /usr/share/zoneinfo); ERR_INVALID with a message naming it otherwise. */
int cron_zone_check(const char *tz);

/* Make tz (NULL: UTC) the process's zone (TZ, tzset) after checking it. */
int cron_zone_use(const char *tz);

/* The UTC offset in minutes at t (ms) in the zone cron_zone_use() set. */
int cron_zone_offset(int64_t t);

#endif
