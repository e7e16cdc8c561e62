-- 0012_api_tokens: bearer tokens of the HTTP API (goald serve, docs/http.md).
-- Only the SHA-256 of a token is kept (hex); the token itself is printed
-- once by `goald token create`.  scopes is a comma list of read, submit,
-- resolve, admin.  A revoked token stays, with its revocation time, so
-- that the events naming it still name something.  (0009 stays unused:
-- the runner skips versions at or below the current one.)
CREATE TABLE api_tokens (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    scopes      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
