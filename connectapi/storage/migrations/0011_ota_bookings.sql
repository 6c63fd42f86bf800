-- OTA bookings from the channel manager: every revision pulled from its feed, kept as it
-- came, and the bookings they make (in `bookings`, source 'ota', never shown to the API).

-- An OTA guest may come without a phone; an OTA booking may be free (a voucher stay).
ALTER TABLE guests ALTER COLUMN phone DROP NOT NULL;
ALTER TABLE bookings ALTER COLUMN guest_phone DROP NOT NULL;
ALTER TABLE bookings DROP CONSTRAINT bookings_total_minor_check;
ALTER TABLE bookings ADD CONSTRAINT bookings_total_minor_check CHECK (total_minor >= 0);
ALTER TABLE booking_rooms DROP CONSTRAINT booking_rooms_nightly_minor_check;
ALTER TABLE booking_rooms ADD CONSTRAINT booking_rooms_nightly_minor_check CHECK (nightly_minor >= 0);

-- What an OTA booking was last made of: the revision applied last (revisions come out of
-- order; an older one than this is stale) and the booking as the last event told it, so
-- the next `modified` event can say what changed.
CREATE TABLE ota_bookings (
    booking_id        bigint PRIMARY KEY REFERENCES bookings (id),
    property_id       bigint NOT NULL REFERENCES properties (id),
    cm_booking_id     text NOT NULL,
    last_revision_at  timestamptz NOT NULL,
    last_revision_seq bigint NOT NULL,
    told             jsonb NOT NULL,
    UNIQUE (property_id, cm_booking_id)
);

-- state: received (stored, not yet applied), applied, stale (older than what was applied),
-- unmapped (names an id the property does not map: kept, flagged, the owner told),
-- refused (could not be applied, e.g. cancelling a checked-in booking: the owner told).
-- A revision is acknowledged to the channel manager only once it is no longer 'received'.
CREATE TABLE ota_revisions (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    system_id       text NOT NULL UNIQUE,  -- a repeat of a system_id is the same revision again
    property_id     bigint NOT NULL REFERENCES properties (id),
    cm_booking_id   text NOT NULL,
    revised_at      timestamptz NOT NULL,  -- the channel manager's inserted_at
    payload         jsonb NOT NULL,
    state           text NOT NULL CHECK (state IN ('received', 'applied', 'stale', 'unmapped', 'refused')),
    note            text,
    booking_id      bigint REFERENCES bookings (id),
    received_at     timestamptz NOT NULL,
    settled_at      timestamptz,
    acked_at        timestamptz
);
CREATE INDEX ota_revisions_received ON ota_revisions (seq) WHERE state = 'received';
CREATE INDEX ota_revisions_unacked ON ota_revisions (seq) WHERE state <> 'received' AND acked_at IS NULL;
CREATE INDEX ota_revisions_property ON ota_revisions (property_id, seq);
