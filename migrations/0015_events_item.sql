-- 0015_events_item: events by work item.  Each execute run reads its
-- item's tool calls and its owed Plan B, and each job the item's recovery
-- history, from events WHERE item_id = ?: without this index every one of
-- those reads scans the whole log, and the cost of an item grows with the
-- number of goals ever run (bench/RESULTS.md, "Nodes").
CREATE INDEX events_item ON events(item_id, id);
