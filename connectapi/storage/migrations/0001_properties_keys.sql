-- Properties, their catalog, availability cells, and API keys.

CREATE TABLE properties (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                text NOT NULL,
    timezone            text NOT NULL,
    currency            char(3) NOT NULL,
    channel_manager     boolean NOT NULL,
    pms                 boolean NOT NULL,
    pms_entitled        boolean NOT NULL DEFAULT false,
    status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleted', 'demo')),
    owner_email         text,
    bookings_per_day    integer CHECK (bookings_per_day > 0),
    guest_confirmation  boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE room_types (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id    bigint NOT NULL REFERENCES properties (id),
    name           text NOT NULL,
    max_adults     integer NOT NULL CHECK (max_adults >= 1),
    max_occupancy  integer NOT NULL CHECK (max_occupancy >= max_adults),
    rooms          integer NOT NULL CHECK (rooms >= 0),
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX room_types_property ON room_types (property_id);

CREATE TABLE rate_plans (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id   bigint NOT NULL REFERENCES properties (id),
    room_type_id  bigint NOT NULL REFERENCES room_types (id),
    name          text NOT NULL,
    meal_plan     text NOT NULL,
    min_rate      integer CHECK (min_rate > 0),
    max_rate      integer CHECK (max_rate > 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (min_rate IS NULL OR max_rate IS NULL OR min_rate <= max_rate)
);
CREATE INDEX rate_plans_property ON rate_plans (property_id);

-- One row per room type and night. Dirty while version > pushed_version.
CREATE TABLE availability_cells (
    property_id     bigint NOT NULL REFERENCES properties (id),
    room_type_id    bigint NOT NULL REFERENCES room_types (id),
    night           date NOT NULL,
    available       integer NOT NULL CHECK (available >= 0),
    version         bigint NOT NULL DEFAULT 1,
    pushed_version  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (room_type_id, night)
);
CREATE INDEX availability_cells_dirty ON availability_cells (property_id) WHERE version > pushed_version;

CREATE TABLE api_keys (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id   bigint NOT NULL REFERENCES properties (id),
    label         text NOT NULL,
    digest        bytea NOT NULL UNIQUE CHECK (length(digest) = 32),
    prefix        text NOT NULL,
    scopes        text[] NOT NULL,
    allowlist     text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    replaced_by   bigint REFERENCES api_keys (id)
);
CREATE INDEX api_keys_property_live ON api_keys (property_id) WHERE revoked_at IS NULL;

-- Requests refused by a key's allowlist, shown to the owner.
CREATE TABLE allowlist_refusals (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id       bigint NOT NULL REFERENCES api_keys (id),
    property_id  bigint NOT NULL REFERENCES properties (id),
    address      text NOT NULL,
    at           timestamptz NOT NULL
);
CREATE INDEX allowlist_refusals_property ON allowlist_refusals (property_id, at DESC);
