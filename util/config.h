/*
 * config.h - the configuration table.
 *
 * Every setting is one row of config_defs[] (name, type, default, bounds,
 * environment override, help), after Redis's static_configs[]: the docs,
 * `goald config show` and validation all come from the table, so they
 * cannot drift.  Precedence: environment > config file > default.
 *
 * The config file is JSON; a setting "a.b" may be written {"a":{"b":v}} or
 * {"a.b":v}.  Unknown keys are an error naming the key.  Settings of type
 * CFG_JSON hold structured values (the model chain, extra sandbox binds)
 * that their owning module validates.
 *
 * The loaded configuration is process-wide; config_load() replaces it
 * (SIGHUP) and config_reset() returns it to the defaults.  Strings and
 * cJSON values returned are owned by the configuration and valid until the
 * next config_load()/config_reset().
 */
#ifndef GOALD_UTIL_CONFIG_H
#define GOALD_UTIL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

enum cfg_type { CFG_INT, CFG_DOUBLE, CFG_STRING, CFG_BOOL, CFG_JSON };

enum cfg_key {
    CFG_LOG_LEVEL,
    CFG_STORE_BUSY_TIMEOUT_MS,
    CFG_STORE_URL,
    CFG_NODE_ID,
    CFG_NODE_STATE_DIR,
    CFG_NODE_DEAD_AFTER_S,
    CFG_INTAKE_MAX_TITLE,
    CFG_PLAN_MAX_ITEMS,
    CFG_CONTROL_MAX_TURNS,
    CFG_CONTROL_MAX_WALL_TIME_S,
    CFG_CONTROL_MAX_TOKENS,
    CFG_CONTROL_MAX_RETRIES,
    CFG_CONTROL_BACKOFF_BASE_MS,
    CFG_CONTROL_BACKOFF_MAX_MS,
    CFG_CONTROL_NO_PROGRESS_K,
    CFG_BREAKER_THRESHOLD,
    CFG_BREAKER_COOLDOWN_S,
    CFG_GOAL_MAX_PARALLEL_ITEMS,
    CFG_GATES_WARM_MAX_MB,
    CFG_SELECT_FRESHNESS_FULL_S,
    CFG_LANE_PLAN_TIMEOUT_S,
    CFG_LANE_WORK_TIMEOUT_S,
    CFG_LANE_REVIEW_TIMEOUT_S,
    /* llm/ (docs/llm.md) */
    CFG_LLM_MODELS,
    CFG_LLM_PROVIDER,
    CFG_LLM_BASE_URL,
    CFG_LLM_MODEL,
    CFG_LLM_FALLBACK_MODEL,
    CFG_LLM_SCRIPT,
    CFG_LLM_CONNECT_TIMEOUT_MS,
    CFG_LLM_TIMEOUT_MS,
    CFG_LLM_MAX_RESPONSE_BYTES,
    CFG_LLM_MAX_OUTPUT_TOKENS,
    CFG_LLM_ANTHROPIC_VERSION,
    CFG_LLM_CONTEXT_WINDOW,
    CFG_LLM_PRICE_IN,
    CFG_LLM_PRICE_CACHED_IN,
    CFG_LLM_PRICE_OUT,
    CFG_LLM_COMPACT_AT_PCT,
    CFG_LLM_COMPACT_KEEP_TURNS,
    CFG_LLM_RETRY_RATE_LIMIT,
    CFG_LLM_RETRY_MAX,
    CFG_LLM_RETRY_INVALID,
    CFG_LLM_RETRY_BACKOFF_MS,
    CFG_LLM_RETRY_BACKOFF_MAX_MS,
    CFG_LLM_RETRY_AFTER_MAX_MS,
    /* publishing (vcs/) */
    CFG_VCS_AUTHOR_NAME,
    CFG_VCS_AUTHOR_EMAIL,
    CFG_VCS_WORKTREE_ROOT,
    CFG_VCS_PUSH_TOKEN_ENV,
    CFG_VCS_PUSH_USERNAME,
    CFG_FORGE_BASE_URL,
    CFG_FORGE_OWNER,
    CFG_FORGE_REPO,
    CFG_FORGE_TOKEN_ENV,
    CFG_FORGE_AUTH_SCHEME,
    CFG_FORGE_TIMEOUT_S,
    CFG_FORGE_MAX_ATTEMPTS,
    CFG_FORGE_RETRY_MAX_WAIT_S,
    CFG_FORGE_MAX_PAGES,
    CFG_FORGE_TRIGGERS,
    CFG_FORGE_POLL_INTERVAL_S,
    CFG_FORGE_WEBHOOK_MAX_KB,
    CFG_HTTP_PUBLIC_URL,
    CFG_NOTIFY_WEBHOOK_URL,
    CFG_NOTIFY_WEBHOOK_TIMEOUT_S,
    /* sandbox/ */
    CFG_SANDBOX_MODE,
    CFG_SANDBOX_BWRAP,
    CFG_SANDBOX_TIMEOUT_S,
    CFG_SANDBOX_KILL_GRACE_MS,
    CFG_SANDBOX_CPU_S,
    CFG_SANDBOX_AS_MB,
    CFG_SANDBOX_NPROC,
    CFG_SANDBOX_FSIZE_MB,
    CFG_SANDBOX_NOFILE,
    CFG_SANDBOX_TMP_MB,
    CFG_SANDBOX_OUTPUT_KB,
    CFG_SANDBOX_OPT,
    CFG_SANDBOX_CGROUP,
    CFG_SANDBOX_MEMORY_MB,
    CFG_SANDBOX_BINDS,
    CFG_SANDBOX_ENV,
    CFG_SANDBOX_PATH,
    CFG_SANDBOX_UID,
    CFG_SANDBOX_GID,
    /* tools/ */
    CFG_TOOLS_MAX_LINES,
    CFG_TOOLS_MAX_BYTES,
    CFG_TOOLS_GREP_LINE_MAX,
    CFG_TOOLS_BASH_TIMEOUT_S,
    CFG_TOOLS_SPILL_DIR,
    CFG_TOOLS_SPILL_MB,
    CFG_TOOLS_SPILL_KEEP_H,
    CFG_TOOLS_READ_MAX_MB,
    CFG_TOOLS_MAX_FILE_MB,
    CFG_TOOLS_SPILL_TOTAL_MB,
    /* daemon/ and the monitor (docs/operations.md) */
    CFG_DAEMON_TICK_MS,
    CFG_DAEMON_PLAN_CAP,
    CFG_DAEMON_WORK_CAP,
    CFG_DAEMON_GLOBAL_PLAN_CAP,
    CFG_DAEMON_GLOBAL_WORK_CAP,
    CFG_DAEMON_KILL_GRACE_S,
    CFG_DAEMON_SHUTDOWN_GRACE_S,
    CFG_DAEMON_STALE_S,
    CFG_CRON_TIMEZONE,
    CFG_MONITOR_SWEEP_INTERVAL_S,
    CFG_MONITOR_RETENTION_DAYS,
    /* http/ (docs/http.md) */
    CFG_HTTP_LISTEN,
    CFG_HTTP_TLS_CERT,
    CFG_HTTP_TLS_KEY,
    CFG_HTTP_INSECURE_LISTEN,
    CFG_HTTP_CORS_ORIGIN,
    CFG_HTTP_MAX_BODY_KB,
    CFG_HTTP_RATE_LIMIT_PER_MIN,
    CFG_HTTP_MAX_CONNECTIONS,
    CFG_HTTP_REPOS,
    CFG_HTTP_REMOTES,
    CFG_HTTP_REQUEST_TIMEOUT_S,
    CFG_HTTP_UNAUTH_CONNECTIONS,
    CFG_HTTP_UNAUTH_PER_IP,
    CFG_HTTP_STREAMS_PER_TOKEN,
    CFG__COUNT
};

struct cfg_def {
    const char *name;  /* dotted, e.g. "control.max_turns" */
    enum cfg_type type;
    const char *dflt;  /* as text; NULL means unset */
    const char *env;   /* NULL: derived, GOALD_ + upper(name), '.' -> '_' */
    double min, max;   /* bounds for numbers (ignored when min > max) */
    const char *help;
};

extern const struct cfg_def config_defs[CFG__COUNT];

/* A check of a JSON setting's value that a higher layer owns (the forge
 * triggers are the lifecycle's): config_load() refuses a value fn
 * refuses (0, or an error whose message it prefixes with the key's
 * place).  Registered once at start-up, before config_load(). */
void config_set_json_check(enum cfg_key k, int (*fn)(const struct cJSON *v));

/* Load the file (path may be NULL: $XDG_CONFIG_HOME/goald/config.json or
 * ~/.config/goald/config.json when it exists) and the environment.  On
 * error nothing changes; the message names the file and the key. */
int config_load(const char *path);
void config_reset(void);
/* Changes with every config_load() and config_reset(): a cache of values
 * computed from the configuration is current while this stays the same. */
unsigned config_generation(void);

int64_t config_int(enum cfg_key k);
double config_double(enum cfg_key k);
const char *config_str(enum cfg_key k); /* NULL when unset */
int config_bool(enum cfg_key k);
const struct cJSON *config_json(enum cfg_key k); /* NULL when unset */
const char *config_source(enum cfg_key k);       /* "default", "file" or "env" */
const char *config_path(void);                   /* the file loaded, or NULL */

/* The environment variable of an entry into buf. */
const char *config_env_name(enum cfg_key k, char *buf, size_t n);

#endif
