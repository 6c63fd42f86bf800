-- One process at a time pushes a property to the channel manager (issue 17): the push
-- lease. A process takes it when one of its pushers finds the property's cells dirty,
-- renews it every few seconds while any of its pushers has work for the property (a
-- round, a pause after a failure, a call deferred by the budget), and gives it back once
-- the property is clean. A process that dies leaves its lease to run out; another process
-- then takes the property over from the record's dirty cells (docs/decisions.md, "The
-- channel manager shared fairly").
--
-- `until` is seconds since the epoch on the database server's clock, the one clock every
-- process and machine shares (tests pass their fake clock's time instead).
CREATE TABLE push_leases (
    property_id bigint PRIMARY KEY REFERENCES properties (id) ON DELETE CASCADE,
    holder text NOT NULL,  -- the process: host, pid and a random part
    until double precision NOT NULL
);
