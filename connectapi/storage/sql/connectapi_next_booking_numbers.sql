-- The first of `p_count` numbers of a property's PMS references (migration 0030), made under
-- the property's lock with its bookings: numbered per property, so that a reference tells
-- nothing of other properties. A number drawn for a booking that was then refused is
-- passed over. Kept apart from `properties`, whose every update tells each process to
-- forget its cached keys.
CREATE OR REPLACE FUNCTION connectapi_next_booking_numbers(p_property bigint, p_count integer)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_last bigint;
BEGIN
    INSERT INTO booking_numbers AS n (property_id, last_number) VALUES (p_property, p_count)
        ON CONFLICT (property_id) DO UPDATE SET last_number = n.last_number + p_count
        RETURNING n.last_number INTO v_last;
    RETURN v_last - p_count + 1;
END $$;
