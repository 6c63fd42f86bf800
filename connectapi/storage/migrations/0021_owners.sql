-- The owners' console (issue 19): people with access to some properties, who log in with
-- an e-mail and a password. Secrets are kept as digests: setup links and session ids as
-- SHA-256 of the random value handed out, passwords as argon2id hashes.
CREATE TABLE owners (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL,  -- as given; compared lowercased
    name          text NOT NULL,
    password_hash text,           -- NULL until the owner chose one through a setup link
    disabled_at   timestamptz,
    created_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX owners_email ON owners (lower(email));

CREATE TABLE owner_properties (
    owner_id    bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    property_id bigint NOT NULL REFERENCES properties (id),
    PRIMARY KEY (owner_id, property_id)
);
CREATE INDEX owner_properties_property ON owner_properties (property_id);

CREATE TABLE owner_setup_links (
    digest     bytea PRIMARY KEY,
    owner_id   bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX owner_setup_links_owner ON owner_setup_links (owner_id);

CREATE TABLE owner_sessions (
    digest       bytea PRIMARY KEY,
    owner_id     bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    csrf         text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);
CREATE INDEX owner_sessions_owner ON owner_sessions (owner_id);

-- Failed logins by e-mail (whether or not it is an owner's), for the lockout.
CREATE TABLE owner_login_failures (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text NOT NULL,  -- lowercased
    at    timestamptz NOT NULL
);
CREATE INDEX owner_login_failures_email ON owner_login_failures (email, at);

-- An owner's setup e-mail belongs to no property.
ALTER TABLE notifications ALTER COLUMN property_id DROP NOT NULL;
