-- One process at a time runs a round of a job that takes from one shared source (the
-- booking intake: the channel manager's feed). The round's process holds the job's lease
-- (held_by, until held_until), renews it while the round runs and gives it back at the
-- end. A process that dies mid-round leaves the lease to run out, and another takes it
-- then. A process woken while another holds the lease sets `again`: the holder runs one
-- round more when its own ends, so no wake-up is lost.
CREATE TABLE round_leases (
    name       text PRIMARY KEY,
    held_by    text,
    held_until timestamptz,
    again      boolean NOT NULL DEFAULT false
);
