/* goald serve [--listen HOST:PORT] : the HTTP API (docs/http.md). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "http/http.h"

static int run(struct cli_ctx *c)
{
    struct http_opts o = {0};
    http_server *srv = NULL;
    sigset_t set;
    store *st;
    int sig = 0, rc;

    /* the database must be there (and migrated) before the first request */
    if ((rc = cli_store(c, &st)) != 0)
        return rc;
    o.db_path = store_path(st);
    o.listen = cli_opt(c, "listen");
    o.wake = daemon_wake;
    /* SIGTERM and SIGINT are waited for here: blocked before the server's
     * threads start, so that they inherit the mask and none of them takes
     * the signal */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if ((rc = http_server_start(&srv, &o)) != 0)
        return cli_fail(rc == ERR_POLICY || rc == ERR_INVALID ? EXIT_USAGE : EXIT_FAIL, "serve: %s",
                        err_last());
    printf("goald: serving %s\n", http_server_url(srv));
    fflush(stdout);
    sigwait(&set, &sig);
    http_server_stop(srv);
    return EXIT_OK;
}

const struct cli_command cmd_serve = {
    .name = "serve",
    .args = "",
    .summary = "serve the HTTP API (/v1, JSON and server-sent events) until SIGTERM",
    .details = "Listens on --listen, else config http.listen, else 127.0.0.1:7878; port 0\n"
               "takes a free one.  The first line on stdout names the address.  An address\n"
               "other than loopback needs TLS (http.tls_cert, http.tls_key) or\n"
               "http.insecure_listen: true.  Requests need a token (goald token create).\n"
               "See docs/http.md.",
    .opts = (const struct cli_opt[]){{"listen", "HOST:PORT", "the address to listen on"},
                                     {NULL, NULL, NULL}},
    .min_pos = 0,
    .max_pos = 0,
    .run = run,
};
