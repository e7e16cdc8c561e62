/*
 * auth.c - bearer tokens: their creation and revocation (only the SHA-256
 * is stored), the check of each request (Authorization header only, never
 * the query string; no cookies), scopes, and a per-token rate limit.
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/internal.h"
#include "store/event.h"
#include "util/config.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static const struct {
    const char *name;
    int bit;
} scopes[] = {
    {"read", SCOPE_READ},
    {"submit", SCOPE_SUBMIT},
    {"resolve", SCOPE_RESOLVE},
    {"admin", SCOPE_ADMIN},
};

int http_scopes_parse(const char *list)
{
    int bits = 0;
    const char *p = list;

    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++)
            if (strlen(scopes[i].name) == n && !strncmp(p, scopes[i].name, n)) {
                bits |= scopes[i].bit;
                found = 1;
            }
        if (!found) {
            err_set(ERR_INVALID, "--scope: expected read, submit, resolve or admin, got \"%.*s\"",
                    (int)n, p);
            return -1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!bits) {
        err_set(ERR_INVALID, "--scope: expected a comma list of read, submit, resolve, admin");
        return -1;
    }
    return bits;
}

const char *http_scope_name(int scope)
{
    for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++)
        if (scopes[i].bit == scope)
            return scopes[i].name;
    return "?";
}

int http_scope_has(const struct http_req *r, int need)
{
    return (r->scopes & SCOPE_ADMIN) || (r->scopes & need) == need;
}

/* The scopes bits back into their canonical comma list. */
static void scopes_text(char *out, size_t n, int bits)
{
    size_t k = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++)
        if (bits & scopes[i].bit) {
            int w = snprintf(out + k, n - k, "%s%s", k ? "," : "", scopes[i].name);
            if (w < 0 || (size_t)w >= n - k)
                break;
            k += (size_t)w;
        }
}

static void token_event(store *st, const char *type, const char *id, const char *name)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "token_id", id);
    cJSON_AddStringToObject(p, "token_name", name);
    if (store_event_add(st, NULL, NULL, NULL, type, p, NULL) != 0)
        log_msg(LOG_WARN, "%s: %s", type, err_last());
    cJSON_Delete(p);
}

int http_token_create(store *st, const char *scope_list, const char *name,
                      char secret[HTTP_TOKEN_SIZE], char id[ID_SIZE])
{
    unsigned char raw[32];
    char hash[HASH_HEX_SIZE], canon[128];
    int bits = http_scopes_parse(scope_list), rc;

    if (bits < 0)
        return ERR_INVALID;
    if ((rc = id_random(raw, sizeof(raw))) != 0 || (rc = id_new(id)) != 0)
        return rc;
    memcpy(secret, "gld_", 4);
    for (size_t i = 0; i < sizeof(raw); i++)
        /* truncation: ok, two hex digits and a NUL fit 3 bytes */
        snprintf(secret + 4 + 2 * i, 3, "%02x", raw[i]);
    hash_sha256_hex(hash, secret, strlen(secret));
    scopes_text(canon, sizeof(canon), bits);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_token_insert(st, id, name ? name : "", hash, canon, time_now_ms())) != 0) {
        store_tx_rollback(st);
        return rc;
    }
    token_event(st, "token.created", id, name ? name : "");
    return store_tx_commit(st);
}

struct prefix_ctx {
    const char *prefix;
    char id[ID_SIZE], name[128];
    int n;
};

static int prefix_match(const struct store_token *t, void *ctx)
{
    struct prefix_ctx *pc = ctx;

    if (strncmp(t->id, pc->prefix, strlen(pc->prefix)) == 0) {
        snprintf(pc->id, sizeof(pc->id), "%s", t->id); /* truncation: ok, an id, ID_SIZE both */
        /* truncation: ok, a token's name, same size both */
        snprintf(pc->name, sizeof(pc->name), "%s", t->name);
        pc->n++;
    }
    return 0;
}

int http_token_revoke(store *st, const char *prefix, char id[ID_SIZE])
{
    struct prefix_ctx pc = {.prefix = prefix};
    int rc;

    if (!id_prefix_valid(prefix))
        return err_set(ERR_INVALID, "token id: expected an id or its prefix, got \"%s\"", prefix);
    if ((rc = store_token_each(st, prefix_match, &pc)) != 0)
        return rc;
    if (pc.n == 0)
        return err_set(ERR_NOTFOUND, "no token %s", prefix);
    if (pc.n > 1)
        return err_set(ERR_AMBIGUOUS, "token id %s is ambiguous: give more characters", prefix);
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_token_revoke(st, pc.id, time_now_ms())) != 0) {
        store_tx_rollback(st);
        return rc;
    }
    token_event(st, "token.revoked", pc.id, pc.name);
    snprintf(id, ID_SIZE, "%s", pc.id); /* truncation: ok, an id, ID_SIZE both */
    return store_tx_commit(st);
}

/* ---- each request ---- */

static enum MHD_Result find_query_token(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value)
{
    static const char *const names[] = {"token", "access_token", "api_key", "apikey", "key",
                                        "auth", "bearer"};

    (void)kind;
    (void)value;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcasecmp(key, names[i])) {
            *(int *)cls = 1;
            return MHD_NO;
        }
    return MHD_YES;
}

/* The per-token rate limit: a fixed window of a minute per token, in a
 * small table (the oldest window is reused when it is full).  *retry
 * receives the seconds to the next window when over. */
#define RATE_SLOTS 256
static struct {
    char id[ID_SIZE];
    int64_t window; /* minute number */
    int64_t count;
} rate[RATE_SLOTS];
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;

static int rate_over(const char *id, int *retry)
{
    int64_t now = time_now_ms(), minute = now / 60000, limit = config_int(CFG_HTTP_RATE_LIMIT_PER_MIN);
    int slot = -1, oldest = 0, over;

    pthread_mutex_lock(&rate_lock);
    for (int i = 0; i < RATE_SLOTS && slot < 0; i++)
        if (!strcmp(rate[i].id, id))
            slot = i;
        else if (rate[i].window < rate[oldest].window)
            oldest = i;
    if (slot < 0) {
        slot = oldest;
        /* truncation: ok, an id, ID_SIZE both */
        snprintf(rate[slot].id, sizeof(rate[slot].id), "%s", id);
        rate[slot].window = minute;
        rate[slot].count = 0;
    }
    if (rate[slot].window != minute) {
        rate[slot].window = minute;
        rate[slot].count = 0;
    }
    over = ++rate[slot].count > limit;
    pthread_mutex_unlock(&rate_lock);
    *retry = (int)((minute + 1) * 60000 - now + 999) / 1000;
    return over;
}

/* The token of "Authorization: Bearer TOKEN" into r: 0, or the answer. */
static int bearer(struct http_req *r, struct http_answer *ans)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    int rc;

    if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7]) {
        ans->www_authenticate = 1;
        return !http_answer_error(ans, 401, "unauthorized", NULL,
                                  "a token is required: Authorization: Bearer TOKEN (goald "
                                  "token create)");
    }
    h += 7;
    hash_sha256_hex(r->tok_hash, h, strlen(h));
    rc = store_token_get_by_hash(r->st, r->tok_hash, &r->tok);
    if (rc == 0 && r->tok.revoked_at == 0) {
        r->scopes = http_scopes_parse(r->tok.scopes);
        return r->scopes < 0 ? (r->scopes = 0) : 0;
    }
    if (rc != 0 && rc != ERR_NOTFOUND)
        return !http_answer_err(ans, rc);
    ans->www_authenticate = 1;
    return !http_answer_error(ans, 401, "unauthorized", NULL,
                              rc ? "unknown token" : "this token is revoked");
}

int http_auth_check(struct http_req *r, struct http_answer *ans)
{
    int in_query = 0, retry = 0;

    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, find_query_token, &in_query);
    if (in_query)
        return !http_answer_error(ans, 400, "bad_request", NULL,
                                  "a token in the query string is refused (it ends up in "
                                  "logs and histories): use the Authorization header");
    if (bearer(r, ans))
        return 1;
    if (rate_over(r->tok.id, &retry)) {
        ans->retry_after = retry > 0 ? retry : 1;
        return !http_answer_error(ans, 429, "rate_limited", NULL,
                                  "more than %lld requests a minute with this token "
                                  "(http.rate_limit_per_min): retry in %d s",
                                  (long long)config_int(CFG_HTTP_RATE_LIMIT_PER_MIN), retry);
    }
    return 0;
}

void http_event_write(struct http_req *r, const char *goal_id, const char *what)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "token_id", r->tok.id);
    cJSON_AddStringToObject(p, "token_name", r->tok.name);
    cJSON_AddStringToObject(p, "method", r->method);
    cJSON_AddStringToObject(p, "path", r->url);
    cJSON_AddStringToObject(p, "action", what);
    if (store_event_add(r->st, goal_id, NULL, NULL, "http.write", p, NULL) != 0)
        log_msg(LOG_WARN, "http.write event: %s", err_last());
    cJSON_Delete(p);
}
