-- The channel manager's feed treated as input (issue 41, docs/decisions/0126-the-feed-is-input.md).
--
-- cut: what was cut from a revision before it was kept (domain/revision_screen.py, `Cut`
-- as JSON objects), shown with it for review; a list or an object cut makes it refused.
-- attempts: applies that ran out of time or were rolled back for now (a deadlock); after a
-- few the revision is refused, so that none comes back round after round holding its
-- property's lock.
-- clash_of: the seq of the revision whose id or system_id this one repeats though it is of
-- another booking or property. Such a revision is kept, refused with a note and its owner
-- told, never dropped; ids stay unique among the revisions that are not clashes, and a
-- clash offered again is the same clash. clash_cleared: an operator had it applied again
-- (the admin route "apply"): it is applied as any revision, its clash_of kept for the record.
ALTER TABLE ota_revisions
    ADD COLUMN cut jsonb,
    ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN clash_of bigint,
    ADD COLUMN clash_cleared boolean NOT NULL DEFAULT false;
ALTER TABLE ota_revisions DROP CONSTRAINT ota_revisions_id_key, DROP CONSTRAINT ota_revisions_system_id_key;
CREATE UNIQUE INDEX ota_revisions_id_key ON ota_revisions (id) WHERE clash_of IS NULL;
CREATE UNIQUE INDEX ota_revisions_system_id_key ON ota_revisions (system_id) WHERE clash_of IS NULL;
CREATE UNIQUE INDEX ota_revisions_clash ON ota_revisions (id, property_id, cm_booking_id) WHERE clash_of IS NOT NULL;
CREATE INDEX ota_revisions_system_id ON ota_revisions (system_id) WHERE clash_of IS NOT NULL;
