-- Booking ids, booking room ids and PMS references tell nothing of other properties
-- (issue 41, docs/decisions/0127-booking-ids-that-tell-nothing.md). Before, each came from
-- one sequence for the whole record (`PMS-2-000008`, bookingId 8): any key holder learned
-- how many bookings the service held, and a test key its twin's internal id.
-- functions: connectapi_new_id, connectapi_next_booking_numbers

-- A key per kind of id, made on first use (connectapi_new_id), carried by backups.
CREATE TABLE id_keys (
    kind    text PRIMARY KEY,
    secret  text NOT NULL
);
ALTER TABLE bookings ALTER COLUMN id SET DEFAULT connectapi_new_id('bookings');
CREATE SEQUENCE booking_room_ids;
SELECT setval('booking_room_ids', coalesce((SELECT max(id) FROM booking_rooms), 0) + 1, false);
ALTER TABLE booking_rooms ALTER COLUMN id DROP IDENTITY IF EXISTS;
ALTER TABLE booking_rooms ALTER COLUMN id SET DEFAULT connectapi_new_id('booking_rooms');

-- The last number of each property's references. A property's earlier references carried
-- the record's ids: its numbers go on above the largest of them, so none repeats.
CREATE TABLE booking_numbers (
    property_id  bigint PRIMARY KEY REFERENCES properties (id),
    last_number  bigint NOT NULL CHECK (last_number >= 0)
);
INSERT INTO booking_numbers (property_id, last_number)
    SELECT property_id, max(id) FROM bookings GROUP BY property_id;

-- The run of bookings' lock now hands out ids and reference numbers of these kinds, and the
-- live property and mode a reference names (connectapi_lock_for_bookings.sql).
DROP FUNCTION IF EXISTS connectapi_lock_for_bookings(bigint, text[], bigint[], date, date, integer);
