-- Rates and restrictions cells, write batches, idempotency keys.

-- Every write takes its version from here, so "dirty" (version > pushed_version) needs no
-- second statement. Seeded availability is version 1 = pushed 1: start above it.
CREATE SEQUENCE ari_versions START WITH 2;

ALTER TABLE availability_cells ADD COLUMN last_batch_id uuid;

CREATE TABLE rate_cells (
    property_id     bigint NOT NULL REFERENCES properties (id),
    rate_plan_id    bigint NOT NULL REFERENCES rate_plans (id),
    night           date NOT NULL,
    rate_minor      bigint NOT NULL CHECK (rate_minor > 0),
    version         bigint NOT NULL,
    pushed_version  bigint NOT NULL DEFAULT 0,
    last_batch_id   uuid,
    PRIMARY KEY (rate_plan_id, night)
);
CREATE INDEX rate_cells_dirty ON rate_cells (property_id) WHERE version > pushed_version;

-- NULL in a field: the record holds no opinion for it on that night.
CREATE TABLE restriction_cells (
    property_id          bigint NOT NULL REFERENCES properties (id),
    rate_plan_id         bigint NOT NULL REFERENCES rate_plans (id),
    night                date NOT NULL,
    stop_sell            boolean,
    closed_to_arrival    boolean,
    closed_to_departure  boolean,
    min_stay_arrival     integer CHECK (min_stay_arrival BETWEEN 1 AND 365),
    min_stay_through     integer CHECK (min_stay_through BETWEEN 1 AND 365),
    max_stay             integer CHECK (max_stay BETWEEN 1 AND 365),
    version              bigint NOT NULL,
    pushed_version       bigint NOT NULL DEFAULT 0,
    last_batch_id        uuid,
    PRIMARY KEY (rate_plan_id, night)
);
CREATE INDEX restriction_cells_dirty ON restriction_cells (property_id) WHERE version > pushed_version;

-- A batch's pending cells are its own (last written by it) that are still dirty.
CREATE INDEX availability_cells_batch_dirty ON availability_cells (last_batch_id) WHERE version > pushed_version;
CREATE INDEX rate_cells_batch_dirty ON rate_cells (last_batch_id) WHERE version > pushed_version;
CREATE INDEX restriction_cells_batch_dirty ON restriction_cells (last_batch_id) WHERE version > pushed_version;

CREATE TABLE write_batches (
    id               uuid PRIMARY KEY,
    property_id      bigint NOT NULL REFERENCES properties (id),
    key_id           bigint REFERENCES api_keys (id),
    resource         text NOT NULL CHECK (resource IN ('availability', 'rates', 'restrictions')),
    created_at       timestamptz NOT NULL,
    requested_cells  integer NOT NULL,
    accepted_cells   integer NOT NULL,
    noop_cells       integer NOT NULL,
    rejected         jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX write_batches_property ON write_batches (property_id, created_at DESC);

CREATE TABLE idempotency_keys (
    property_id  bigint NOT NULL REFERENCES properties (id),
    route        text NOT NULL,
    key          text NOT NULL,
    body_hash    bytea NOT NULL,
    state        text NOT NULL CHECK (state IN ('in_flight', 'done')),
    status       integer,
    response     jsonb,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (property_id, route, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
