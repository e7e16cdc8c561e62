/* goald daemon [--once] [--log-file PATH] : the supervisor. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "http/http.h"
#include "util/config.h"
#include "store/goal.h"
#include "util/log.h"
#include "util/path.h"
#include "util/termesc.h"

enum { EXIT_WAITING = 3 };

struct waiting {
    int n;
    cJSON *whole; /* "ID: question" of each question cut on its line */
};

/* One waiting goal, one line of 80 columns: id, title, escalation, what
 * it waits on (its question, or the breaker that holds it); a question
 * cut there is kept whole for the closing lines on stderr. */
static int waiting_line(const struct store_goal_waiting *w, void *ctx)
{
    struct waiting *wt = ctx;
    const char *esc = w->escalation_id;
    cJSON *packet = esc ? cJSON_Parse(w->packet) : NULL;
    const char *question =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(packet, "minimal_question"));
    char line[1024], title[128];

    if (!esc && w->breaker_escalation_id) {
        esc = w->breaker_escalation_id; /* held by the breaker that escalation is about */
        snprintf(line, sizeof(line), "held: %s", w->breakers); /* truncation: ok, a line shown */
        question = line;
    } else if (!esc) {
        question = w->breakers ? w->breakers : "nothing runnable";
    }
    /* 8 + 2 + 22 + 2 + 14 + 32 = 80 columns; the title padded to 22 */
    /* truncation: ok, a title shown */
    snprintf(title, sizeof(title), "%s", term_fit(w->title, 22));
    printf("%.8s  %s%*s  esc %-8.8s  %s\n", w->id, title, 22 - term_columns(title), "",
           esc ? esc : "-", term_fit(question ? question : "", 32));
    if (question && term_columns(term_view(question)) > 32) {
        snprintf(line, sizeof(line), "%.8s: ", w->id); /* truncation: ok, a line shown */
        size_t k = strlen(line);
        snprintf(line + k, sizeof(line) - k, "%s", question); /* truncation: ok, a line shown */
        cJSON_AddItemToArray(wt->whole, cJSON_CreateString(line));
    }
    cJSON_Delete(packet);
    wt->n++;
    return 0;
}

/* After `daemon --once`: the goals left unfinished (each waits on a human:
 * its own escalation, or a breaker a configuration error opened), one line
 * each on stdout within 80 columns, then on stderr how many, and each
 * question too long for its line whole, wrapped; returns how many. */
static int report_waiting(struct cli_ctx *c)
{
    struct waiting wt = {0, cJSON_CreateArray()};
    const cJSON *it;
    store *st;

    if (cli_store(c, &st) != 0)
        goto out;
    if (store_goal_each_waiting(st, waiting_line, &wt) != 0)
        err_clear(); /* the lines printed stand */
    if (wt.n == 0)
        goto out;
    fflush(stdout);
    fprintf(stderr,
            "goald: daemon --once: %d goal%s left waiting on a human (goald escalations)%s\n", wt.n,
            wt.n == 1 ? "" : "s", cJSON_GetArraySize(wt.whole) ? ":" : "");
    cJSON_ArrayForEach(it, wt.whole)
    {
        term_wrap(stderr, it->valuestring, 7, 80);
    }
out:
    cJSON_Delete(wt.whole);
    return wt.n;
}

/* With config http.listen set, the daemon serves the HTTP API too (in its
 * own threads, stopped when the daemon stops); *srv NULL otherwise. */
static int start_http(const char *db_path, http_server **srv)
{
    struct http_opts ho = {.db_path = db_path, .wake = daemon_wake};

    *srv = NULL;
    if (!config_str(CFG_HTTP_LISTEN))
        return EXIT_OK;
    if (http_server_start(srv, &ho) != 0)
        return cli_fail(EXIT_FAIL, "daemon: %s", err_last());
    fprintf(stderr, "goald: serving %s\n", http_server_url(*srv));
    return EXIT_OK;
}

static int run(struct cli_ctx *c)
{
    http_server *srv = NULL;
    struct daemon_opts o;
    struct stat sb;
    int fresh;
    char path[PATH_MAX];
    char cfg[PATH_MAX];
    int rc;

    memset(&o, 0, sizeof(o));
    if (c->db_path)
        rc = path_fmt(path, sizeof(path), "%s", c->db_path);
    else
        rc = store_default_path(path, sizeof(path));
    if (rc != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    /* jobs run in other folders' processes: give them absolute paths */
    if (path[0] != '/' && !store_is_url(path)) {
        char abs[PATH_MAX];
        if (!getcwd(abs, sizeof(abs)) ||
            snprintf(abs + strlen(abs), sizeof(abs) - strlen(abs), "/%s", path) >= PATH_MAX)
            return cli_fail(EXIT_FAIL, "database path too long");
        if (path_fmt(path, sizeof(path), "%s", abs) != 0)
            return cli_fail(EXIT_FAIL, "database path: %s", err_last());
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
    /* the lock before any connection of this process (the server's
     * threads open theirs as soon as it listens), released after the last
     * is closed: daemon_lock_take */
    fresh = !store_is_url(path) && stat(path, &sb) != 0 && errno == ENOENT;
    if ((rc = daemon_lock_take(path, &o.lock_fd)) != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    o.has_lock = 1;
    /* the lock is on the database file itself and makes it: say so (a
     * typo in --db is otherwise a second queue nobody fills) */
    if (fresh)
        cli_fail(0, "created a new database at %s", path);
    if ((rc = start_http(path, &srv)) != EXIT_OK) {
        daemon_lock_release(o.lock_fd);
        return rc;
    }
    rc = daemon_run(&o);
    http_server_stop(srv);
    daemon_lock_release(o.lock_fd);
    if (rc == ERR_BUSY)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    if (rc)
        return cli_fail(EXIT_FAIL, "daemon: %s", err_last());
    if (o.once) {
        if (report_waiting(c) > 0)
            return EXIT_WAITING;
    }
    return EXIT_OK;
}

const struct cli_command cmd_daemon = {
    .name = "daemon",
    .args = "",
    .summary = "run the supervisor: claim work, run jobs, fire schedules (one per database)",
    .details = "--once works until nothing is runnable (waiting for scheduled retries),\n"
               "then exits: 0 all work finished; 3 work left waiting on a human (one\n"
               "line per goal on stdout: goal, title, escalation, question; on stderr\n"
               "how many, and each question too long for its line, whole); 1 the\n"
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
