/*
 * timeutil.h - wall and monotonic clocks, RFC 3339.
 *
 * Times are integer milliseconds since the epoch, UTC, everywhere they are
 * stored; RFC 3339 is for people.
 */
#ifndef GOALD_UTIL_TIMEUTIL_H
#define GOALD_UTIL_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define TIME_RFC3339_MAX 40

int64_t time_now_ms(void);  /* wall clock, ms since the epoch */
int64_t time_mono_ms(void); /* monotonic clock, ms */
int64_t time_mono_us(void); /* monotonic clock, µs */

/* Format ms as "2026-11-22T04:06:58.123Z" (milliseconds only when non-zero)
 * into out (at least TIME_RFC3339_MAX bytes).  Returns out. */
char *time_format_rfc3339(char *out, size_t n, int64_t ms);

/* The same with milliseconds always ("2026-11-22T04:06:58.000Z"): the
 * form of every time in goald's --json output (docs/cli.md). */
char *time_format_rfc3339_ms(char *out, size_t n, int64_t ms);

/* The same instant as wall-clock time at offset_min minutes from UTC:
 * "2026-03-29T03:30:00+02:00" ("Z" when offset_min is 0). */
char *time_format_rfc3339_offset(char *out, size_t n, int64_t ms, int offset_min);

/* Parse a full RFC 3339 date-time ("2026-12-01T18:00:00Z",
 * "2026-12-01T18:00:00.5+02:00", 't' and ' ' separators accepted).
 * 0 on success with *out set; ERR_INVALID otherwise (no message set). */
int time_parse_rfc3339(int64_t *out, const char *s);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t time_days_from_civil(int64_t y, unsigned m, unsigned d);
void time_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

void time_sleep_ms(int64_t ms);

#endif
