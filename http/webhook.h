/*
 * webhook.h - POST /v1/forge/webhook: a forge's webhook (docs/forge.md).
 *
 * It carries no goald token: the forge signs the body with the trigger's
 * secret (HMAC-SHA256), GitHub in X-Hub-Signature-256 ("sha256=HEX"),
 * Gitea in X-Gitea-Signature and Forgejo in X-Forgejo-Signature (HEX).
 * The signature is checked, in constant time, against each trigger that
 * has a webhook secret, before the body is parsed; no match is 401.
 */
#ifndef GOALD_HTTP_WEBHOOK_H
#define GOALD_HTTP_WEBHOOK_H

#include "http/internal.h"

#define HTTP_WEBHOOK_PATH "/v1/forge/webhook"

/* Is url the webhook's path (answered without a token)? */
int http_webhook_is(const char *url);

/* Answer the webhook request r into ans. */
void http_forge_webhook(struct http_req *r, char seg[][256], struct http_answer *ans);

#endif
