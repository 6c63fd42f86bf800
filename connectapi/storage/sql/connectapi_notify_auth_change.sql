-- Every change that alters how a request authenticates is announced, so that every
-- process's cache of keys forgets it. pg_notify is delivered on commit. The triggers that
-- call it, on api_keys and properties, are migration 0002's (and 0005's).
CREATE OR REPLACE FUNCTION connectapi_notify_auth_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('connectapi_auth', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;
