-- The PMS: guests, bookings and their rooms, folios, the activity log, inventory and domain
-- events, and the owner's e-mail outbox.

CREATE TABLE guests (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id   bigint NOT NULL REFERENCES properties (id),
    phone         text NOT NULL,  -- normalised: '+' and digits only
    name          text NOT NULL,
    email         text,
    notes         text,
    created_at    timestamptz NOT NULL,
    UNIQUE (property_id, phone)
);

-- source: 'api' (POST /bookings), 'desk' (the front desk), 'ota' (the channel manager).
-- Only 'api' bookings are visible to the Connect API.
-- Ids are drawn before the insert: the PMS reference is made from the id.
CREATE SEQUENCE booking_ids;
CREATE TABLE bookings (
    id                  bigint PRIMARY KEY DEFAULT nextval('booking_ids'),
    property_id         bigint NOT NULL REFERENCES properties (id),
    source              text NOT NULL CHECK (source IN ('api', 'desk', 'ota')),
    key_id              bigint REFERENCES api_keys (id),
    reference           text NOT NULL UNIQUE,
    external_reference  text,
    status              text NOT NULL CHECK (status IN ('UPCOMING', 'CHECKED_IN', 'CANCELLED')),
    check_in            date NOT NULL,
    check_out           date NOT NULL CHECK (check_out > check_in),
    currency            char(3) NOT NULL,
    guest_id            bigint NOT NULL REFERENCES guests (id),
    -- the guest as this booking named them (the guests row is shared by phone)
    guest_name          text NOT NULL,
    guest_phone         text NOT NULL,
    guest_email         text,
    total_minor         bigint NOT NULL CHECK (total_minor > 0),
    notes               text,
    created_at          timestamptz NOT NULL,
    cancelled_at        timestamptz,
    cancel_reason       text,
    checked_in_at       timestamptz
);
-- The repeat check, and the last word when two processes race on one reference.
CREATE UNIQUE INDEX bookings_external_reference ON bookings (property_id, external_reference)
    WHERE external_reference IS NOT NULL;
CREATE INDEX bookings_api_created ON bookings (property_id, created_at DESC) WHERE source = 'api';

CREATE TABLE booking_rooms (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    booking_id     bigint NOT NULL REFERENCES bookings (id),
    position       integer NOT NULL,  -- the entry's index in the request
    room_type_id   bigint NOT NULL REFERENCES room_types (id),
    rate_plan_id   bigint REFERENCES rate_plans (id),
    meal_plan      text NOT NULL,
    adults         integer NOT NULL CHECK (adults >= 1),
    children       integer NOT NULL CHECK (children >= 0),
    nightly_minor  bigint NOT NULL CHECK (nightly_minor > 0),
    status         text NOT NULL CHECK (status IN ('UPCOMING', 'CHECKED_IN', 'CANCELLED')),
    UNIQUE (booking_id, position)
);

-- kind ROOM: one per night per room; MEAL: the board basis per night per room (included in
-- the rate, amount 0); PAYMENT: money collected by the caller's site.
CREATE TABLE folio_lines (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    booking_id       bigint NOT NULL REFERENCES bookings (id),
    booking_room_id  bigint REFERENCES booking_rooms (id),
    kind             text NOT NULL CHECK (kind IN ('ROOM', 'MEAL', 'PAYMENT')),
    night            date,
    description      text NOT NULL,
    amount_minor     bigint NOT NULL CHECK (amount_minor >= 0),
    method           text,
    payment_ref      text,
    created_at       timestamptz NOT NULL
);
CREATE INDEX folio_lines_booking ON folio_lines (booking_id);

CREATE TABLE activity_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id  bigint NOT NULL REFERENCES properties (id),
    booking_id   bigint REFERENCES bookings (id),
    key_id       bigint REFERENCES api_keys (id),
    action       text NOT NULL,
    detail       text NOT NULL,
    at           timestamptz NOT NULL
);
CREATE INDEX activity_log_property ON activity_log (property_id, at DESC);

-- What moved the inventory and why; the cells it touched are dirty for the drain.
CREATE TABLE inventory_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id   bigint NOT NULL REFERENCES properties (id),
    booking_id    bigint REFERENCES bookings (id),
    room_type_id  bigint NOT NULL REFERENCES room_types (id),
    first_night   date NOT NULL,
    last_night    date NOT NULL,
    delta         integer NOT NULL,
    reason        text NOT NULL,
    at            timestamptz NOT NULL
);
CREATE INDEX inventory_events_booking ON inventory_events (booking_id);

CREATE TABLE domain_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id  bigint NOT NULL REFERENCES properties (id),
    booking_id   bigint REFERENCES bookings (id),
    type         text NOT NULL,
    payload      jsonb NOT NULL,
    occurred_at  timestamptz NOT NULL
);
CREATE INDEX domain_events_property ON domain_events (property_id, occurred_at);

-- E-mails to send; a row is written in the transaction of what it tells, and a sender
-- delivers it afterwards, so a crash neither loses nor invents one.
CREATE TABLE notifications (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id  bigint NOT NULL REFERENCES properties (id),
    booking_id   bigint REFERENCES bookings (id),
    kind         text NOT NULL,
    to_address   text NOT NULL,
    subject      text NOT NULL,
    body         text NOT NULL,
    created_at   timestamptz NOT NULL,
    sent_at      timestamptz,
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text,
    next_attempt_at timestamptz
);
CREATE INDEX notifications_unsent ON notifications (created_at) WHERE sent_at IS NULL;
CREATE INDEX notifications_property ON notifications (property_id, created_at DESC);
