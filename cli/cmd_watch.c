/*
 * goald watch [ID...] [--plain] [--interval MS] : a live view of goals.
 *
 * On a terminal the view is redrawn in place (ANSI: cursor up, erase line;
 * no curses) about four times a second; otherwise (or with --plain) one
 * line is printed per change of a goal.  Per goal: its status and title, a
 * progress bar with the counts (skipped and blocked items named), the item
 * running now with its turn and last tool call, the last error and the
 * open escalations.  Every line fits the terminal's width (80 columns when
 * not a terminal).  The database is only read (PRAGMA query_only).
 *
 * Without IDs it watches the goals open (queued, active, blocked) when it
 * starts.  Exit: 0 once every watched goal is completed or cancelled; 3
 * once none is left running and at least one waits on a human (blocked,
 * or open escalations and nothing else to do), as `daemon --once` does;
 * 1 on a database error; 130 when interrupted.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lifecycle/report.h"
#include "store/escalation.h"
#include "store/goal.h"
#include "store/heartbeat.h"
#include "store/status.h"
#include "util/config.h"
#include "util/strbuf.h"
#include "util/termesc.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

enum { EXIT_WAITING = 3, EXIT_INTERRUPTED = 130, MAX_WATCH = 64 };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

struct watched {
    char id[ID_SIZE];
    char *last_line;  /* plain mode: the last state line printed */
    char *last_error; /* ... the last error line */
    char *last_esc;   /* ... the escalation lines */
    int ended;        /* completed or cancelled */
    int waiting;      /* waits on a human */
};

struct view {
    struct watched g[MAX_WATCH];
    int n;
    int tty;
    int width;
    int drawn; /* lines of the last frame (tty) */
    strbuf frame;
};

/* The goals open now, oldest first (at most MAX_WATCH). */
static int open_goals(store *st, struct view *v)
{
    char(*ids)[ID_SIZE] = NULL;
    size_t n = 0;
    int rc = store_goal_open_ids(st, &ids, &n);

    if (rc)
        return rc;
    for (size_t i = 0; i < n && v->n < MAX_WATCH; i++)
        snprintf(v->g[v->n++].id, ID_SIZE, "%s", ids[i]); /* truncation: ok, an id, ID_SIZE both */
    free(ids);
    return 0;
}

/* "running", "not running" or "stale": the daemon's heartbeat (with
 * PostgreSQL, this node's). */
static const char *daemon_state(store *st)
{
    char node[STORE_NODE_ID_MAX];
    long pid = 0;
    int64_t tick = 0, age;
    int found = 0, shared = store_is_url(store_path(st));

    if (shared && store_node_id(node, sizeof(node), store_path(st)) != 0) {
        err_clear();
        return "unknown";
    }
    if (store_heartbeat_tick(st, shared ? node : NULL, &pid, &tick, &found) != 0) {
        err_clear();
        return "unknown";
    }
    if (!found)
        return "not running";
    age = time_now_ms() - tick;
    return age <= config_int(CFG_DAEMON_STALE_S) * 1000 && kill((pid_t)pid, 0) == 0 ? "running"
                                                                                    : "stale";
}

/* Append one line of at most width columns (text escaped and cut). */
static void add_line(struct view *v, const char *text)
{
    strbuf_addf_cut(&v->frame, "%s\n", term_fit(text, v->width)); /* a screen: cut */
}

static void add_linef(struct view *v, const char *fmt, ...) GOALD_PRINTF(2, 3);

static void add_linef(struct view *v, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    add_line(v, buf);
}

/* Append prefix and text wrapped at width columns, continuation lines
 * indented under the text (text escaped: util/termesc.h), one '\n' after
 * each line: an error is read whole, not cut at the screen's edge. */
static void add_wrapped(strbuf *out, const char *prefix, const char *text, int width)
{
    int indent = (int)strlen(prefix);
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&buf, &n);

    if (!mem)
        return;
    term_wrap(mem, text, indent, width);
    fclose(mem);
    if (buf && n >= (size_t)indent)
        memcpy(buf, prefix, (size_t)indent);
    strbuf_addf_cut(out, "%s", buf ? buf : "");
    free(buf);
}

/* The open escalations' questions of a goal, one line each (at most 3). */
static int escalation_line(const struct store_escalation *e, void *ctx)
{
    add_linef(ctx, "  escalation %s%s%s: %s", e->type, *e->item_key ? " " : "", e->item_key,
              e->question);
    return 0;
}

static void add_escalations(struct view *v, store *st, const char *goal_id)
{
    /* a line is what it can be: a database error leaves the rest out */
    if (store_escalation_each_open_question(st, goal_id, 3, escalation_line, v) != 0)
        err_clear();
}

/* What the goal is doing, in one phrase ("execute wi-2 turn 3, bash: make"). */
static void doing(char *out, size_t n, const struct report_activity *a)
{
    if (!a->kind[0]) {
        snprintf(out, n, "idle"); /* truncation: ok, a constant that fits */
        return;
    }
    /* truncation: ok, a line shown */
    snprintf(out, n, "%s%s%s%s%s, turn %d%s%s%s%s%s%.0d%s", a->kind, a->item_key[0] ? " " : "",
             a->item_key, a->item_title[0] ? " " : "", a->item_title, a->turn,
             a->tool[0] ? ", " : "", a->tool, a->tool_arg[0] ? ": " : "", a->tool_arg,
             a->others_running > 0 ? " (+" : "", a->others_running,
             a->others_running > 0 ? " more running)" : "");
}

/* Plain mode: print text (lines, each cut to the width after "HH:MM:SS ")
 * when it differs from *last, and remember it. */
static void emit_if_changed(struct view *v, char **last, const char *text)
{
    char t[TIME_RFC3339_MAX];

    if (*last && !strcmp(*last, text))
        return;
    time_format_rfc3339_ms(t, sizeof(t), time_now_ms());
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *one = xstrndup(p, n);
        printf("%.8s %s\n", t + 11, term_fit(one, v->width - 9));
        free(one);
        p += n + (nl != NULL);
    }
    free(*last);
    *last = xstrdup(text);
}

/* Read one goal and add its lines (tty) or print its changed state line
 * (plain). */
static int goal_frame(struct view *v, store *st, struct watched *w)
{
    struct goal *g = NULL;
    struct report_progress p;
    struct report_activity a;
    char bar[41], counts[160], now[768];
    int barw, rc;

    if ((rc = store_goal_get(st, w->id, &g)) != 0)
        return rc;
    if ((rc = report_progress(st, w->id, &p)) != 0 || (rc = report_activity(st, w->id, &a)) != 0)
        goto out;
    w->ended = goal_status_ended(goal_status_of(g->status));
    {
        int pending = p.items_total - p.items_done - p.items_skipped - p.items_blocked -
                      p.items_running - p.items_cancelled;
        w->waiting =
            !w->ended && !a.kind[0] &&
            (goal_status_of(g->status) == GOAL_BLOCKED ||
             (a.open_escalations > 0 && p.items_total > 0 && pending == 0 && p.items_running == 0));
    }
    report_counts(counts, sizeof(counts), &p);
    doing(now, sizeof(now), &a);
    if (v->tty) {
        barw = v->width - 18 > 40 ? 40 : v->width - 18;
        if (barw < 5)
            barw = 5;
        report_bar(bar, barw, &p);
        add_linef(v, "%.8s  %-9s %s%s", g->id, g->status, g->title, g->partial ? " (partial)" : "");
        add_linef(v, "  [%s] %5.1f%%", bar, p.percent);
        add_linef(v, "  %s", counts);
        if (report_unverified_reason(g))
            add_line(v, "  " REPORT_NO_REPO);
        if (!w->ended)
            add_linef(v, "  now: %s", now);
        if (a.last_error[0] && goal_status_of(g->status) != GOAL_COMPLETED)
            add_wrapped(&v->frame, "  last error: ", a.last_error, v->width);
        add_escalations(v, st, w->id);
        goto out;
    }
    /* plain: one line per change of the goal's state, of its last error
     * and of its open escalations */
    report_bar(bar, 10, &p);
    {
        char line[2048];
        /* truncation: ok, a line shown */
        snprintf(line, sizeof(line), "%.8s %s [%s] %.1f%% %s; %s", g->id, g->status, bar, p.percent,
                 counts, w->ended ? g->title : now);
        emit_if_changed(v, &w->last_line, line);
        if (a.last_error[0] && goal_status_of(g->status) != GOAL_COMPLETED) {
            /* whole, wrapped within the width after "HH:MM:SS " */
            strbuf err = STRBUF_INIT;
            /* truncation: ok, a line shown */
            snprintf(line, sizeof(line), "%.8s last error: ", g->id);
            strbuf_init(&err, 1 << 16);
            add_wrapped(&err, line, a.last_error, v->width - 9);
            if (err.len)
                strbuf_setlen(&err, err.len - 1);
            emit_if_changed(v, &w->last_error, strbuf_cstr(&err));
            strbuf_release(&err);
        }
        strbuf_reset(&v->frame);
        add_escalations(v, st, w->id);
        if (v->frame.len) {
            /* each escalation line named by the goal */
            strbuf esc = STRBUF_INIT;
            strbuf_init(&esc, 1 << 16);
            for (const char *q = strbuf_cstr(&v->frame); *q;) {
                const char *nl = strchr(q, '\n');
                strbuf_addf_cut(&esc, "%.8s%.*s\n", g->id, (int)(nl - q), q);
                q = nl + 1;
            }
            strbuf_setlen(&esc, esc.len - 1);
            emit_if_changed(v, &w->last_esc, strbuf_cstr(&esc));
            strbuf_release(&esc);
            strbuf_reset(&v->frame);
        }
    }
out:
    store_goal_free(g);
    return rc;
}

/* Draw every goal once; *all_ended / *waiting say how the watch stands. */
static int frame(struct view *v, store *st, int *all_ended, int *waiting)
{
    int rc = 0, open = 0;
    char t[TIME_RFC3339_MAX];

    v->width = term_width(STDOUT_FILENO);
    strbuf_reset(&v->frame);
    *all_ended = 1;
    *waiting = 0;
    /* one read transaction: a consistent picture */
    if ((rc = store_read_begin(st)) != 0)
        return rc;
    for (int i = 0; i < v->n && rc == 0; i++) {
        rc = goal_frame(v, st, &v->g[i]);
        if (!v->g[i].ended) {
            *all_ended = 0;
            open++;
        }
        if (v->g[i].waiting)
            (*waiting)++;
    }
    if (rc == 0 && v->tty) {
        time_format_rfc3339(t, sizeof(t), time_now_ms());
        add_linef(v, "daemon %s; %d of %d goal%s open; %.8s", daemon_state(st), open, v->n,
                  v->n == 1 ? "" : "s", t + 11);
    }
    store_read_end(st);
    if (rc)
        return rc;
    if (v->tty) {
        /* back to the top of the last frame, then each line erased and
         * rewritten; lines left over from a longer frame are erased */
        int lines = 0;
        for (size_t i = 0; i < v->frame.len; i++)
            lines += v->frame.buf[i] == '\n';
        if (v->drawn)
            printf("\r\033[%dA", v->drawn);
        for (const char *p = strbuf_cstr(&v->frame); *p;) {
            const char *nl = strchr(p, '\n');
            printf("\033[2K%.*s\n", (int)(nl - p), p);
            p = nl + 1;
        }
        for (int i = lines; i < v->drawn; i++)
            printf("\033[2K\n");
        if (v->drawn > lines)
            printf("\033[%dA", v->drawn - lines);
        v->drawn = lines;
    }
    fflush(stdout);
    return 0;
}

static int run(struct cli_ctx *c)
{
    struct view v;
    const char *iv = cli_opt(c, "interval");
    long interval = 250;
    store *st;
    int rc, code = EXIT_OK, all_ended = 0, waiting = 0;

    memset(&v, 0, sizeof(v));
    if (iv) {
        char *end;
        interval = strtol(iv, &end, 10);
        if (*end || end == iv || interval < 50 || interval > 60000)
            return cli_fail(EXIT_USAGE,
                            "watch: --interval: expected milliseconds from 50 to "
                            "60000, got \"%s\"",
                            iv);
    }
    for (int i = 0; i < c->npos; i++) {
        if ((rc = cli_resolve(c, STORE_KIND_GOAL, c->pos[i], v.g[v.n].id)) != 0)
            return rc;
        v.n++;
    }
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    if ((rc = store_query_only(st)) != 0)
        return cli_fail_err(rc);
    if (c->npos == 0 && (rc = open_goals(st, &v)) != 0)
        return cli_fail_err(rc);
    if (v.n == 0) {
        printf("no open goals to watch\n");
        return EXIT_OK;
    }
    v.tty = isatty(STDOUT_FILENO) && !cli_flag(c, "plain");
    strbuf_init(&v.frame, 1 << 20);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    for (;;) {
        if ((rc = frame(&v, st, &all_ended, &waiting)) != 0) {
            code = cli_fail_err(rc);
            break;
        }
        if (all_ended)
            break;
        {
            /* every goal ended or waiting, at least one waiting */
            int done = 0;
            for (int i = 0; i < v.n; i++)
                done += v.g[i].ended || v.g[i].waiting;
            if (waiting && done == v.n)
                break;
        }
        if (stop) {
            code = EXIT_INTERRUPTED;
            break;
        }
        time_sleep_ms(interval);
    }
    if (code == EXIT_OK) {
        /* the last lines: how each goal ended (or what it waits for) */
        for (int i = 0; i < v.n; i++) {
            struct goal *g = NULL;
            char line[1024];
            if (store_goal_get(st, v.g[i].id, &g) != 0)
                continue;
            /* truncation: ok, a line shown */
            snprintf(line, sizeof(line), "goal %.8s %s%s: %s", g->id,
                     v.g[i].waiting ? "waits on a human" : g->status,
                     g->partial ? " (partial)" : "", g->title);
            printf("%s\n", term_fit(line, v.width));
            store_goal_free(g);
        }
        if (!all_ended)
            code = EXIT_WAITING;
    }
    for (int i = 0; i < v.n; i++) {
        free(v.g[i].last_line);
        free(v.g[i].last_error);
        free(v.g[i].last_esc);
    }
    strbuf_release(&v.frame);
    return code;
}

const struct cli_command cmd_watch = {
    .name = "watch",
    .args = "[ID...]",
    .summary = "a live view of goals: progress, the running item, errors, escalations",
    .details = "Without IDs: the goals open when it starts.  On a terminal the view is\n"
               "redrawn in place; otherwise (or with --plain) one line per change.\n"
               "Exit 0 when every watched goal is completed or cancelled, 3 when the\n"
               "rest wait on a human (goald escalations), 130 when interrupted.",
    .opts = (const struct cli_opt[]){{"plain", NULL, "one line per change, even on a terminal"},
                                     {"interval", "MS", "refresh every MS milliseconds (250)"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = CLI_MAX_POS,
    .run = run,
    .readonly = 1,
};
