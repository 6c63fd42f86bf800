-- The channel manager as Channex documents it (issue 26).
--
-- A value Channex refuses comes back in a 200 among meta.warnings. Its cells stay dirty
-- (version > pushed_version) and are marked refused at the version refused, with what
-- Channex said: a newer write clears the mark by being a newer version.
ALTER TABLE availability_cells ADD COLUMN refused_version bigint NOT NULL DEFAULT 0,
                               ADD COLUMN refusal text;
ALTER TABLE rate_cells ADD COLUMN refused_version bigint NOT NULL DEFAULT 0,
                       ADD COLUMN refusal text;
ALTER TABLE restriction_cells ADD COLUMN refused_version bigint NOT NULL DEFAULT 0,
                              ADD COLUMN refusal text;

-- Refused cells are tried again with backoff, per property and pipe (availability, or
-- rates with restrictions); the row goes once the channel manager takes them.
CREATE TABLE channel_refusals (
    property_id bigint NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('availability', 'restrictions')),
    tries       integer NOT NULL,
    retry_at    timestamptz NOT NULL,
    PRIMARY KEY (property_id, kind)
);

-- The owner hears of refusals at most once per property and day (the property's day);
-- nights that became past before they were sent are dropped, and counted.
ALTER TABLE properties ADD COLUMN cm_refusal_mailed_on date,
                       ADD COLUMN cm_past_dropped bigint NOT NULL DEFAULT 0;

-- The task ids of the calls that carried a batch's cells (Channex's certification asks
-- for them, call by call). At most a few per batch: a batch's cells go in few calls.
CREATE TABLE batch_channel_tasks (
    batch_id uuid NOT NULL REFERENCES write_batches (id) ON DELETE CASCADE,
    task_id  text NOT NULL,
    kind     text NOT NULL CHECK (kind IN ('availability', 'restrictions')),
    sent_at  timestamptz NOT NULL,
    PRIMARY KEY (batch_id, task_id)
);
