#!/usr/bin/env bash
# `goald cron next EXPR [--from TIME] [--count N] [--tz ZONE]`
# prints the next fire times, one RFC 3339 line each: UTC by default, the
# zone's wall-clock time with its offset under --tz or cron.timezone; bad
# input exits 2 with a message naming what is wrong.
. "$(dirname "$0")/lib.sh"

run "$G" cron next "0 12 29 2 *" --from 2026-01-01T00:00:00Z --count 3
expect_rc 0 "cron next"
expect_eq "$OUT" "2028-02-29T12:00:00Z
2032-02-29T12:00:00Z
2036-02-29T12:00:00Z" "Feb 29 in UTC"
run "$G" cron next "0 0 1 * MON" --from 2026-11-23T00:00:00Z --count 4
expect_eq "$OUT" "2026-11-30T00:00:00Z
2026-12-01T00:00:00Z
2026-12-07T00:00:00Z
2026-12-14T00:00:00Z" "day-of-month OR day-of-week"
run "$G" cron next "*/5 * * * *" --from 2026-11-23T10:00:00Z
expect_eq "$(printf '%s\n' "$OUT" | wc -l)" 5 "five lines by default"

# a zone: the spring-forward day in Paris, and the fall-back day (once)
run "$G" cron next "30 2 * * *" --tz Europe/Paris --from 2026-03-28T00:00:00Z --count 3
expect_rc 0 "cron next --tz"
expect_eq "$OUT" "2026-03-28T02:30:00+01:00
2026-03-29T03:00:00+02:00
2026-03-30T02:30:00+02:00" "Europe/Paris across the spring change"
run "$G" cron next "30 2 * * *" --tz Europe/Paris --from 2026-10-24T12:00:00Z --count 2
expect_eq "$OUT" "2026-10-25T02:30:00+02:00
2026-10-26T02:30:00+01:00" "Europe/Paris across the autumn change"
# the configured zone is the default; --tz UTC overrides it
echo '{"cron": {"timezone": "America/New_York"}}' >"$T/c.json"
run "$G" --config "$T/c.json" cron next "0 9 * * *" --from 2026-11-23T00:00:00Z --count 1
expect_eq "$OUT" "2026-11-23T09:00:00-05:00" "cron.timezone"
run "$G" --config "$T/c.json" cron next "0 9 * * *" --from 2026-11-23T00:00:00Z --count 1 --tz UTC
expect_eq "$OUT" "2026-11-23T09:00:00Z" "--tz UTC"

# bad input: exit 2, the field named, nothing printed
check_bad() {
    local want=$1
    shift
    run "$@"
    expect_rc 2 "$*"
    expect_err "$want"
    expect_eq "$OUT" "" "stdout of $*"
}
check_bad 'cron: "0 24 * * *": hour: 24 is out of range 0-23' "$G" cron next "0 24 * * *"
check_bad 'cron: --tz: unknown time zone "Mars/Olympus"' "$G" cron next "0 9 * * *" --tz Mars/Olympus
check_bad 'cron: --from: expected an RFC 3339 date-time, got "tomorrow"' "$G" cron next "0 9 * * *" --from tomorrow
check_bad 'cron: --count: expected an integer from 1 to 10000, got "0"' "$G" cron next "0 9 * * *" --count 0
echo '{"cron": {"timezone": "Europe/Pariss"}}' >"$T/bad.json"
check_bad 'bad.json: cron.timezone: unknown time zone "Europe/Pariss"' "$G" --config "$T/bad.json" cron next "0 9 * * *"
GOALD_CRON_TIMEZONE="../../etc/passwd" run "$G" cron next "0 9 * * *"
expect_rc 2 "GOALD_CRON_TIMEZONE outside tzdata"
expect_err 'GOALD_CRON_TIMEZONE: unknown time zone'
# a schedule that never fires says so
run "$G" cron next "0 0 30 2 *"
expect_rc 1 "a schedule that never fires"
expect_err "the schedule never fires"
done_tests
