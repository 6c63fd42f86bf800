-- PATCH /bookings/{id}: a booking's revision (1 at creation, one more per change: a
-- modification, a cancellation, a check-in) and when it last changed. A booking never
-- changed since its creation keeps modified_at NULL and is read as changed at creation,
-- so the inserts of earlier versions (and the OTA intake's) need not name the columns.
ALTER TABLE bookings ADD COLUMN revision integer NOT NULL DEFAULT 1 CHECK (revision >= 1),
                     ADD COLUMN modified_at timestamptz;

-- The changes made before revisions were kept count as they would have.
UPDATE bookings
SET revision = 1 + (cancelled_at IS NOT NULL)::integer + (checked_in_at IS NOT NULL)::integer,
    modified_at = GREATEST(cancelled_at, checked_in_at)
WHERE source = 'api' AND (cancelled_at IS NOT NULL OR checked_in_at IS NOT NULL);
