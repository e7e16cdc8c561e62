/*
 * redact.h - secrets out of everything stored or sent to a model.
 *
 * Replaces API keys (sk-..., AWS AKIA/ASIA key ids, GitHub and Slack
 * tokens, ...), bearer tokens, credentials in URLs, private key blocks
 * and the values of *_TOKEN=, *_SECRET=, *_PASSWORD=, *_KEY= assignments
 * that look random (not `token = "rc"`) with `***REDACTED***`.  The patterns are compiled once
 * (pcre2, JIT when available) and are safe to use from several threads.
 */
#ifndef GOALD_UTIL_REDACT_H
#define GOALD_UTIL_REDACT_H

#include <stddef.h>

#include "util/strbuf.h"

#define REDACTED "***REDACTED***"

/* Append text[0..len) to out with secrets replaced.  *count (may be NULL)
 * receives how many were replaced.  0, ERR_TOOBIG (out's cap) or ERR_FAIL
 * (a pcre2 error, in the message). */
int redact_text(strbuf *out, const char *text, size_t len, int *count);

/* Convenience: a malloc'd redacted copy of a NUL-terminated string (the
 * caller frees); NULL only when s is NULL. */
char *redact_str(const char *s, int *count);

#endif
