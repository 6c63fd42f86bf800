-- Every lease in one table (issue 43, docs/decisions/0129-one-lease-table.md): which process
-- does a piece of shared work now. Before, three schemes in three column styles: push
-- leases (0017, `until` in epoch seconds), round leases (0018) and webhook sending leases
-- (0015, two columns of webhook_endpoints).
--
-- kind 'push': key a property id, held while a process pushes the property's cells;
-- kind 'round': key a job's name (the booking intake), held while a round runs;
-- kind 'sending': key a webhook endpoint id, held while an attempt at its next delivery runs.
--
-- `until` is an instant on the database server's clock, the one clock every process and
-- host shares. `holder` NULL is a lease given back whose row stays for `again`: a process
-- that found the lease held asks its holder for one round more.
-- No old process may take or renew a lease between the copy below and the drop: it would
-- be lost with the old tables while the old process went on under it.
LOCK TABLE push_leases, round_leases, webhook_endpoints IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE leases (
    kind    text NOT NULL CHECK (kind IN ('push', 'round', 'sending')),
    key     text NOT NULL,
    holder  text,
    until   timestamptz,
    again   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (kind, key),
    CHECK ((holder IS NULL) = (until IS NULL))
);

-- The leases held now move as they are, so a process of the new version respects those of
-- the old ones still running during a reload until they run out; the old tables go, so an
-- old process can neither take nor renew a lease from here on (its statements fail, and
-- a pusher or a round that cannot hold its lease does no work).
INSERT INTO leases (kind, key, holder, until)
    SELECT 'push', property_id::text, holder, to_timestamp(until) FROM push_leases;
INSERT INTO leases (kind, key, holder, until, again)
    SELECT 'round', name, held_by, CASE WHEN held_by IS NOT NULL THEN held_until END, again FROM round_leases;
INSERT INTO leases (kind, key, holder, until)
    SELECT 'sending', id::text, sending_by, sending_until FROM webhook_endpoints
    WHERE sending_by IS NOT NULL AND sending_until IS NOT NULL;
DROP TABLE push_leases;
DROP TABLE round_leases;
ALTER TABLE webhook_endpoints DROP COLUMN sending_by, DROP COLUMN sending_until;
