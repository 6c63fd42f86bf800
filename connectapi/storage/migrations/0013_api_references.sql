-- An external reference is the API's: its repeat check and its uniqueness cover API
-- bookings only, so a desk or OTA booking can never be replayed to an integrator, nor
-- stop an API booking from being made.
DROP INDEX bookings_external_reference;
CREATE UNIQUE INDEX bookings_external_reference ON bookings (property_id, external_reference)
    WHERE external_reference IS NOT NULL AND source = 'api';

-- connectapi_lock_for_bookings's repeat check covers API bookings only as well:
-- storage/sql/connectapi_lock_for_bookings.sql.
