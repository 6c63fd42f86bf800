-- One process at a time sends an endpoint's deliveries: it takes the endpoint's lease
-- (until an instant past its attempt's deadline) before it sends, and gives it back when
-- the attempt is recorded. A process that dies mid-send leaves the lease to run out, and
-- another process sends the delivery again (at least once).
ALTER TABLE webhook_endpoints ADD COLUMN sending_by text, ADD COLUMN sending_until timestamptz;
