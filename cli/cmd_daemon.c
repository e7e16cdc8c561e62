/* goald daemon [--once] [--log-file PATH] : the supervisor. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "util/log.h"

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
    return EXIT_OK;
}

const struct cli_command cmd_daemon = {
    .name = "daemon",
    .args = "",
    .summary = "run the supervisor: claim work, run jobs, fire schedules (one per database)",
    .details = "--once works until nothing is runnable (waiting for scheduled retries) and "
               "exits 0;\nit exits non-zero only when the daemon itself failed.\n"
               "Signals: SIGTERM/SIGINT stop (jobs get daemon.shutdown_grace_s to finish), "
               "SIGHUP\nreloads the config, SIGUSR1 reopens the log file.  See docs/operations.md.",
    .opts = (const struct cli_opt[]){{"once", NULL, "exit when nothing is runnable"},
                                     {"log-file", "PATH", "also append JSON lines to PATH"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
};
