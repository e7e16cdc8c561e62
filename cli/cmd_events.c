/* goald events [--goal ID] [--since TIME] [--tail N] [--type T] [--follow]
 * [--json] : the event log. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lifecycle/views.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/run.h"
#include "util/termesc.h"
#include "util/timeutil.h"

#define MAX_TYPES 16
#define EVENT_PAGE 1000 /* events read per query */

struct ev_ctx {
    int json;
    int follow;
    int first;
    int width;    /* of a human line */
    int64_t last; /* the newest event seen */
    const char *types[MAX_TYPES];
    size_t ntypes;
    char typebuf[512];
    long long skip;    /* --tail: matching events still to pass over */
    long long matched; /* counting pass of --tail */
    int counting;
    int page_rows;     /* events of the current page */
    int64_t page_last; /* ... and the last one's id */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* --type: each pattern is a type ("run.failed") or a prefix ending in "*"
 * ("tool_call.*", "run*"). */
static int type_matches(const struct ev_ctx *ec, const char *type)
{
    if (ec->ntypes == 0)
        return 1;
    for (size_t i = 0; i < ec->ntypes; i++) {
        const char *p = ec->types[i];
        size_t n = strlen(p);
        if (n && p[n - 1] == '*' ? !strncmp(type, p, n - 1) : !strcmp(type, p))
            return 1;
    }
    return 0;
}

static int each(const struct store_event *ev, void *vctx)
{
    struct ev_ctx *ec = vctx;
    char t[TIME_RFC3339_MAX];
    char head[96];
    int left;

    ec->last = ev->id;
    ec->page_last = ev->id;
    ec->page_rows++;
    if (!type_matches(ec, ev->type))
        return 0;
    if (ec->counting) {
        ec->matched++;
        return 0;
    }
    if (ec->skip > 0) {
        ec->skip--;
        return 0;
    }
    if (ec->json) {
        cJSON *o = view_event(ev);
        char *s = cJSON_PrintUnformatted(o);
        /* --json: an array; with --follow, one object per line */
        if (!ec->follow)
            fputs(ec->first ? "[\n  " : ",\n  ", stdout);
        fputs(s, stdout);
        if (ec->follow)
            fputc('\n', stdout);
        ec->first = 0;
        cJSON_free(s);
        cJSON_Delete(o);
        return 0;
    }
    /* one line of at most the terminal's width (80 when not a terminal):
     * the payload gets what is left and ends in an ellipsis when cut */
    /* truncation: ok, a line shown */
    snprintf(head, sizeof(head), "%6lld %s %-22s %.8s ", (long long)ev->id,
             time_format_rfc3339_ms(t, sizeof(t), ev->ts), term_fit(ev->type, 22),
             ev->goal_id ? ev->goal_id : "-");
    left = ec->width - term_columns(head);
    printf("%s%s\n", head, term_fit(ev->payload, left > 1 ? left : 1)); /* model text */
    return 0;
}

/* 1 when the goal has ended (completed or cancelled) and none of its runs
 * is still running: the run that ended the goal writes its own end
 * (run.success) in a later transaction, which a follower must not miss.
 * A run left running (its daemon gone) is waited for 10 s at most after
 * the goal ended (*ended_at, 0 until then). */
static int goal_ended(store *st, const char *goal_id, int64_t *ended_at)
{
    struct store_run_live *runs = NULL;
    size_t n = 0;
    int ended = 0;

    if (store_goal_ended(st, goal_id, &ended) != 0)
        err_clear(); /* not known to have ended: keep following */
    if (!ended)
        return 0;
    if (!*ended_at)
        *ended_at = time_mono_ms();
    if (store_run_running_of_goal(st, goal_id, &runs, &n) != 0)
        err_clear();
    free(runs);
    return n == 0 || time_mono_ms() - *ended_at > 10000;
}

/* Every event after after (of goal, when not NULL) through each(), in
 * pages of EVENT_PAGE: no query reads the whole log at once. */
static int scan(store *st, const char *goal, int64_t after, struct ev_ctx *ec)
{
    int rc;

    do {
        ec->page_rows = 0;
        if ((rc = store_event_each(st, goal, after, EVENT_PAGE, each, ec)) != 0)
            return rc;
        after = ec->page_last;
    } while (ec->page_rows == EVENT_PAGE);
    return 0;
}

/* --type: a comma list of types or prefixes into ec (EXIT_OK, or the
 * usage failure). */
static int parse_types(struct ev_ctx *ec, const char *types)
{
    char *save = NULL, *tok;

    if (strlen(types) >= sizeof(ec->typebuf))
        return cli_fail(EXIT_USAGE, "events: --type: too long");
    /* truncation: ok, its length is checked above */
    snprintf(ec->typebuf, sizeof(ec->typebuf), "%s", types);
    for (tok = strtok_r(ec->typebuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (ec->ntypes == MAX_TYPES)
            return cli_fail(EXIT_USAGE, "events: --type: at most %d types", MAX_TYPES);
        ec->types[ec->ntypes++] = tok;
    }
    if (ec->ntypes == 0)
        return cli_fail(EXIT_USAGE, "events: --type: expected a type like run.failed or "
                                    "tool_call.*");
    return EXIT_OK;
}

/* The options into ec, *since_ms (when --since) and *ntail (-1 without
 * --tail): EXIT_OK or the usage failure. */
static int parse_opts(struct cli_ctx *c, struct ev_ctx *ec, int64_t *since_ms, long long *ntail)
{
    const char *since = cli_opt(c, "since");
    const char *tail = cli_opt(c, "tail");
    const char *types = cli_opt(c, "type");

    if (since && view_parse_since(since, time_now_ms(), since_ms) != 0)
        return cli_fail(EXIT_USAGE,
                        "events: --since: expected an RFC 3339 date-time or a "
                        "duration like 10m (s, m, h, d), got \"%s\"",
                        since);
    if (tail) {
        char *end;
        *ntail = strtoll(tail, &end, 10);
        if (*end || end == tail || *ntail < 0 || *ntail > 100000000)
            return cli_fail(EXIT_USAGE, "events: --tail: expected a count from 0, got \"%s\"",
                            tail);
    }
    return types ? parse_types(ec, types) : EXIT_OK;
}

/* --follow: new events as they come; with --goal, until the goal ends
 * and its last events are printed (exit 0). */
static int follow(store *st, const char *goal, struct ev_ctx *ec)
{
    int64_t ended_at = 0;
    int rc;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    fflush(stdout);
    while (!stop) {
        int ended = goal && goal_ended(st, goal, &ended_at);
        int64_t before = ec->last;
        if ((rc = store_event_each(st, goal, ec->last, 1000, each, ec)) != 0)
            return cli_fail_err(rc);
        fflush(stdout);
        if (ended && ec->last == before)
            break;
        if (ec->last == before)
            time_sleep_ms(200);
    }
    return EXIT_OK;
}

static int run(struct cli_ctx *c)
{
    char idbuf[ID_SIZE];
    const char *goal = cli_opt(c, "goal");
    struct ev_ctx ec;
    int64_t after = 0, since_ms = 0;
    long long ntail = -1;
    store *st;
    int rc;

    memset(&ec, 0, sizeof(ec));
    if ((rc = parse_opts(c, &ec, &since_ms, &ntail)) != EXIT_OK)
        return rc;
    if (goal) {
        if ((rc = cli_resolve(c, STORE_KIND_GOAL, goal, idbuf)) != 0)
            return rc;
        goal = idbuf;
    }
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if (cli_opt(c, "since") && (rc = store_event_id_before(st, since_ms, &after)) != 0)
        return cli_fail_err(rc);
    ec.json = cli_flag(c, "json");
    ec.follow = cli_flag(c, "follow");
    ec.first = 1;
    ec.width = term_width(STDOUT_FILENO);
    if (ntail >= 0) {
        /* --tail: count the matching events first, then pass over all
         * but the last N */
        ec.counting = 1;
        if ((rc = scan(st, goal, after, &ec)) != 0)
            return cli_fail_err(rc);
        ec.counting = 0;
        ec.skip = ec.matched > ntail ? ec.matched - ntail : 0;
    }
    if ((rc = scan(st, goal, after, &ec)) != 0)
        return cli_fail_err(rc);
    if (ec.json && !ec.follow)
        fputs(ec.first ? "[]\n" : "\n]\n", stdout);
    if (!ec.follow)
        return EXIT_OK;
    return follow(st, goal, &ec);
}

const struct cli_command cmd_events = {
    .name = "events",
    .args = "",
    .summary = "the event log, oldest first",
    .details = "--json prints a JSON array; with --follow, one JSON object per line.\n"
               "With --goal, --follow ends (exit 0) once the goal is completed or\n"
               "cancelled and its last events are printed; without, it runs until\n"
               "interrupted.  Human lines fit the terminal (80 columns when not one):\n"
               "the payload is cut with an ellipsis; --json has it whole.",
    .opts = (const struct cli_opt[]){{"goal", "ID", "only events of this goal"},
                                     {"since", "TIME",
                                      "only events from TIME on: RFC 3339 or a duration "
                                      "back from now (90s, 10m, 2h, 1d)"},
                                     {"tail", "N", "only the last N (matching) events"},
                                     {"type", "T",
                                      "only these types: a comma list; a trailing * matches "
                                      "a prefix (tool_call.*)"},
                                     {"follow", NULL,
                                      "keep printing new events (until the goal ends, with "
                                      "--goal)"},
                                     {"json", NULL, "print JSON"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
    .json_shape = "an array of {\"seq\", \"time\", \"type\", \"goal_id\", \"item_id\", \"run_id\", "
                  "\"payload\"} (ids may be null); with --follow, one such object per line",
    .readonly = 1,
};
