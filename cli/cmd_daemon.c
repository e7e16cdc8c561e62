/* goald daemon [--once] [--log-file PATH] : the supervisor. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "util/log.h"
#include "util/termesc.h"

enum { EXIT_WAITING = 3 };

/* s cut to at most max characters (UTF-8 aware), "…" ending a cut one. */
static size_t strlen_utf8(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += (*s & 0xC0) != 0x80;
    return n;
}

static void cut(char *out, size_t n, const char *s, size_t max)
{
    size_t chars = 0, i = 0, o = 0;

    s = s ? s : "";
    while (s[i] && chars < max) {
        size_t len = 1;
        while ((s[i + len] & 0xC0) == 0x80)
            len++;
        if (chars + 1 == max && s[i + len]) /* room for the ellipsis only */
            break;
        if (o + len + 4 > n)
            break;
        for (size_t k = 0; k < len; k++) {
            char ch = s[i + k];
            out[o++] = ch == '\n' || ch == '\t' ? ' ' : ch;
        }
        i += len;
        chars++;
    }
    if (s[i] && o + 4 <= n) {
        memcpy(out + o, "\xe2\x80\xa6", 3); /* … */
        o += 3;
    }
    out[o] = '\0';
}

/* After `daemon --once`: the goals left unfinished (each waits on a human:
 * its own escalation, or a breaker a configuration error opened), one line
 * each on stdout within 80 columns; returns how many. */
static int report_waiting(struct cli_ctx *c)
{
    static const char q[] =
        "SELECT g.id, g.title, e.id, e.packet,"
        " (SELECT group_concat(b.error_class || ': ' || ifnull(b.reason, 'open'), '; ')"
        "  FROM breakers b WHERE b.state <> 'closed'),"
        " (SELECT x.id FROM escalations x JOIN breakers b ON b.error_class = x.type"
        "  AND b.state <> 'closed' WHERE x.status = 'open' ORDER BY x.created_at LIMIT 1)"
        " FROM goals g LEFT JOIN escalations e ON e.id = (SELECT id FROM escalations"
        "  WHERE goal_id = g.id AND status = 'open' ORDER BY created_at, id LIMIT 1)"
        " WHERE g.is_template = 0 AND g.status IN ('queued', 'active', 'blocked')"
        " ORDER BY g.created_at, g.id";
    sqlite3_stmt *s;
    store *st;
    int n = 0;

    if (cli_store(c, &st) != 0 || store_prepare(st, &s, q) != 0)
        return 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *esc = (const char *)sqlite3_column_text(s, 2);
        const char *brk = (const char *)sqlite3_column_text(s, 4);
        const char *bresc = (const char *)sqlite3_column_text(s, 5);
        cJSON *packet = esc ? cJSON_Parse((const char *)sqlite3_column_text(s, 3)) : NULL;
        const char *question =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "minimal_question"));
        char title[128], why[512], line[1024];

        if (!esc && bresc) {
            esc = bresc; /* held by the breaker that escalation is about */
            snprintf(line, sizeof(line), "held: %s", brk);
            question = line;
        } else if (!esc) {
            question = brk ? brk : "nothing runnable";
        }
        /* 8 + 2 + 22 + 2 + 14 + 32 = 80 columns */
        cut(title, sizeof(title), term_view((const char *)sqlite3_column_text(s, 1)), 22);
        cut(why, sizeof(why), term_view(question ? question : ""), 32);
        printf("%.8s  %s%*s  esc %-8.8s  %s\n", sqlite3_column_text(s, 0), title,
               (int)(22 - strlen_utf8(title)), "", esc ? esc : "-", why);
        cJSON_Delete(packet);
        n++;
    }
    store_done(s);
    return n;
}

static int run(struct cli_ctx *c)
{
    struct daemon_opts o;
    char path[PATH_MAX];
    char cfg[PATH_MAX];
    int rc;

    memset(&o, 0, sizeof(o));
    if (c->db_path)
        snprintf(path, sizeof(path), "%s", c->db_path);
    else if (store_default_path(path, sizeof(path)) != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    /* jobs run in other folders' processes: give them absolute paths */
    if (path[0] != '/') {
        char abs[PATH_MAX];
        if (!getcwd(abs, sizeof(abs)) ||
            snprintf(abs + strlen(abs), sizeof(abs) - strlen(abs), "/%s", path) >= PATH_MAX)
            return cli_fail(EXIT_FAIL, "database path too long");
        snprintf(path, sizeof(path), "%s", abs);
    }
    o.db_path = path;
    if (c->config_path) {
        if (!realpath(c->config_path, cfg))
            return cli_fail(EXIT_USAGE, "%s: no such config file", c->config_path);
        o.config_path = cfg;
    }
    o.log_file = cli_opt(c, "log-file");
    o.once = cli_flag(c, "once");
    o.log_level = LOG_INFO; /* a service reports its jobs unless log.level says */
    /* it holds the credentials for its jobs: /proc/PID/{environ,mem} and
     * ptrace closed to other processes of its user (it still reads its
     * jobs' /proc/PID/cmdline, which stays readable) */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    rc = daemon_run(&o);
    if (rc == ERR_BUSY)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    if (rc)
        return cli_fail(EXIT_FAIL, "daemon: %s", err_last());
    if (o.once) {
        int waiting = report_waiting(c);
        if (waiting > 0) {
            fprintf(stderr, "goald: daemon --once: %d goal%s left waiting on a human (goald "
                            "escalations)\n",
                    waiting, waiting == 1 ? "" : "s");
            return EXIT_WAITING;
        }
    }
    return EXIT_OK;
}

const struct cli_command cmd_daemon = {
    .name = "daemon",
    .args = "",
    .summary = "run the supervisor: claim work, run jobs, fire schedules (one per database)",
    .details = "--once works until nothing is runnable (waiting for scheduled retries),\n"
               "then exits: 0 all work finished; 3 work left waiting on a human (one\n"
               "line per goal on stdout: goal, title, escalation, question); 1 the\n"
               "daemon failed.  Signals: SIGTERM/SIGINT stop (jobs get\n"
               "daemon.shutdown_grace_s to finish), SIGHUP reloads the config, SIGUSR1\n"
               "reopens the log file.  See docs/operations.md.",
    .opts = (const struct cli_opt[]){{"once", NULL, "exit when nothing is runnable"},
                                     {"log-file", "PATH", "also append JSON lines to PATH"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
};
