-- Every change that alters how a request authenticates is announced, so that every
-- process's cache of keys forgets it: the triggers below call the function, in
-- storage/sql/connectapi_notify_auth_change.sql (applied before this migration runs).
-- functions: connectapi_notify_auth_change

-- last_used_at is left out on purpose: it changes on use, not on what a key may do.
CREATE TRIGGER api_keys_auth_change
    AFTER UPDATE OF property_id, digest, scopes, allowlist, revoked_at, replaced_by OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION connectapi_notify_auth_change();

CREATE TRIGGER properties_auth_change
    AFTER UPDATE OR DELETE ON properties
    FOR EACH STATEMENT EXECUTE FUNCTION connectapi_notify_auth_change();
