-- Outbound webhooks: endpoints, the events the service emits, and one delivery per event
-- and endpoint. The queue lives here, so deliveries survive a restart.

CREATE TABLE webhook_endpoints (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id      bigint NOT NULL REFERENCES properties (id),
    url              text NOT NULL,
    description      text,
    status           text NOT NULL CHECK (status IN ('active', 'paused')),
    secret           text NOT NULL,  -- needed to sign; never shown again after registration
    previous_secret  text,           -- signs too for 24 hours after a rotation
    rotated_at       timestamptz,
    failing_since    timestamptz,
    paused_at        timestamptz,
    created_at       timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_property ON webhook_endpoints (property_id);

CREATE TABLE webhook_events (
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- order of occurrence
    id           text PRIMARY KEY,                            -- evt_<uuid>, the webhook-id
    property_id  bigint NOT NULL REFERENCES properties (id),
    type         text NOT NULL,
    body         text NOT NULL,                               -- the envelope exactly as signed and sent
    occurred_at  timestamptz NOT NULL
);
CREATE INDEX webhook_events_property ON webhook_events (property_id, occurred_at);

-- pending until a 2xx; an endpoint gets its deliveries in event order, one at a time.
CREATE TABLE webhook_deliveries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id       bigint NOT NULL REFERENCES webhook_endpoints (id),
    event_id          text NOT NULL REFERENCES webhook_events (id),
    event_seq         bigint NOT NULL,
    status            text NOT NULL CHECK (status IN ('pending', 'delivered')),
    attempts          integer NOT NULL DEFAULT 0,
    first_attempt_at  timestamptz,
    next_attempt_at   timestamptz NOT NULL,
    response_status   integer,
    duration_ms       integer,
    last_error        text,
    delivered_at      timestamptz,
    created_at        timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, event_seq, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);
