/* goald cron next EXPR [--from TIME] [--count N] [--tz ZONE] : next fire
 * times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/config.h"
#include "util/cron.h"
#include "util/timeutil.h"

static int run(struct cli_ctx *c)
{
    const char *from = cli_opt(c, "from");
    const char *count = cli_opt(c, "count");
    const char *tz = cli_opt(c, "tz") ? cli_opt(c, "tz") : config_str(CFG_CRON_TIMEZONE);
    int utc = !tz || !*tz || !strcmp(tz, "UTC");
    struct cron_expr ce;
    int64_t t = time_now_ms();
    long n = 5;
    char *end;
    char buf[TIME_RFC3339_MAX];

    if (cron_parse(&ce, c->pos[0]) != 0)
        return cli_fail(EXIT_USAGE, "cron: \"%s\": %s", c->pos[0], err_last());
    if (from && time_parse_rfc3339(&t, from) != 0)
        return cli_fail(EXIT_USAGE, "cron: --from: expected an RFC 3339 date-time, got \"%s\"",
                        from);
    if (!utc && cron_zone_use(tz) != 0)
        return cli_fail(EXIT_USAGE, "cron: --tz: %s", err_last());
    if (count) {
        n = strtol(count, &end, 10);
        if (*end || n < 1 || n > 10000)
            return cli_fail(EXIT_USAGE, "cron: --count: expected an integer from 1 to 10000, "
                                        "got \"%s\"",
                            count);
    }
    for (long i = 0; i < n; i++) {
        if (cron_next_tz(&ce, t, tz, &t) != 0)
            return cli_fail(EXIT_FAIL, "cron: \"%s\": %s", c->pos[0], err_last());
        /* in a zone, the wall-clock time with its offset at that instant */
        printf("%s\n", time_format_rfc3339_offset(buf, sizeof(buf), t,
                                                  utc ? 0 : cron_zone_offset(t)));
    }
    return EXIT_OK;
}

const struct cli_command cmd_cron_next = {
    .name = "cron next",
    .args = "EXPR",
    .summary = "the next fire times of a cron schedule, RFC 3339, one a line",
    .details = "Times are in UTC (\"Z\") unless a zone is given by --tz or cron.timezone;\n"
               "then each is the zone's wall-clock time with its offset, e.g.\n"
               "2026-03-29T09:00:00+02:00, as the daemon's cron lane fires it.",
    .opts = (const struct cli_opt[]){{"from", "TIME", "start after TIME (RFC 3339; default now)"},
                                     {"count", "N", "how many (default 5)"},
                                     {"tz", "ZONE",
                                      "time zone of the schedule: UTC or an IANA name "
                                      "(default: cron.timezone)"},
                                     {NULL, NULL, NULL}},
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
