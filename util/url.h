/*
 * url.h - git repository URLs and paths as goald's intake judges them:
 * whether one carries a credential (refused everywhere: a goal's JSON is
 * stored and shown), its text with any credential masked (for messages),
 * and whether it lies under a root an operator allowed (http.repos,
 * http.remotes: docs/http.md).
 *
 * A credential is:
 *  - a password in the user part, scheme://USER:PASSWORD@host/... (any
 *    scheme) or scp-like USER:PASSWORD@host:path;
 *  - any user part of an http(s) URL, https://X@host/...: a bare user
 *    part there cannot be told from a token (GitHub takes
 *    https://TOKEN@github.com/...); the user name of https pushes is
 *    vcs.push_username.  ssh://git@host/... and git@host:path stay;
 *  - a query or fragment parameter whose name holds token, password,
 *    passwd, pwd, secret, key, auth, credential or signature
 *    (?access_token=, ?private_token=, ?token=, ...).
 * Nothing here allocates.
 */
#ifndef GOALD_UTIL_URL_H
#define GOALD_UTIL_URL_H

#include <stddef.h>

/* 1 when url carries a credential (above), else 0. */
int url_has_credential(const char *url);

/* url with each credential replaced by "***" into out (n bytes, cut with
 * "..." past it): what a message may show. */
const char *url_mask(char *out, size_t n, const char *url);

/* 1 when url's text is plain enough to compare with a prefix: no "." or
 * ".." segment (between '/' or ':'), no backslash, no percent-encoded
 * '.', '/' or '\\', no control character or space. */
int url_is_plain(const char *url);

/* 1 when url starts with prefix at a boundary: prefix ends in '/' or ':',
 * or url ends there or goes on with '/' ("https://h/team" admits
 * "https://h/team/x", not "https://h/team-evil").  Bytes compared as they
 * are (no case folding, no decoding). */
int url_under_prefix(const char *url, const char *prefix);

/* 1 when path, resolved (realpath: symbolic links followed, "." and ".."
 * gone; it must exist), is root resolved or lies beneath it at a folder
 * boundary ("/srv/repos" admits "/srv/repos/a", not "/srv/repos-evil");
 * the resolved path goes to resolved (n bytes) when not NULL.  0 when
 * either does not resolve, or the resolved path does not fit in n. */
int url_path_under(const char *path, const char *root, char *resolved, size_t n);

#endif
