-- The box's lock is rebuilt at start from its box_lock events: find them without a scan.
CREATE INDEX events_box_lock ON events (seq) WHERE kind = 'box_lock';
