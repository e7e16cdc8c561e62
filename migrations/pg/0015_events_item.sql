-- 0015_events_item, PostgreSQL's twin of migrations/0015_events_item.sql:
-- events by work item (each execute run's tool calls, owed Plan B and
-- recovery history are read by item_id; without the index every read
-- scans the whole log).
CREATE INDEX events_item ON events(item_id, id);
