-- What the channel manager holds for each cell, so a cell changed and changed back before a
-- push is dropped instead of sent; NULL: unknown (never pushed).
ALTER TABLE availability_cells ADD COLUMN pushed_available integer;
UPDATE availability_cells SET pushed_available = available WHERE version = pushed_version;
ALTER TABLE rate_cells ADD COLUMN pushed_rate_minor bigint;
ALTER TABLE restriction_cells ADD COLUMN pushed_fields jsonb;

-- The channel-manager side of each property, for GET /sync and the batches' lastError.
ALTER TABLE properties ADD COLUMN cm_last_error text;
ALTER TABLE properties ADD COLUMN cm_last_push_at timestamptz;
ALTER TABLE properties ADD COLUMN cm_last_outcome text;

-- The key cache holds a property's own fields; the pipeline's bookkeeping (cm_*) and the
-- channel mapping must not clear it on every push.
DROP TRIGGER properties_auth_change ON properties;
CREATE TRIGGER properties_auth_change
    AFTER UPDATE OF name, timezone, currency, channel_manager, pms, pms_entitled, status, owner_email,
                    bookings_per_day, guest_confirmation OR DELETE ON properties
    FOR EACH STATEMENT EXECUTE FUNCTION connectapi_notify_auth_change();
