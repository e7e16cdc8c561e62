-- 0001_init: every table of docs/design.md §5.
-- Times are integer milliseconds since the epoch, UTC.  JSON columns hold
-- text that json_valid() accepts.

CREATE TABLE goals (
    id                  TEXT PRIMARY KEY,
    parent_id           TEXT REFERENCES goals(id) ON DELETE SET NULL,
    title               TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL DEFAULT 'queued'
                        CHECK (status IN ('queued','active','blocked','completed','cancelled')),
    priority            INTEGER NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
    is_template         INTEGER NOT NULL DEFAULT 0,   -- a goal with a schedule
    schedule            TEXT,
    repo                TEXT,
    base_branch         TEXT,
    branch              TEXT,
    worktree            TEXT,
    deadline_at         INTEGER,
    budget_max_tokens   INTEGER,
    budget_max_cost_usd REAL,
    budget_max_hours    REAL,
    spent_tokens        INTEGER NOT NULL DEFAULT 0,
    spent_cost_usd      REAL NOT NULL DEFAULT 0,
    spent_wall_ms       INTEGER NOT NULL DEFAULT 0,
    success_criteria    TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(success_criteria)),
    allowed_actions     TEXT CHECK (allowed_actions IS NULL OR json_valid(allowed_actions)),
    verification        TEXT CHECK (verification IS NULL OR json_valid(verification)),
    publish             TEXT CHECK (publish IS NULL OR json_valid(publish)),
    elaboration         TEXT CHECK (elaboration IS NULL OR json_valid(elaboration)),
    spec                TEXT NOT NULL CHECK (json_valid(spec)),  -- the goal as submitted
    partial             INTEGER NOT NULL DEFAULT 0,
    blocked_reason      TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    started_at          INTEGER,
    ended_at            INTEGER
);
CREATE INDEX goals_status ON goals(status, priority DESC, created_at);
CREATE INDEX goals_parent ON goals(parent_id, created_at);

CREATE TABLE work_items (
    id              TEXT PRIMARY KEY,
    goal_id         TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    key             TEXT NOT NULL,               -- the planner's key, "wi-1"
    title           TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    type            TEXT NOT NULL DEFAULT 'code'
                    CHECK (type IN ('code','test','doc','refactor','analysis')),
    status          TEXT NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued','ready','in_progress','verify','done','failed',
                                      'blocked','escalated','skipped','cancelled')),
    priority        INTEGER NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
    effort          TEXT NOT NULL DEFAULT 'M' CHECK (effort IN ('S','M','L','XL')),
    critical        INTEGER NOT NULL DEFAULT 1,
    attempts        INTEGER NOT NULL DEFAULT 0,
    tier            INTEGER NOT NULL DEFAULT 1 CHECK (tier BETWEEN 1 AND 4),
    max_retries     INTEGER NOT NULL DEFAULT 3,
    model_index     INTEGER NOT NULL DEFAULT 0,  -- position in the failover chain
    next_attempt_at INTEGER NOT NULL DEFAULT 0,  -- backoff: not claimable before
    timeout_s       INTEGER,                     -- NULL: the lane default
    strategy        TEXT,                        -- Plan B strategy for the next run
    human_input     TEXT,                        -- an answer from `goald resolve`
    question        TEXT,                        -- ask_human question while blocked
    summary         TEXT,                        -- the model's completion summary
    verified        INTEGER,                     -- NULL unknown, 1 gates passed, 0 no gate
    commit_sha      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    ended_at        INTEGER,
    UNIQUE (goal_id, key)
);
CREATE INDEX work_items_goal ON work_items(goal_id, created_at);
CREATE INDEX work_items_claim ON work_items(status, next_attempt_at, priority DESC);

CREATE TABLE work_item_deps (
    item_id       TEXT NOT NULL REFERENCES work_items(id) ON DELETE CASCADE,
    depends_on_id TEXT NOT NULL REFERENCES work_items(id) ON DELETE CASCADE,
    condition     TEXT NOT NULL DEFAULT 'done_or_skipped'
                  CHECK (condition IN ('done_or_skipped','done')),
    PRIMARY KEY (item_id, depends_on_id),
    CHECK (item_id <> depends_on_id)
);
CREATE INDEX work_item_deps_rev ON work_item_deps(depends_on_id);

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    goal_id         TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id         TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    kind            TEXT NOT NULL
                    CHECK (kind IN ('elaborate','plan','execute','plan_b','review','escalate','publish')),
    lane            TEXT NOT NULL CHECK (lane IN ('plan','work','cron')),
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running','success','failed','timeout','aborted')),
    attempt         INTEGER NOT NULL DEFAULT 1,
    tier            INTEGER NOT NULL DEFAULT 1,
    model           TEXT,
    provider        TEXT,
    pid             INTEGER,
    lease_until     INTEGER,
    timeout_s       INTEGER,
    turns           INTEGER NOT NULL DEFAULT 0,
    tokens_in       INTEGER NOT NULL DEFAULT 0,
    tokens_cached   INTEGER NOT NULL DEFAULT 0,
    tokens_out      INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL NOT NULL DEFAULT 0,
    error_class     TEXT,
    error_signature TEXT,
    failure_reason  TEXT,
    summary         TEXT,
    created_at      INTEGER NOT NULL,
    started_at      INTEGER,
    ended_at        INTEGER
);
CREATE INDEX runs_status ON runs(status, lane);
CREATE INDEX runs_item ON runs(item_id, created_at);
CREATE INDEX runs_goal ON runs(goal_id, created_at);

CREATE TABLE events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,   -- the sequence
    ts      INTEGER NOT NULL,
    goal_id TEXT,
    item_id TEXT,
    run_id  TEXT,
    type    TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(payload))
);
CREATE INDEX events_goal ON events(goal_id, id);
CREATE INDEX events_run ON events(run_id, id);
CREATE INDEX events_ts ON events(ts);

CREATE TABLE context_packs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    pack       TEXT NOT NULL CHECK (json_valid(pack)),
    created_at INTEGER NOT NULL
);
CREATE INDEX context_packs_item ON context_packs(item_id, id);

CREATE TABLE escalations (
    id               TEXT PRIMARY KEY,
    goal_id          TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id          TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id           TEXT REFERENCES runs(id) ON DELETE SET NULL,
    type             TEXT NOT NULL,      -- the reason: recovery_exhausted, budget, deadline, auth, ask_human
    severity         TEXT NOT NULL DEFAULT 'warning'
                     CHECK (severity IN ('info','warning','critical')),
    urgency          TEXT NOT NULL DEFAULT 'normal',
    status           TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','resolved')),
    packet           TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(packet)),
    resolution       TEXT,               -- the action taken
    resolution_input TEXT,
    created_at       INTEGER NOT NULL,
    resolved_at      INTEGER
);
CREATE INDEX escalations_status ON escalations(status, created_at);
CREATE INDEX escalations_goal ON escalations(goal_id, status);
-- one open escalation per item (or goal) and reason
CREATE UNIQUE INDEX escalations_open_once
    ON escalations(goal_id, ifnull(item_id, ''), type) WHERE status = 'open';

CREATE TABLE artifacts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE SET NULL,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    type       TEXT NOT NULL,   -- commit, branch, pull_request, file, patch, test_results, report
    ref        TEXT,
    path       TEXT,
    hash       TEXT,
    url        TEXT,
    meta       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta)),
    created_at INTEGER NOT NULL
);
CREATE INDEX artifacts_goal ON artifacts(goal_id, id);

CREATE TABLE decisions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    kind       TEXT NOT NULL,   -- review_verdict, review_finding, plan_b, recovery, ...
    aspect     TEXT,
    severity   TEXT,
    note       TEXT,
    data       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
    created_at INTEGER NOT NULL
);
CREATE INDEX decisions_item ON decisions(item_id, id);
CREATE INDEX decisions_goal ON decisions(goal_id, id);

CREATE TABLE gate_results (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id        TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id        TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id         TEXT REFERENCES runs(id) ON DELETE SET NULL,
    name           TEXT NOT NULL,
    type           TEXT NOT NULL CHECK (type IN ('test','build','lint','typecheck','custom')),
    command        TEXT NOT NULL,
    must_pass      INTEGER NOT NULL DEFAULT 1,
    passed         INTEGER NOT NULL,
    exit_code      INTEGER,
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    output_tail    TEXT,
    output_hash    TEXT,
    tree_id        TEXT,
    classification TEXT CHECK (classification IS NULL OR
                               classification IN ('introduced','pre-existing','flaky')),
    tests_passed   INTEGER,
    tests_failed   INTEGER,
    tests_skipped  INTEGER,
    tests_total    INTEGER,
    created_at     INTEGER NOT NULL
);
CREATE INDEX gate_results_item ON gate_results(item_id, id);
CREATE INDEX gate_results_goal ON gate_results(goal_id, id);

CREATE TABLE triggers (
    id           TEXT PRIMARY KEY,
    goal_id      TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,  -- the template
    schedule     TEXT NOT NULL,
    timezone     TEXT NOT NULL DEFAULT 'UTC',
    enabled      INTEGER NOT NULL DEFAULT 1,
    next_fire_at INTEGER,
    last_fire_at INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX triggers_due ON triggers(enabled, next_fire_at);

CREATE TABLE breakers (
    error_class  TEXT PRIMARY KEY,
    state        TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open','half_open')),
    failures     INTEGER NOT NULL DEFAULT 0,
    opened_at    INTEGER,
    probe_run_id TEXT,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE daemon_heartbeat (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    pid        INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    last_tick  INTEGER NOT NULL,
    lanes      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(lanes))
);
