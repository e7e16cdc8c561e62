-- 0019_queue_facts, PostgreSQL's twin of migrations/0019_queue_facts.sql:
-- facts the claim picks read from an index instead of counting them goal
-- by goal at every claim (bench/bench_queue.sh), kept by triggers in the
-- statement that changes what they count (each counts again rather than
-- adds, so a row copied with its count stays right).  A trigger counts
-- under the store's write lock (store/pg.c: PG_WRITE_LOCK), which every
-- write transaction holds already, so two counts never interleave.
-- goals.items: how many work items the goal has; goals.items_open: how
-- many of them are neither done nor skipped.
ALTER TABLE goals ADD COLUMN items BIGINT NOT NULL DEFAULT 0;
ALTER TABLE goals ADD COLUMN items_open BIGINT NOT NULL DEFAULT 0;
-- work_items.dependents: how many items depend on this one.
ALTER TABLE work_items ADD COLUMN dependents BIGINT NOT NULL DEFAULT 0;
UPDATE goals SET
    items = (SELECT count(*) FROM work_items w WHERE w.goal_id = goals.id),
    items_open = (SELECT count(*) FROM work_items w WHERE w.goal_id = goals.id
                  AND w.status NOT IN ('done', 'skipped'));
UPDATE work_items SET
    dependents = (SELECT count(*) FROM work_item_deps d WHERE d.depends_on_id = work_items.id);
CREATE FUNCTION goald_goal_items_count(p_goal TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(444250287204);
    UPDATE goals SET
        items = (SELECT count(*) FROM work_items w WHERE w.goal_id = p_goal),
        items_open = (SELECT count(*) FROM work_items w WHERE w.goal_id = p_goal
                      AND w.status NOT IN ('done', 'skipped'))
    WHERE id = p_goal;
END
$$;
CREATE FUNCTION goald_work_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM goald_goal_items_count(NEW.goal_id);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM goald_goal_items_count(OLD.goal_id);
    ELSE
        PERFORM goald_goal_items_count(OLD.goal_id);
        IF NEW.goal_id <> OLD.goal_id THEN
            PERFORM goald_goal_items_count(NEW.goal_id);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER work_items_count_insert AFTER INSERT ON work_items
    FOR EACH ROW EXECUTE FUNCTION goald_work_items_count();
CREATE TRIGGER work_items_count_update AFTER UPDATE OF status, goal_id ON work_items
    FOR EACH ROW
    WHEN ((OLD.status IN ('done', 'skipped')) <> (NEW.status IN ('done', 'skipped'))
          OR OLD.goal_id <> NEW.goal_id)
    EXECUTE FUNCTION goald_work_items_count();
CREATE TRIGGER work_items_count_delete AFTER DELETE ON work_items
    FOR EACH ROW EXECUTE FUNCTION goald_work_items_count();
CREATE FUNCTION goald_work_item_deps_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    item TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        item := OLD.depends_on_id;
    ELSE
        item := NEW.depends_on_id;
    END IF;
    PERFORM pg_advisory_xact_lock(444250287204);
    UPDATE work_items SET dependents = (SELECT count(*) FROM work_item_deps d
                                        WHERE d.depends_on_id = item)
    WHERE id = item;
    RETURN NULL;
END
$$;
CREATE TRIGGER work_item_deps_count_insert AFTER INSERT ON work_item_deps
    FOR EACH ROW EXECUTE FUNCTION goald_work_item_deps_count();
CREATE TRIGGER work_item_deps_count_delete AFTER DELETE ON work_item_deps
    FOR EACH ROW EXECUTE FUNCTION goald_work_item_deps_count();
-- The publish pick: active goals whose items have all ended (or that
-- publish what they have), in claim order.
CREATE INDEX goals_to_publish ON goals(priority DESC, created_at, id)
    WHERE status = 'active' AND (partial = 1 OR (items > 0 AND items_open = 0));
-- The plan pick's second part: active goals without a plan, in claim order.
CREATE INDEX goals_to_plan ON goals(priority DESC, created_at, id)
    WHERE status = 'active' AND items = 0;
-- What a script model knows of a script file without reading it all:
-- its SHA-256, its line count and its last line without a stage, found
-- when a job first read the file whole and found every line well formed;
-- keyed by the file's real path and its stamp (device, inode, size,
-- modification and change times), which an edit changes.
CREATE TABLE llm_scripts (
    path          TEXT NOT NULL,
    stamp         TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    lines         BIGINT NOT NULL,
    last_unstaged BIGINT NOT NULL,
    checked_at    BIGINT NOT NULL,
    rowid         BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (path, stamp)
);
-- The execute pick: ready items by priority and dependents, the longest
-- waiting first in each (store/run.c, lifecycle/select.c).
CREATE INDEX work_items_ready ON work_items(priority DESC, dependents DESC, updated_at, created_at, id)
    WHERE status = 'ready';
