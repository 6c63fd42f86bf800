-- A channel-manager booking id is one booking of one property. A revision of a booking
-- already known under another property (applied there, or waiting there) is kept as a
-- clash, refused and shown for review, never made into a second booking at the property
-- it names now, whose owner and integrator would get the guest (an outside review of
-- wave 4; docs/decisions/0149-a-booking-id-is-one-propertys.md). These let the intake
-- look the id up as it stores each revision.
CREATE INDEX IF NOT EXISTS ota_bookings_cm_booking_id ON ota_bookings (cm_booking_id);
CREATE INDEX IF NOT EXISTS ota_revisions_cm_booking_id ON ota_revisions (cm_booking_id) WHERE clash_of IS NULL;
