#include "util/config.h"

#include <ctype.h>
#include <errno.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cron.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/url.h"
#include "util/xalloc.h"

#define NOB 1, 0 /* no bounds */

const struct cfg_def config_defs[CFG__COUNT] = {
    [CFG_LOG_LEVEL] = {"log.level", CFG_STRING, NULL, "GOALD_LOG_LEVEL", NOB,
                       "stderr log level: error, warn, info or debug"},
    [CFG_STORE_BUSY_TIMEOUT_MS] = {"store.busy_timeout_ms", CFG_INT, "10000", NULL, 0, 600000,
                                   "how long a database write waits for a lock (ms)"},
    [CFG_STORE_URL] = {"store.url", CFG_STRING, NULL, NULL, NOB,
                       "a PostgreSQL URL (postgres://USER@HOST/DB) to use instead of the "
                       "SQLite file; its password goes in PGPASSFILE or ~/.pgpass, never here"},
    [CFG_NODE_ID] = {"node.id", CFG_STRING, NULL, NULL, NOB,
                     "this daemon's name among the nodes sharing a PostgreSQL queue (unset: "
                     "HOST:STATE_DIR)"},
    [CFG_NODE_STATE_DIR] = {"node.state_dir", CFG_STRING, NULL, NULL, NOB,
                            "this node's own files with a PostgreSQL store: the daemon's lock "
                            "and socket, spill files (unset: $XDG_STATE_HOME/goald)"},
    [CFG_NODE_DEAD_AFTER_S] = {"node.dead_after_s", CFG_INT, "60", NULL, 2, 86400,
                               "with several nodes: a node whose heartbeat is older than this "
                               "is dead, and another node recovers its runs"},
    [CFG_INTAKE_MAX_TITLE] = {"intake.max_title", CFG_INT, "200", NULL, 1, 10000,
                              "the longest goal title accepted (characters)"},
    [CFG_PLAN_MAX_ITEMS] = {"plan.max_items", CFG_INT, "50", NULL, 1, 1000,
                            "the most work items a plan may have"},
    [CFG_CONTROL_MAX_TURNS] = {"control.max_turns", CFG_INT, "40", NULL, 1, 10000,
                               "model turns per run before control.limit_reached"},
    [CFG_CONTROL_MAX_WALL_TIME_S] = {"control.max_wall_time_s", CFG_INT, "600", NULL, 1, 86400,
                                     "wall time per run (s) before control.limit_reached"},
    [CFG_CONTROL_MAX_TOKENS] = {"control.max_tokens", CFG_INT, "400000", NULL, 1, 1e12,
                                "tokens (input + output) per run before control.limit_reached"},
    [CFG_CONTROL_MAX_RETRIES] = {"control.max_retries", CFG_INT, "3", NULL, 0, 100,
                                 "tier-1 retries of a work item before failover"},
    [CFG_CONTROL_BACKOFF_BASE_MS] = {"control.backoff_base_ms", CFG_INT, "2000", NULL, 0, 3600000,
                                     "backoff after the first failure: min(base*2^(n-1), max)"},
    [CFG_CONTROL_BACKOFF_MAX_MS] = {"control.backoff_max_ms", CFG_INT, "300000", NULL, 0, 86400000,
                                    "the longest backoff between attempts (ms)"},
    [CFG_CONTROL_NO_PROGRESS_K] = {"control.no_progress_k", CFG_INT, "3", NULL, 2, 100,
                                   "identical turn fingerprints in a row that mean stalled"},
    [CFG_BREAKER_THRESHOLD] = {"breaker.threshold", CFG_INT, "5", NULL, 1, 1000,
                               "consecutive failures of one error class that open its breaker"},
    [CFG_BREAKER_COOLDOWN_S] = {"breaker.cooldown_s", CFG_INT, "60", NULL, 0, 86400,
                                "seconds an open breaker waits before a half-open probe"},
    [CFG_GOAL_MAX_PARALLEL_ITEMS] = {"goal.max_parallel_items", CFG_INT, "3", NULL, 1, 16,
                                     "items of one goal that may run at once, each in its own "
                                     "worktree, when their dependencies are done (a goal without "
                                     "a repository, or in clone mode, runs one at a time)"},
    [CFG_GATES_WARM_MAX_MB] = {"gates.warm_max_mb", CFG_INT, "512", NULL, 0, 1048576,
                               "largest set of a gate's declared build folders (build_dirs) "
                               "kept warm between its runs (MiB); larger ones, and every one "
                               "with 0, build from nothing at every run"},
    [CFG_SELECT_FRESHNESS_FULL_S] = {"select.freshness_full_s", CFG_INT, "3600", NULL, 1, 31536000,
                                     "age (s) at which a ready item's freshness score is 100"},
    [CFG_LANE_PLAN_TIMEOUT_S] = {"lane.plan_timeout_s", CFG_INT, "600", NULL, 1, 86400,
                                 "timeout of a plan-lane job (elaborate, plan, Plan B); its "
                                 "run's lease is this plus 30 s (see lane.work_timeout_s)"},
    [CFG_LANE_WORK_TIMEOUT_S] = {"lane.work_timeout_s", CFG_INT, "600", NULL, 1, 86400,
                                 "timeout of a work-lane job (execute and verify one item, "
                                 "publish; an item's own timeout_s wins). The run's lease is "
                                 "its timeout plus 30 s, from its claim, renewed at each model "
                                 "call: a run whose lease ran out is aborted by its node's "
                                 "daemon, or by any other node, and goes through recovery"},
    [CFG_LANE_REVIEW_TIMEOUT_S] = {"lane.review_timeout_s", CFG_INT, "120", NULL, 1, 86400,
                                   "timeout of the LLM review of an item"},
    /* llm/: see docs/llm.md.  API keys are never settings: they come from
     * the environment variable a model names (api_key_env). */
    [CFG_LLM_MODELS] = {"llm.models", CFG_JSON, NULL, NULL, NOB,
                        "the model chain in failover order: [{\"provider\", \"model\", "
                        "\"base_url\", \"api_key_env\", \"price_in\", \"price_cached_in\", "
                        "\"price_out\", \"script\", \"context_window\"}]; when unset, "
                        "llm.provider/llm.model"},
    [CFG_LLM_PROVIDER] = {"llm.provider", CFG_STRING, NULL, NULL, NOB,
                          "shortcut chain: openai, anthropic or script"},
    [CFG_LLM_BASE_URL] = {"llm.base_url", CFG_STRING, NULL, NULL, NOB,
                          "shortcut chain: the endpoint base URL (default per provider)"},
    [CFG_LLM_MODEL] = {"llm.model", CFG_STRING, NULL, NULL, NOB, "shortcut chain: the first model"},
    [CFG_LLM_FALLBACK_MODEL] = {"llm.fallback_model", CFG_STRING, NULL, NULL, NOB,
                                "shortcut chain: a second model, same provider"},
    [CFG_LLM_SCRIPT] = {"llm.script", CFG_STRING, NULL, NULL, NOB,
                        "the JSONL file the script provider answers from"},
    [CFG_LLM_CONNECT_TIMEOUT_MS] = {"llm.connect_timeout_ms", CFG_INT, "10000", NULL, 1, 600000,
                                    "connect timeout of one LLM request (ms)"},
    [CFG_LLM_TIMEOUT_MS] = {"llm.timeout_ms", CFG_INT, "300000", NULL, 1, 3600000,
                            "total timeout of one LLM request, body included (ms)"},
    [CFG_LLM_MAX_RESPONSE_BYTES] = {"llm.max_response_bytes", CFG_INT, "0", NULL, 0, 1073741824,
                                    "the largest LLM response body accepted (bytes); 0: twice "
                                    "tools.max_file_mb plus 1 MiB (129 MiB by default), room for "
                                    "a write at the file-size cap with its escapes. The job's "
                                    "memory peaks at about this plus 16 MiB"},
    [CFG_LLM_MAX_OUTPUT_TOKENS] = {"llm.max_output_tokens", CFG_INT, "8192", NULL, 1, 1000000,
                                   "output token limit sent when a request gives none"},
    [CFG_LLM_ANTHROPIC_VERSION] = {"llm.anthropic_version", CFG_STRING, "2023-06-01", NULL, NOB,
                                   "the anthropic-version header"},
    [CFG_LLM_CONTEXT_WINDOW] = {"llm.context_window", CFG_INT, "0", NULL, 0, 100000000,
                                "shortcut chain: the model's context window (tokens); 0: the "
                                "default for its name (docs/llm.md), 32768 for an unknown one"},
    [CFG_LLM_PRICE_IN] = {"llm.price_in", CFG_DOUBLE, NULL, NULL, 0, 1e6,
                          "shortcut chain: USD per million input tokens; unset: the table of "
                          "docs/llm.md (a model it does not know has no price and is refused "
                          "under a goal's budget.max_cost_usd)"},
    [CFG_LLM_PRICE_CACHED_IN] = {"llm.price_cached_in", CFG_DOUBLE, NULL, NULL, 0, 1e6,
                                 "shortcut chain: USD per million cached input tokens; unset: "
                                 "the table's, else llm.price_in"},
    [CFG_LLM_PRICE_OUT] = {"llm.price_out", CFG_DOUBLE, NULL, NULL, 0, 1e6,
                           "shortcut chain: USD per million output tokens; unset: the table's"},
    [CFG_LLM_COMPACT_AT_PCT] = {"llm.compact_at_pct", CFG_INT, "75", NULL, 10, 95,
                                "a run's history is compacted when a request is estimated past "
                                "this share of the model's context window (%)"},
    [CFG_LLM_COMPACT_KEEP_TURNS] = {"llm.compact_keep_turns", CFG_INT, "4", NULL, 1, 100,
                                    "compaction keeps at most this many of the last turns "
                                    "verbatim (fewer when they do not fit half the threshold)"},
    [CFG_LLM_RETRY_RATE_LIMIT] = {"llm.retry.rate_limit", CFG_INT, "3", NULL, 0, 100,
                                  "retries of a rate-limited request on one model"},
    [CFG_LLM_RETRY_MAX] = {"llm.retry.max", CFG_INT, "2", NULL, 0, 100,
                           "retries on one model after provider_api or timeout errors"},
    [CFG_LLM_RETRY_INVALID] = {"llm.retry.invalid_response", CFG_INT, "1", NULL, 0, 100,
                               "retries on one model after an invalid response"},
    [CFG_LLM_RETRY_BACKOFF_MS] = {"llm.retry.backoff_ms", CFG_INT, "500", NULL, 0, 600000,
                                  "first retry delay; doubles each retry (ms)"},
    [CFG_LLM_RETRY_BACKOFF_MAX_MS] = {"llm.retry.backoff_max_ms", CFG_INT, "30000", NULL, 0,
                                      3600000, "the longest backoff delay (ms)"},
    [CFG_LLM_RETRY_AFTER_MAX_MS] = {"llm.retry.retry_after_max_ms", CFG_INT, "60000", NULL, 0,
                                    3600000,
                                    "the longest Retry-After honoured; longer fails over (ms)"},
    /* publishing (vcs/): docs/publishing.md */
    [CFG_VCS_AUTHOR_NAME] = {"vcs.author_name", CFG_STRING, "goald", NULL, NOB,
                             "author and committer name of goald's commits"},
    [CFG_VCS_AUTHOR_EMAIL] = {"vcs.author_email", CFG_STRING, "goald@localhost", NULL, NOB,
                              "author and committer email of goald's commits"},
    [CFG_VCS_WORKTREE_ROOT] = {"vcs.worktree_root", CFG_STRING, NULL, NULL, NOB,
                               "folder holding the goals' worktrees (unset: "
                               "$XDG_STATE_HOME/goald/worktrees)"},
    [CFG_VCS_PUSH_TOKEN_ENV] = {"vcs.push_token_env", CFG_STRING, NULL, NULL, NOB,
                                "NAME of the environment variable holding the token for "
                                "https pushes (unset: forge.token_env)"},
    [CFG_VCS_PUSH_USERNAME] = {"vcs.push_username", CFG_STRING, "x-access-token", NULL, NOB,
                               "user name sent with the token on https pushes when the "
                               "remote URL has none"},
    [CFG_FORGE_BASE_URL] = {"forge.base_url", CFG_STRING, "https://api.github.com", NULL, NOB,
                            "forge REST API base (GitHub Enterprise: https://HOST/api/v3; "
                            "Gitea/Forgejo: https://HOST/api/v1)"},
    [CFG_FORGE_OWNER] = {"forge.owner", CFG_STRING, NULL, NULL, NOB,
                         "repository owner on the forge (unset: from the remote URL)"},
    [CFG_FORGE_REPO] = {"forge.repo", CFG_STRING, NULL, NULL, NOB,
                        "repository name on the forge (unset: from the remote URL)"},
    [CFG_FORGE_TOKEN_ENV] = {"forge.token_env", CFG_STRING, "GOALD_FORGE_TOKEN", NULL, NOB,
                             "NAME of the environment variable holding the forge token "
                             "(the value is never stored or logged)"},
    [CFG_FORGE_AUTH_SCHEME] = {"forge.auth_scheme", CFG_STRING, "token", NULL, NOB,
                               "Authorization scheme for the forge token: token or bearer"},
    [CFG_FORGE_TIMEOUT_S] = {"forge.timeout_s", CFG_INT, "30", NULL, 1, 600,
                             "timeout of one forge API request (seconds)"},
    [CFG_FORGE_MAX_ATTEMPTS] = {"forge.max_attempts", CFG_INT, "4", NULL, 1, 20,
                                "attempts of one forge API request on 5xx, 429, a rate limit or "
                                "a network error (401/403 are never retried)"},
    [CFG_FORGE_RETRY_MAX_WAIT_S] = {"forge.retry_max_wait_s", CFG_INT, "60", NULL, 1, 3600,
                                    "longest wait between forge attempts; a rate limit that "
                                    "resets later fails the request now, naming the wait"},
    [CFG_FORGE_MAX_PAGES] = {"forge.max_pages", CFG_INT, "20", NULL, 1, 1000,
                             "pages of open pull requests read to find the goal's (Gitea and "
                             "Forgejo list them without a head filter)"},
    [CFG_FORGE_TRIGGERS] = {"forge.triggers", CFG_JSON, "[]", NULL, NOB,
                            "issues that become goals: [{\"repo\": \"OWNER/NAME\", "
                            "\"local_repo\": \"/srv/repos/x\", \"label\": \"goald\", "
                            "\"kind\", \"base_url\", \"token_env\", "
                            "\"webhook_secret_env\", \"name\", \"template\": {verification, "
                            "budget, publish, allowed_actions, priority}}] (docs/forge.md)"},
    [CFG_FORGE_POLL_INTERVAL_S] = {"forge.poll_interval_s", CFG_INT, "60", NULL, 1, 86400,
                                   "how often the daemon's cron lane asks each forge trigger's "
                                   "repository for labelled issues (an unchanged answer, 304, "
                                   "costs no rate limit)"},
    [CFG_FORGE_WEBHOOK_MAX_KB] = {"forge.webhook_max_kb", CFG_INT, "256", NULL, 1, 16384,
                                  "the largest forge webhook body accepted (KiB); larger "
                                  "ones get 413"},
    [CFG_HTTP_PUBLIC_URL] = {"http.public_url", CFG_STRING, NULL, NULL, NOB,
                             "where people reach `goald serve` (https://goald.example.com): "
                             "goald's comments on a forge's issues link to the goal's page "
                             "there; unset: no link"},
    [CFG_NOTIFY_WEBHOOK_URL] = {"notify.webhook_url", CFG_STRING, NULL, NULL, NOB,
                                "URL that receives a JSON POST when a goal ends (unset: none)"},
    [CFG_NOTIFY_WEBHOOK_TIMEOUT_S] = {"notify.webhook_timeout_s", CFG_INT, "10", NULL, 1, 300,
                                      "timeout of the webhook POST (seconds)"},
    /* sandbox/: see docs/sandbox.md */
    [CFG_SANDBOX_MODE] = {"sandbox.mode", CFG_STRING, "bwrap", "GOALD_SANDBOX", NOB,
                          "how commands are confined: bwrap, or none (unconfined, logged)"},
    [CFG_SANDBOX_BWRAP] = {"sandbox.bwrap", CFG_STRING, "bwrap", NULL, NOB,
                           "the bubblewrap binary (a name looked up in PATH, or a path)"},
    [CFG_SANDBOX_TIMEOUT_S] = {"sandbox.timeout_s", CFG_INT, "600", NULL, 1, 86400,
                               "wall-clock limit of a sandboxed command (s)"},
    [CFG_SANDBOX_KILL_GRACE_MS] = {"sandbox.kill_grace_ms", CFG_INT, "2000", NULL, 0, 60000,
                                   "time between SIGTERM and SIGKILL on timeout (ms)"},
    [CFG_SANDBOX_CPU_S] = {"sandbox.rlimit.cpu_s", CFG_INT, "900", NULL, 0, 86400,
                           "RLIMIT_CPU per process (s); 0 = unlimited"},
    [CFG_SANDBOX_AS_MB] = {"sandbox.rlimit.as_mb", CFG_INT, "8192", NULL, 0, 1048576,
                           "RLIMIT_AS, address space per process (MiB); 0 = unlimited"},
    [CFG_SANDBOX_NPROC] = {"sandbox.rlimit.nproc", CFG_INT, "512", NULL, 0, 1000000,
                           "processes in the sandbox (RLIMIT_NPROC, and pids.max of its cgroup "
                           "when one is available); 0 = unlimited"},
    [CFG_SANDBOX_FSIZE_MB] = {"sandbox.rlimit.fsize_mb", CFG_INT, "2048", NULL, 0, 1048576,
                              "RLIMIT_FSIZE, largest file a command may write (MiB); 0 = "
                              "unlimited"},
    [CFG_SANDBOX_NOFILE] = {"sandbox.rlimit.nofile", CFG_INT, "4096", NULL, 16, 1048576,
                            "RLIMIT_NOFILE, open files per process"},
    [CFG_SANDBOX_TMP_MB] = {"sandbox.tmp_mb", CFG_INT, "1024", NULL, 1, 1048576,
                            "size of the private /tmp (tmpfs, MiB)"},
    [CFG_SANDBOX_OUTPUT_KB] = {"sandbox.output_kb", CFG_INT, "256", NULL, 1, 65536,
                               "tail of stdout and of stderr kept in memory (KiB)"},
    [CFG_SANDBOX_OPT] = {"sandbox.opt", CFG_BOOL, "false", NULL, NOB,
                         "bind /opt read-only into the sandbox"},
    [CFG_SANDBOX_CGROUP] = {"sandbox.cgroup", CFG_BOOL, "true", NULL, NOB,
                            "put each command in its own pids cgroup when one can be made "
                            "(needed to cap processes when running as root)"},
    [CFG_SANDBOX_MEMORY_MB] = {"sandbox.memory_mb", CFG_INT, "0", NULL, 0, 16777216,
                               "memory of all of a command's processes together (MiB; its "
                               "cgroup's limit, when a memory cgroup can be made); 0 = half "
                               "of the machine's memory"},
    [CFG_SANDBOX_BINDS] = {"sandbox.binds", CFG_JSON, "[]", NULL, NOB,
                           "extra read-only binds: [\"/opt/go\", {\"src\": \"/home/u/.cargo\", "
                           "\"dest\": \"/cargo\"}]"},
    [CFG_SANDBOX_ENV] = {"sandbox.env", CFG_JSON, "[]", NULL, NOB,
                         "names of environment variables passed into the sandbox besides "
                         "PATH, HOME, LANG and TERM: [\"CC\", \"GOFLAGS\"]"},
    [CFG_SANDBOX_PATH] = {"sandbox.path", CFG_STRING,
                          "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL, NOB,
                          "PATH inside the sandbox (add the bin folders of sandbox.binds)"},
    [CFG_SANDBOX_UID] = {"sandbox.uid", CFG_INT, "65534", NULL, 1, 4294967294LL,
                         "when goald runs as root: the host user commands run as (never 0; "
                         "default nobody)"},
    [CFG_SANDBOX_GID] = {"sandbox.gid", CFG_INT, "65534", NULL, 1, 4294967294LL,
                         "when goald runs as root: the host group commands run as (never 0; "
                         "default nogroup)"},
    /* tools/: see docs/tools.md */
    [CFG_TOOLS_MAX_LINES] = {"tools.max_lines", CFG_INT, "2000", NULL, 1, 1000000,
                             "lines of tool output shown to the model"},
    [CFG_TOOLS_MAX_BYTES] = {"tools.max_bytes", CFG_INT, "51200", NULL, 256, 67108864,
                             "bytes of tool output shown to the model"},
    [CFG_TOOLS_GREP_LINE_MAX] = {"tools.grep_line_max", CFG_INT, "500", NULL, 20, 100000,
                                 "grep: matched lines longer than this are cut (characters)"},
    [CFG_TOOLS_BASH_TIMEOUT_S] = {"tools.bash_timeout_s", CFG_INT, "120", NULL, 1, 86400,
                                  "bash: default timeout_s"},
    [CFG_TOOLS_SPILL_DIR] = {"tools.spill_dir", CFG_STRING, NULL, NULL, NOB,
                             "where bash and the gates spill full output (default: spill/ "
                             "beside the database)"},
    [CFG_TOOLS_SPILL_MB] = {"tools.spill_mb", CFG_INT, "64", NULL, 1, 65536,
                            "the most output of one command spilled to a file (MiB)"},
    [CFG_TOOLS_SPILL_KEEP_H] = {"tools.spill_keep_h", CFG_INT, "72", NULL, 1, 87600,
                                "spilled bash output older than this is deleted (hours)"},
    [CFG_TOOLS_READ_MAX_MB] = {"tools.read_max_mb", CFG_INT, "64", NULL, 1, 4096,
                               "edit refuses files larger than this; read counts lines in this "
                               "much of a file (MiB)"},
    [CFG_TOOLS_MAX_FILE_MB] = {"tools.max_file_mb", CFG_INT, "64", NULL, 1, 4096,
                               "the largest file the write and edit tools make, and the largest "
                               "changed file goald snapshots or commits (MiB)"},
    [CFG_TOOLS_SPILL_TOTAL_MB] = {"tools.spill_total_mb", CFG_INT, "512", NULL, 1, 1048576,
                                  "the most the spill folder holds (MiB): the oldest spills go "
                                  "first"},
    [CFG_DAEMON_TICK_MS] = {"daemon.tick_ms", CFG_INT, "1000", NULL, 10, 60000,
                            "the daemon's tick (ms); submit and resolve wake it at once"},
    [CFG_DAEMON_PLAN_CAP] = {"daemon.plan_cap", CFG_INT, "1", NULL, 1, 64,
                             "plan-lane jobs (elaborate, plan) at once"},
    [CFG_DAEMON_WORK_CAP] = {"daemon.work_cap", CFG_INT, "3", NULL, 1, 256,
                             "work-lane jobs (execute and verify, publish) at once"},
    [CFG_DAEMON_GLOBAL_PLAN_CAP] = {"daemon.global_plan_cap", CFG_INT, "0", NULL, 0, 100000,
                                    "plan-lane jobs at once over every node sharing the queue "
                                    "(0: only each node's daemon.plan_cap)"},
    [CFG_DAEMON_GLOBAL_WORK_CAP] = {"daemon.global_work_cap", CFG_INT, "0", NULL, 0, 100000,
                                    "work-lane jobs at once over every node sharing the queue "
                                    "(0: only each node's daemon.work_cap)"},
    [CFG_DAEMON_KILL_GRACE_S] = {"daemon.kill_grace_s", CFG_INT, "5", NULL, 0, 3600,
                                 "seconds between SIGTERM and SIGKILL of a timed-out job"},
    [CFG_DAEMON_SHUTDOWN_GRACE_S] = {"daemon.shutdown_grace_s", CFG_INT, "30", NULL, 0, 86400,
                                     "on SIGTERM, how long running jobs may finish"},
    [CFG_DAEMON_STALE_S] = {"daemon.stale_s", CFG_INT, "10", NULL, 1, 86400,
                            "a heartbeat older than this: `status` says the daemon is not "
                            "running (it only reports; node.dead_after_s decides when another "
                            "node takes a node's runs over)"},
    [CFG_CRON_TIMEZONE] = {"cron.timezone", CFG_STRING, "UTC", NULL, NOB,
                           "time zone of schedules (IANA name, e.g. Europe/Paris)"},
    [CFG_MONITOR_SWEEP_INTERVAL_S] = {"monitor.sweep_interval_s", CFG_INT, "900", NULL, 1, 86400,
                                      "how often the heartbeat sweep runs (stale leases, "
                                      "budgets, retention)"},
    [CFG_MONITOR_RETENTION_DAYS] = {"monitor.retention_days", CFG_INT, "90", NULL, 0, 36500,
                                    "events and context packs older than this are deleted (0: "
                                    "keep)"},
    [CFG_HTTP_LISTEN] = {"http.listen", CFG_STRING, NULL, NULL, NOB,
                         "HOST:PORT of the HTTP API; when set, `goald daemon` serves it too "
                         "(`goald serve` alone: 127.0.0.1:7878)"},
    [CFG_HTTP_TLS_CERT] = {"http.tls_cert", CFG_STRING, NULL, NULL, NOB,
                           "PEM certificate (chain) of the HTTP API: with http.tls_key, it "
                           "speaks https"},
    [CFG_HTTP_TLS_KEY] = {"http.tls_key", CFG_STRING, NULL, NULL, NOB,
                          "PEM private key of the HTTP API"},
    [CFG_HTTP_INSECURE_LISTEN] = {"http.insecure_listen", CFG_BOOL, "false", NULL, NOB,
                                  "allow plain http on an address other than loopback "
                                  "(tokens cross the network in clear: do not)"},
    [CFG_HTTP_CORS_ORIGIN] = {"http.cors_origin", CFG_STRING, NULL, NULL, NOB,
                              "the one origin browsers may call the API from (CORS); unset: "
                              "none"},
    [CFG_HTTP_MAX_BODY_KB] = {"http.max_body_kb", CFG_INT, "1024", NULL, 1, 65536,
                              "the largest request body accepted (KiB); larger ones get 413"},
    [CFG_HTTP_RATE_LIMIT_PER_MIN] = {"http.rate_limit_per_min", CFG_INT, "600", NULL, 1, 1000000,
                                     "requests per token and minute; more get 429 with "
                                     "Retry-After"},
    [CFG_HTTP_MAX_CONNECTIONS] = {"http.max_connections", CFG_INT, "64", NULL, 1, 4096,
                                  "connections served at once (one thread each)"},
    [CFG_HTTP_REPOS] = {"http.repos", CFG_JSON, "[]", NULL, NOB,
                        "where a goal submitted over HTTP may name its repo: [\"/srv/repos\", "
                        "\"https://git.example.com/team/\"], folders (symbolic links followed) and "
                        "URL prefixes; empty: POST /v1/goals is refused (403)"},
    [CFG_HTTP_REMOTES] = {"http.remotes", CFG_JSON, "[]", NULL, NOB,
                          "where a goal submitted over HTTP may push (publish.remote as a URL "
                          "or a path): URL prefixes and folders, as http.repos; empty: none"},
    [CFG_HTTP_REQUEST_TIMEOUT_S] = {"http.request_timeout_s", CFG_INT, "10", NULL, 1, 3600,
                                    "a request (its headers and body) must arrive whole within "
                                    "this many seconds of the connection's start or of the "
                                    "previous answer, else the connection is closed"},
    [CFG_HTTP_UNAUTH_CONNECTIONS] = {"http.unauth_connections", CFG_INT, "32", NULL, 1, 4096,
                                     "connections that have not shown a valid token, at once "
                                     "(at most half of http.max_connections): past it the "
                                     "oldest one waiting for its request is closed"},
    [CFG_HTTP_UNAUTH_PER_IP] = {"http.unauth_per_ip", CFG_INT, "8", NULL, 1, 4096,
                                "connections from one client address that have not "
                                "shown a valid token, at once: past it the oldest one of "
                                "that address waiting for its request is closed"},
    [CFG_HTTP_STREAMS_PER_TOKEN] = {"http.streams_per_token", CFG_INT, "8", NULL, 1, 4096,
                                    "event streams (GET /v1/events) open at once with one "
                                    "token; more get 429"},
};

struct cfg_val {
    int set;
    int64_t i;
    double d;
    char *s;
    cJSON *j;
    const char *source;
};

static struct cfg_val vals[CFG__COUNT];
static int loaded;
static char *loaded_path;
/* config_set_json_check(): checks of JSON values owned by higher layers */
static int (*json_checks[CFG__COUNT])(const struct cJSON *v);

static void val_free(struct cfg_val *v)
{
    free(v->s);
    cJSON_Delete(v->j);
    memset(v, 0, sizeof(*v));
}

const char *config_env_name(enum cfg_key k, char *buf, size_t n)
{
    const char *name = config_defs[k].name;
    size_t o;

    if (config_defs[k].env) {
        /* truncation: ok, variable names are short constants */
        snprintf(buf, n, "%s", config_defs[k].env);
        return buf;
    }
    o = (size_t)snprintf(buf, n, "GOALD_");
    for (size_t i = 0; name[i] && o + 1 < n; i++)
        buf[o++] = name[i] == '.' ? '_' : (char)toupper((unsigned char)name[i]);
    buf[o < n ? o : n - 1] = '\0';
    return buf;
}

/* http.repos, http.remotes: an array of absolute folders and URL
 * prefixes, none holding a credential (the list is shown by the API). */
static int check_roots(const cJSON *j, const char *where)
{
    const cJSON *it;
    char shown[256];
    int i = 0;

    if (!cJSON_IsArray(j))
        return err_set(ERR_INVALID, "%s: expected an array of folders and URL prefixes", where);
    cJSON_ArrayForEach(it, j)
    {
        const char *s = cJSON_GetStringValue(it);
        if (!s || (s[0] != '/' && !strchr(s, ':')))
            return err_set(ERR_INVALID,
                           "%s[%d]: expected an absolute folder or a URL prefix (scheme://host/ "
                           "or user@host:)",
                           where, i);
        if (url_has_credential(s))
            return err_set(ERR_INVALID,
                           "%s[%d]: holds a credential (%s): give it to goald in the environment "
                           "variable vcs.push_token_env or forge.token_env names, not in the URL",
                           where, i, url_mask(shown, sizeof(shown), s));
        i++;
    }
    return 0;
}

/* Parse text into v according to the entry.  where names the source for
 * messages ("config.json: a.b" or "GOALD_A_B"). */
/* A JSON setting's text parsed into v->j and checked (the roots of
 * http.repos/remotes here, a higher layer's check when one is set). */
static int json_from_text(struct cfg_val *v, enum cfg_key k, const char *text, const char *where)
{
    v->j = cJSON_Parse(text);
    if (!v->j)
        return err_set(ERR_INVALID, "%s: expected JSON", where);
    if ((k == CFG_HTTP_REPOS || k == CFG_HTTP_REMOTES) && check_roots(v->j, where) != 0) {
        cJSON_Delete(v->j);
        v->j = NULL;
        return ERR_INVALID;
    }
    if (json_checks[k] && json_checks[k](v->j) != 0) {
        char why[512];
        snprintf(why, sizeof(why), "%s", err_last()); /* truncation: ok, a message */
        cJSON_Delete(v->j);
        v->j = NULL;
        return err_set(ERR_INVALID, "%s: %s", where, why);
    }
    return 0;
}

static int val_from_text(struct cfg_val *v, enum cfg_key k, const char *text, const char *where)
{
    const struct cfg_def *d = &config_defs[k];
    char *end;

    switch (d->type) {
    case CFG_INT: {
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (errno || end == text || *end)
            return err_set(ERR_INVALID, "%s: expected an integer, got \"%s\"", where, text);
        if (d->min <= d->max && (x < d->min || x > d->max))
            return err_set(ERR_INVALID, "%s: expected an integer from %.0f to %.0f, got %lld",
                           where, d->min, d->max, x);
        v->i = x;
        v->d = (double)x;
        break;
    }
    case CFG_DOUBLE: {
        errno = 0;
        double x = strtod(text, &end);
        if (errno || end == text || *end || !isfinite(x))
            return err_set(ERR_INVALID, "%s: expected a number, got \"%s\"", where, text);
        if (d->min <= d->max && (x < d->min || x > d->max))
            return err_set(ERR_INVALID, "%s: expected a number from %g to %g, got %g", where,
                           d->min, d->max, x);
        v->d = x;
        v->i = (int64_t)x;
        break;
    }
    case CFG_BOOL:
        if (!strcmp(text, "1") || !strcmp(text, "true") || !strcmp(text, "yes"))
            v->i = 1;
        else if (!strcmp(text, "0") || !strcmp(text, "false") || !strcmp(text, "no"))
            v->i = 0;
        else
            return err_set(ERR_INVALID, "%s: expected true or false, got \"%s\"", where, text);
        break;
    case CFG_STRING:
        if (k == CFG_LOG_LEVEL) {
            enum log_level l;
            if (log_level_parse(text, &l) != 0)
                return err_set(ERR_INVALID, "%s: expected error, warn, info or debug, got \"%s\"",
                               where, text);
        }
        if (k == CFG_CRON_TIMEZONE && cron_zone_check(text) != 0) {
            char why[256];
            snprintf(why, sizeof(why), "%s", err_last()); /* truncation: ok, a message */
            return err_set(ERR_INVALID, "%s: %s", where, why);
        }
        break;
    case CFG_JSON:
        if (json_from_text(v, k, text, where) != 0)
            return ERR_INVALID;
        break;
    }
    v->s = xstrdup(text);
    v->set = 1;
    return 0;
}

static int val_from_json(struct cfg_val *v, enum cfg_key k, const cJSON *j, const char *where)
{
    const struct cfg_def *d = &config_defs[k];
    char num[64];

    switch (d->type) {
    case CFG_INT:
        if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble))
            return err_set(ERR_INVALID, "%s: expected an integer", where);
        /* cut, the digits would be another number */
        if ((size_t)snprintf(num, sizeof(num), "%.0f", j->valuedouble) >= sizeof(num))
            return err_set(ERR_INVALID, "%s: out of range", where);
        return val_from_text(v, k, num, where);
    case CFG_DOUBLE:
        if (!cJSON_IsNumber(j))
            return err_set(ERR_INVALID, "%s: expected a number", where);
        snprintf(num, sizeof(num), "%.17g", j->valuedouble); /* truncation: ok, %.17g fits 64 */
        return val_from_text(v, k, num, where);
    case CFG_BOOL:
        if (!cJSON_IsBool(j))
            return err_set(ERR_INVALID, "%s: expected true or false", where);
        return val_from_text(v, k, cJSON_IsTrue(j) ? "true" : "false", where);
    case CFG_STRING:
        if (!cJSON_IsString(j))
            return err_set(ERR_INVALID, "%s: expected a string", where);
        return val_from_text(v, k, j->valuestring, where);
    case CFG_JSON: {
        char *t = cJSON_PrintUnformatted(j);
        int rc;
        xcheck(t); /* j is a value: NULL means out of memory */
        rc = val_from_text(v, k, t, where);
        cJSON_free(t);
        return rc;
    }
    }
    return ERR_INVALID;
}

static int find_key(const char *name)
{
    for (int k = 0; k < CFG__COUNT; k++)
        if (strcmp(config_defs[k].name, name) == 0)
            return k;
    return -1;
}

static int is_prefix_of_some(const char *path)
{
    size_t n = strlen(path);

    for (int k = 0; k < CFG__COUNT; k++)
        if (strncmp(config_defs[k].name, path, n) == 0 && config_defs[k].name[n] == '.')
            return 1;
    return 0;
}

static int walk(struct cfg_val *nv, const cJSON *obj, const char *prefix, const char *file)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj)
    {
        char path[256];
        char where[512];
        int k;

        /* truncation: ok, a field named in a message */
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", it->string);
        /* truncation: ok, a place named in a message */
        snprintf(where, sizeof(where), "%s: %s", file, path);
        k = find_key(path);
        if (k >= 0) {
            int rc;
            val_free(&nv[k]);
            rc = val_from_json(&nv[k], (enum cfg_key)k, it, where);
            if (rc)
                return rc;
            nv[k].source = "file";
        } else if (cJSON_IsObject(it) && is_prefix_of_some(path)) {
            int rc = walk(nv, it, path, file);
            if (rc)
                return rc;
        } else {
            return err_set(ERR_INVALID, "%s: unknown setting", where);
        }
    }
    return 0;
}

/* The user's config file into *out (buf, n bytes): NULL when there is
 * none.  0, or ERR_INVALID when its path does not fit. */
static int default_path(const char **out, char *buf, size_t n)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int rc = 0;

    *out = NULL;
    if (xdg && *xdg)
        rc = path_fmt(buf, n, "%s/goald/config.json", xdg);
    else if (home && *home)
        rc = path_fmt(buf, n, "%s/.config/goald/config.json", home);
    else
        return 0;
    if (rc == 0 && fs_exists(buf))
        *out = buf;
    return rc;
}

static unsigned generation; /* counts the configurations loaded (config_generation()) */
static const struct cfg_val *get(enum cfg_key k);

void config_set_json_check(enum cfg_key k, int (*fn)(const struct cJSON *v))
{
    if (k >= 0 && k < CFG__COUNT)
        json_checks[k] = fn;
}

int config_load(const char *path)
{
    struct cfg_val nv[CFG__COUNT];
    char dbuf[4096];
    strbuf text = STRBUF_INIT;
    cJSON *root = NULL;
    int rc = 0;

    memset(nv, 0, sizeof(nv));
    for (int k = 0; k < CFG__COUNT; k++) {
        if (config_defs[k].dflt) {
            rc = val_from_text(&nv[k], (enum cfg_key)k, config_defs[k].dflt, config_defs[k].name);
            if (rc)
                abort(); /* a broken default is a bug */
        }
        nv[k].source = "default";
    }
    if (!path && (rc = default_path(&path, dbuf, sizeof(dbuf))) != 0)
        goto out;
    if (path) {
        const char *endp = NULL;
        strbuf_init(&text, 4 << 20);
        rc = fs_read_file(&text, path, 4 << 20);
        if (rc)
            goto out;
        root = cJSON_ParseWithOpts(strbuf_cstr(&text), &endp, 1);
        if (!root) {
            rc = err_set(ERR_INVALID, "%s: not valid JSON near byte %ld", path,
                         endp ? (long)(endp - strbuf_cstr(&text)) : 0L);
            goto out;
        }
        if (!cJSON_IsObject(root)) {
            rc = err_set(ERR_INVALID, "%s: expected a JSON object", path);
            goto out;
        }
        rc = walk(nv, root, "", path);
        if (rc)
            goto out;
    }
    for (int k = 0; k < CFG__COUNT; k++) {
        char env[128];
        const char *e = getenv(config_env_name((enum cfg_key)k, env, sizeof(env)));
        if (!e || !*e)
            continue;
        val_free(&nv[k]);
        rc = val_from_text(&nv[k], (enum cfg_key)k, e, env);
        if (rc)
            goto out;
        nv[k].source = "env";
    }
    for (int k = 0; k < CFG__COUNT; k++)
        val_free(&vals[k]);
    memcpy(vals, nv, sizeof(vals));
    memset(nv, 0, sizeof(nv));
    free(loaded_path);
    loaded_path = xstrdup(path); /* NULL stays NULL */
    loaded = 1;
    generation++;
out:
    for (int k = 0; k < CFG__COUNT; k++)
        val_free(&nv[k]);
    cJSON_Delete(root);
    strbuf_release(&text);
    return rc;
}

unsigned config_generation(void)
{
    (void)get((enum cfg_key)0); /* loaded, so that the number stands for this configuration */
    return generation;
}

void config_reset(void)
{
    generation++;
    for (int k = 0; k < CFG__COUNT; k++)
        val_free(&vals[k]);
    free(loaded_path);
    loaded_path = NULL;
    loaded = 0;
}

static const struct cfg_val *get(enum cfg_key k)
{
    if (!loaded) {
        /* defaults and environment only; a broken environment value was
         * reported by config_load() at start-up, so fall back quietly */
        if (config_load(NULL) != 0) {
            for (int i = 0; i < CFG__COUNT; i++) {
                val_free(&vals[i]);
                if (config_defs[i].dflt)
                    val_from_text(&vals[i], (enum cfg_key)i, config_defs[i].dflt, "default");
                vals[i].source = "default";
            }
            loaded = 1;
        }
    }
    return &vals[k];
}

int64_t config_int(enum cfg_key k)
{
    return get(k)->i;
}

double config_double(enum cfg_key k)
{
    return get(k)->d;
}

const char *config_str(enum cfg_key k)
{
    const struct cfg_val *v = get(k);
    return v->set ? v->s : NULL;
}

int config_bool(enum cfg_key k)
{
    return get(k)->i != 0;
}

const cJSON *config_json(enum cfg_key k)
{
    return get(k)->j;
}

const char *config_source(enum cfg_key k)
{
    return get(k)->source ? get(k)->source : "default";
}

const char *config_path(void)
{
    return loaded_path;
}
