-- 0017_forge: goals from a forge's issues (docs/forge.md).
-- forge_links: which goal an issue (source 'issue') or a review of
-- goald's pull request (source 'review:ID') became.  The key is unique,
-- so a second poll, a restart, a second node or a replayed webhook
-- inserts nothing: the link and its goal go in one transaction.
CREATE TABLE forge_links (
    forge        TEXT NOT NULL,
    repo         TEXT NOT NULL,
    issue_number INTEGER NOT NULL,
    source       TEXT NOT NULL,
    goal_id      TEXT NOT NULL REFERENCES goals(id),
    trigger_name TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (forge, repo, issue_number, source)
);
CREATE INDEX forge_links_goal ON forge_links(goal_id);
-- forge_comments: goald's own comment on an issue per kind ('status'),
-- edited in place rather than posted again.
CREATE TABLE forge_comments (
    forge        TEXT NOT NULL,
    repo         TEXT NOT NULL,
    issue_number INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    comment_id   INTEGER NOT NULL,
    body_sha     TEXT NOT NULL DEFAULT '',
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (forge, repo, issue_number, kind)
);
-- forge_state: small named values of the forge triggers: a poll's ETag
-- ('etag:TRIGGER'), the last comment read on an issue.
CREATE TABLE forge_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
