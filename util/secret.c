#include "util/secret.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/xalloc.h"

extern char **environ;

#define MAX_SECRETS 64
#define BLOB_MAX 60000 /* below a pipe's 64 KiB: the write never blocks */

static struct {
    char *name, *value;
} store[MAX_SECRETS];
static int nstore;

/* Overwrite then free: the bytes do not linger in freed heap memory. */
static void wipe_free(char *s)
{
    if (!s)
        return;
    explicit_bzero(s, strlen(s));
    free(s);
}

static int valid_name(const char *name)
{
    return name && *name && !strchr(name, '=') && strlen(name) < 256;
}

/* Store name=value (copies both), replacing an earlier value. */
static int put(const char *name, const char *value)
{
    int i;

    for (i = 0; i < nstore; i++)
        if (!strcmp(store[i].name, name))
            break;
    if (i == nstore) {
        if (nstore == MAX_SECRETS)
            return err_set(ERR_TOOBIG, "secrets: more than %d credential variables",
                           MAX_SECRETS);
        store[i].name = xstrdup(name);
        store[i].value = NULL;
        nstore++;
    }
    wipe_free(store[i].value);
    store[i].value = xstrdup(value);
    return 0;
}

int secret_take(const char *name)
{
    size_t nl;
    int taken = 0, rc = 0;

    if (!valid_name(name))
        return err_set(ERR_INVALID, "secrets: \"%s\": not a variable name", name ? name : "");
    nl = strlen(name);
    /* every entry of that name (a block may repeat one): copy the first,
     * wipe all in place - the original block is what /proc/PID/environ shows */
    for (char **e = environ; e && *e; e++) {
        char *v;
        if (strncmp(*e, name, nl) || (*e)[nl] != '=')
            continue;
        v = *e + nl + 1;
        if (!taken && *v) {
            if ((rc = put(name, v)) != 0)
                break;
            taken = 1;
        }
        explicit_bzero(v, strlen(v));
    }
    unsetenv(name);
    return rc;
}

void secret_take_all(void)
{
    static const char *const fixed[] = {"GOALD_LLM_API_KEY", "OPENAI_API_KEY",
                                        "ANTHROPIC_API_KEY", "GOALD_FORGE_TOKEN", NULL};
    static const enum cfg_key named[] = {CFG_FORGE_TOKEN_ENV, CFG_VCS_PUSH_TOKEN_ENV};
    const cJSON *models = config_json(CFG_LLM_MODELS);
    const cJSON *it;

    for (int i = 0; fixed[i]; i++)
        secret_take(fixed[i]);
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        const char *n = config_str(named[i]);
        if (valid_name(n))
            secret_take(n);
    }
    if (cJSON_IsArray(models)) {
        cJSON_ArrayForEach(it, models)
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "api_key_env");
            if (cJSON_IsString(k) && valid_name(k->valuestring))
                secret_take(k->valuestring);
        }
    }
    err_clear();
}

const char *secret_get(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < nstore; i++)
        if (!strcmp(store[i].name, name))
            return store[i].value;
    return getenv(name);
}

int secret_is_taken(const char *name)
{
    for (int i = 0; name && i < nstore; i++)
        if (!strcmp(store[i].name, name))
            return 1;
    return 0;
}

int secret_receive(void)
{
    const char *e = getenv(SECRET_FD_VAR);
    char *buf = NULL, *end;
    size_t len = 0;
    struct stat st;
    long fd;
    int rc = 0;

    if (!e || !*e)
        return 0;
    errno = 0;
    fd = strtol(e, &end, 10);
    unsetenv(SECRET_FD_VAR);
    if (errno || *end || fd < 3 || fd > 1 << 20)
        return err_set(ERR_INVALID, "%s: expected a descriptor number", SECRET_FD_VAR);
    if (fstat((int)fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return err_set(ERR_INVALID, "%s: descriptor %ld is not a pipe", SECRET_FD_VAR, fd);
    buf = xmalloc(BLOB_MAX + 1);
    for (;;) {
        ssize_t n = read((int)fd, buf + len, BLOB_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(ERR_IO, "%s: %s", SECRET_FD_VAR, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == BLOB_MAX) {
            rc = err_set(ERR_TOOBIG, "%s: more than %d bytes", SECRET_FD_VAR, BLOB_MAX);
            goto out;
        }
    }
    buf[len] = '\0';
    for (char *p = buf; p < buf + len; p += strlen(p) + 1) {
        char *eq = strchr(p, '=');
        if (!eq || eq == p)
            continue;
        *eq = '\0';
        if (valid_name(p) && eq[1] && (rc = put(p, eq + 1)) != 0)
            goto out;
    }
out:
    close((int)fd);
    explicit_bzero(buf, BLOB_MAX + 1);
    free(buf);
    return rc;
}

int secret_child_env(char ***envp, int *fd)
{
    char *blob = NULL, **env = NULL;
    size_t len = 0, n = 0;
    int p[2] = {-1, -1};
    int rc = 0;

    *envp = NULL;
    *fd = -1;
    if (nstore == 0)
        return 0;
    for (int i = 0; i < nstore; i++)
        len += strlen(store[i].name) + strlen(store[i].value) + 2;
    if (len > BLOB_MAX)
        return err_set(ERR_TOOBIG, "secrets: the credentials take more than %d bytes",
                       BLOB_MAX);
    blob = xmalloc(len + 1);
    len = 0;
    for (int i = 0; i < nstore; i++) {
        size_t nl = strlen(store[i].name), vl = strlen(store[i].value);
        memcpy(blob + len, store[i].name, nl);
        blob[len + nl] = '=';
        memcpy(blob + len + nl + 1, store[i].value, vl + 1);
        len += nl + vl + 2;
    }
    if (pipe2(p, O_CLOEXEC) != 0) {
        rc = err_set(ERR_IO, "secrets: pipe: %s", strerror(errno));
        goto out;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(p[1], blob + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = err_set(ERR_IO, "secrets: pipe: %s", strerror(errno));
            goto out;
        }
        off += (size_t)w;
    }
    for (char **e = environ; e && *e; e++)
        n++;
    env = xcalloc(n + 2, sizeof(*env));
    /* [0] is ours (freed by secret_child_env_free); the rest borrow environ */
    {
        char var[64];
        /* truncation: ok, a name and an fd number fit */
        snprintf(var, sizeof(var), "%s=%d", SECRET_FD_VAR, p[0]);
        env[0] = xstrdup(var);
    }
    n = 1;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, SECRET_FD_VAR "=", sizeof(SECRET_FD_VAR)))
            env[n++] = *e;
    env[n] = NULL;
    *envp = env;
    *fd = p[0];
    p[0] = -1;
out:
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    explicit_bzero(blob, len);
    free(blob);
    return rc;
}

void secret_child_env_free(char **envp)
{
    if (!envp)
        return;
    free(envp[0]);
    free(envp);
}

void secret_clear(void)
{
    for (int i = 0; i < nstore; i++) {
        free(store[i].name);
        wipe_free(store[i].value);
    }
    memset(store, 0, sizeof(store));
    nstore = 0;
}
