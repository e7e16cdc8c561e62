CREATE FUNCTION goald_json_valid(t text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM t::json; RETURN true; EXCEPTION WHEN others THEN RETURN false; END $$;
CREATE FUNCTION json_valid(t text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT goald_json_valid(t) $$;
CREATE FUNCTION json_extract(doc text, path text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
 SELECT CASE jsonb_typeof(v) WHEN 'boolean' THEN (CASE WHEN v::text = 'true' THEN '1' ELSE '0' END) WHEN 'string' THEN v #>> '{}' WHEN 'null' THEN NULL ELSE v::text END
 FROM (SELECT doc::jsonb #> string_to_array(substr(regexp_replace(path, '\[(\d+)\]', '.\1', 'g'), 3), '.') AS v) x $$;
CREATE FUNCTION json_array_length(t text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT json_array_length(t::json) $$;
CREATE TABLE goals (
    id                  TEXT PRIMARY KEY,
    parent_id           TEXT REFERENCES goals(id) ON DELETE SET NULL,
    title               TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL DEFAULT 'queued'
                        CHECK (status IN ('queued','active','blocked','completed','cancelled')),
    priority            BIGINT NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
    is_template         BIGINT NOT NULL DEFAULT 0,   -- a goal with a schedule
    schedule            TEXT,
    repo                TEXT,
    base_branch         TEXT,
    branch              TEXT,
    worktree            TEXT,
    deadline_at         BIGINT,
    budget_max_tokens   BIGINT,
    budget_max_cost_usd DOUBLE PRECISION,
    budget_max_hours    DOUBLE PRECISION,
    spent_tokens        BIGINT NOT NULL DEFAULT 0,
    spent_cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    spent_wall_ms       BIGINT NOT NULL DEFAULT 0,
    success_criteria    TEXT NOT NULL DEFAULT '[]' CHECK (goald_json_valid(success_criteria)),
    allowed_actions     TEXT CHECK (allowed_actions IS NULL OR goald_json_valid(allowed_actions)),
    verification        TEXT CHECK (verification IS NULL OR goald_json_valid(verification)),
    publish             TEXT CHECK (publish IS NULL OR goald_json_valid(publish)),
    elaboration         TEXT CHECK (elaboration IS NULL OR goald_json_valid(elaboration)),
    spec                TEXT NOT NULL CHECK (goald_json_valid(spec)),  -- the goal as submitted
    partial             BIGINT NOT NULL DEFAULT 0,
    blocked_reason      TEXT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    started_at          BIGINT,
    ended_at            BIGINT
, attempts BIGINT NOT NULL DEFAULT 0, next_attempt_at BIGINT NOT NULL DEFAULT 0, outcome TEXT CHECK (outcome IS NULL OR outcome IN ('nothing_to_do')), outcome_reason TEXT,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
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
    priority        BIGINT NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
    effort          TEXT NOT NULL DEFAULT 'M' CHECK (effort IN ('S','M','L','XL')),
    critical        BIGINT NOT NULL DEFAULT 1,
    attempts        BIGINT NOT NULL DEFAULT 0,
    tier            BIGINT NOT NULL DEFAULT 1 CHECK (tier BETWEEN 1 AND 4),
    max_retries     BIGINT NOT NULL DEFAULT 3,
    model_index     BIGINT NOT NULL DEFAULT 0,  -- position in the failover chain
    next_attempt_at BIGINT NOT NULL DEFAULT 0,  -- backoff: not claimable before
    timeout_s       BIGINT,                     -- NULL: the lane default
    strategy        TEXT,                        -- Plan B strategy for the next run
    human_input     TEXT,                        -- an answer from `goald resolve`
    question        TEXT,                        -- ask_human question while blocked
    summary         TEXT,                        -- the model's completion summary
    verified        BIGINT,                     -- NULL unknown, 1 gates passed, 0 no gate
    commit_sha      TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    started_at      BIGINT,
    ended_at        BIGINT, recovery_epoch BIGINT NOT NULL DEFAULT 0,
    UNIQUE (goal_id, key)
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE work_item_deps (
    item_id       TEXT NOT NULL REFERENCES work_items(id) ON DELETE CASCADE,
    depends_on_id TEXT NOT NULL REFERENCES work_items(id) ON DELETE CASCADE,
    condition     TEXT NOT NULL DEFAULT 'done_or_skipped'
                  CHECK (condition IN ('done_or_skipped','done')),
    PRIMARY KEY (item_id, depends_on_id),
    CHECK (item_id <> depends_on_id)
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    goal_id         TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id         TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    kind            TEXT NOT NULL
                    CHECK (kind IN ('elaborate','plan','execute','plan_b','review','escalate','publish')),
    lane            TEXT NOT NULL CHECK (lane IN ('plan','work','cron')),
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running','success','failed','timeout','aborted')),
    attempt         BIGINT NOT NULL DEFAULT 1,
    tier            BIGINT NOT NULL DEFAULT 1,
    model           TEXT,
    provider        TEXT,
    pid             BIGINT,
    lease_until     BIGINT,
    timeout_s       BIGINT,
    turns           BIGINT NOT NULL DEFAULT 0,
    tokens_in       BIGINT NOT NULL DEFAULT 0,
    tokens_cached   BIGINT NOT NULL DEFAULT 0,
    tokens_out      BIGINT NOT NULL DEFAULT 0,
    cost_usd        DOUBLE PRECISION NOT NULL DEFAULT 0,
    error_class     TEXT,
    error_signature TEXT,
    failure_reason  TEXT,
    summary         TEXT,
    created_at      BIGINT NOT NULL,
    started_at      BIGINT,
    ended_at        BIGINT
, model_index BIGINT NOT NULL DEFAULT 0,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE events (
    id      BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,   -- the sequence
    ts      BIGINT NOT NULL,
    goal_id TEXT,
    item_id TEXT,
    run_id  TEXT,
    type    TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(payload))
);
CREATE TABLE context_packs (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    pack       TEXT NOT NULL CHECK (goald_json_valid(pack)),
    created_at BIGINT NOT NULL
);
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
    packet           TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(packet)),
    resolution       TEXT,               -- the action taken
    resolution_input TEXT,
    created_at       BIGINT NOT NULL,
    resolved_at      BIGINT
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE artifacts (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE SET NULL,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    type       TEXT NOT NULL,   -- commit, branch, pull_request, file, patch, test_results, report
    ref        TEXT,
    path       TEXT,
    hash       TEXT,
    url        TEXT,
    meta       TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(meta)),
    created_at BIGINT NOT NULL
);
CREATE TABLE decisions (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    goal_id    TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id    TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id     TEXT REFERENCES runs(id) ON DELETE SET NULL,
    kind       TEXT NOT NULL,   -- review_verdict, review_finding, plan_b, recovery, ...
    aspect     TEXT,
    severity   TEXT,
    note       TEXT,
    data       TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(data)),
    created_at BIGINT NOT NULL
);
CREATE TABLE gate_results (
    id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    goal_id        TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    item_id        TEXT REFERENCES work_items(id) ON DELETE CASCADE,
    run_id         TEXT REFERENCES runs(id) ON DELETE SET NULL,
    name           TEXT NOT NULL,
    type           TEXT NOT NULL CHECK (type IN ('test','build','lint','typecheck','custom')),
    command        TEXT NOT NULL,
    must_pass      BIGINT NOT NULL DEFAULT 1,
    passed         BIGINT NOT NULL,
    exit_code      BIGINT,
    duration_ms    BIGINT NOT NULL DEFAULT 0,
    output_tail    TEXT,
    output_hash    TEXT,
    tree_id        TEXT,
    classification TEXT CHECK (classification IS NULL OR
                               classification IN ('introduced','pre-existing','flaky')),
    tests_passed   BIGINT,
    tests_failed   BIGINT,
    tests_skipped  BIGINT,
    tests_total    BIGINT,
    created_at     BIGINT NOT NULL
, tests_format TEXT, note TEXT);
CREATE TABLE triggers (
    id           TEXT PRIMARY KEY,
    goal_id      TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,  -- the template
    schedule     TEXT NOT NULL,
    timezone     TEXT NOT NULL DEFAULT 'UTC',
    enabled      BIGINT NOT NULL DEFAULT 1,
    next_fire_at BIGINT,
    last_fire_at BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE breakers (
    error_class  TEXT PRIMARY KEY,
    state        TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed','open','half_open')),
    failures     BIGINT NOT NULL DEFAULT 0,
    opened_at    BIGINT,
    probe_run_id TEXT,
    updated_at   BIGINT NOT NULL
, config_fp TEXT, reason TEXT,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE daemon_heartbeat (
    id         BIGINT PRIMARY KEY CHECK (id = 1),
    pid        BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    last_tick  BIGINT NOT NULL,
    lanes      TEXT NOT NULL DEFAULT '{}' CHECK (goald_json_valid(lanes))
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE llm_script_cursors (
    path       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    stage      TEXT NOT NULL,
    next_line  BIGINT NOT NULL DEFAULT 0 CHECK (next_line >= 0),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (path, sha256, stage)
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE gate_cases (
    gate_result_id BIGINT NOT NULL REFERENCES gate_results(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pass','fail','skip')),
    file           TEXT
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE gate_baselines (
    goal_id     TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    gate        TEXT NOT NULL,
    command     TEXT NOT NULL,
    baseline    TEXT NOT NULL,   -- commit sha
    passed      BIGINT NOT NULL,
    exit_code   BIGINT,
    format      TEXT,            -- test case format; NULL: not parsed
    cases       TEXT NOT NULL DEFAULT '[]' CHECK (goald_json_valid(cases)),
    output_hash TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (goal_id, gate, command, baseline)
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE llm_endpoint_quirks (
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    use_max_completion BIGINT NOT NULL DEFAULT 0,
    no_response_format BIGINT NOT NULL DEFAULT 0,
    max_tokens BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL, context_window BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (base_url, model)
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE api_tokens (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    scopes      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX goals_status ON goals(status, priority DESC, created_at);
CREATE INDEX goals_parent ON goals(parent_id, created_at);
CREATE INDEX work_items_goal ON work_items(goal_id, created_at);
CREATE INDEX work_items_claim ON work_items(status, next_attempt_at, priority DESC);
CREATE INDEX work_item_deps_rev ON work_item_deps(depends_on_id);
CREATE INDEX runs_status ON runs(status, lane);
CREATE INDEX runs_item ON runs(item_id, created_at);
CREATE INDEX runs_goal ON runs(goal_id, created_at);
CREATE INDEX events_goal ON events(goal_id, id);
CREATE INDEX events_run ON events(run_id, id);
CREATE INDEX events_ts ON events(ts);
CREATE INDEX context_packs_item ON context_packs(item_id, id);
CREATE INDEX escalations_status ON escalations(status, created_at);
CREATE INDEX escalations_goal ON escalations(goal_id, status);
CREATE UNIQUE INDEX escalations_open_once
    ON escalations(goal_id, coalesce(item_id, ''), type) WHERE status = 'open';
CREATE INDEX artifacts_goal ON artifacts(goal_id, id);
CREATE INDEX decisions_item ON decisions(item_id, id);
CREATE INDEX decisions_goal ON decisions(goal_id, id);
CREATE INDEX gate_results_item ON gate_results(item_id, id);
CREATE INDEX gate_results_goal ON gate_results(goal_id, id);
CREATE INDEX triggers_due ON triggers(enabled, next_fire_at);
CREATE INDEX goals_claim ON goals(status, next_attempt_at);
CREATE INDEX gate_cases_result ON gate_cases(gate_result_id, status);
