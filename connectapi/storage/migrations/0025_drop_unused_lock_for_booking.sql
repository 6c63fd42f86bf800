-- 0009's function, replaced by connectapi_lock_for_bookings (0012, 0013) and called by
-- nothing since: a reader of the schema should find each function once, in use.
DROP FUNCTION IF EXISTS connectapi_lock_for_booking(bigint, text, bigint[], date, date);
