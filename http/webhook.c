/*
 * webhook.c - a forge's webhook, its signature checked (see webhook.h).
 */
#include "http/webhook.h"

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lifecycle/forge_goals.h"
#include "util/config.h"
#include "util/err.h"
#include "util/log.h"
#include "util/secret.h"

int http_webhook_is(const char *url)
{
    return !strcmp(url, HTTP_WEBHOOK_PATH);
}

static const char *header(struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* The signature's hex digits (the "sha256=" of GitHub's dropped) and the
 * event's name, from whichever forge's headers came. */
static void signature_of(struct http_req *r, const char **sig, const char **event)
{
    const char *gh = header(r, "X-Hub-Signature-256");

    *sig = NULL;
    *event = NULL;
    if (gh) {
        *sig = strncasecmp(gh, "sha256=", 7) == 0 ? gh + 7 : NULL;
        *event = header(r, "X-GitHub-Event");
        return;
    }
    *sig = header(r, "X-Gitea-Signature");
    *event = header(r, "X-Gitea-Event");
    if (!*sig) {
        *sig = header(r, "X-Forgejo-Signature");
        *event = header(r, "X-Forgejo-Event");
    }
}

/* Does hex (64 digits) equal HMAC-SHA256(secret, body)?  Compared in
 * constant time. */
static int signature_ok(const char *hex, const char *secret, const strbuf *body)
{
    unsigned char mac[EVP_MAX_MD_SIZE], want[32];
    unsigned int len = 0;

    if (!hex || strlen(hex) != 64 || strspn(hex, "0123456789abcdefABCDEF") != 64 || !secret ||
        !*secret)
        return 0;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return 0;
        want[i] = (unsigned char)v;
    }
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret),
              (const unsigned char *)(body->buf ? body->buf : ""), body->len, mac, &len) ||
        len != 32)
        return 0;
    return CRYPTO_memcmp(mac, want, 32) == 0;
}

/* The trigger whose secret signed the body: its index, or -1. */
static int signer(const struct forge_trigger *t, int n, const char *sig, const strbuf *body)
{
    int found = -1;

    for (int i = 0; i < n; i++)
        if (t[i].secret_env[0] && found < 0 && signature_ok(sig, secret_get(t[i].secret_env), body))
            found = i;
    return found;
}

static void answer_msg(struct http_answer *ans, unsigned status, const char *msg)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "result", msg);
    http_answer_json(ans, status, o);
}

void http_forge_webhook(struct http_req *r, char seg[][256], struct http_answer *ans)
{
    struct forge_trigger *t = NULL;
    const char *sig, *event;
    cJSON *payload = NULL;
    char msg[300];
    int n = 0, k, status = 200, rc;

    (void)seg;
    if (r->body.len > (size_t)config_int(CFG_FORGE_WEBHOOK_MAX_KB) * 1024) {
        http_answer_error(ans, 413, "too_large", NULL,
                          "webhook body larger than %lld KiB (forge.webhook_max_kb)",
                          (long long)config_int(CFG_FORGE_WEBHOOK_MAX_KB));
        return;
    }
    if (forge_triggers_load(&t, &n) != 0) {
        http_answer_error(ans, 503, "unavailable", NULL, "%s", err_last());
        return;
    }
    signature_of(r, &sig, &event);
    if ((k = signer(t, n, sig, &r->body)) < 0) {
        log_info("forge webhook: %s signature matches no trigger's secret: refused",
                 sig ? "the" : "no");
        http_answer_error(ans, 401, "unauthorized", NULL,
                          "the webhook's signature matches no forge trigger's secret");
        goto out;
    }
    if (!cJSON_IsObject(payload = cJSON_ParseWithLength(r->body.buf, r->body.len))) {
        http_answer_error(ans, 400, "bad_request", NULL, "the webhook's body is not JSON");
        goto out;
    }
    rc = forge_webhook_event(&status, msg, sizeof(msg), r->st, &t[k], event, payload);
    if (rc != 0) {
        log_warn("forge webhook: %s: %s", t[k].name, err_last());
        http_answer_err(ans, rc);
        goto out;
    }
    log_info("forge webhook: %s: %s: %s", t[k].name, event ? event : "(no event)", msg);
    answer_msg(ans, (unsigned)status, msg);
out:
    cJSON_Delete(payload);
    forge_triggers_free(t, n);
}
