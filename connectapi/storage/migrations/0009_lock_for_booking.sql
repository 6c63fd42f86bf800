-- Taking a property's lock for a booking and reading what the booking needs, in one round
-- trip. The lock and the reads must be separate statements: a statement that waited for
-- the lock keeps the snapshot it started with and would miss what the booking before it
-- committed. A VOLATILE function takes a fresh snapshot for each statement it runs, so
-- the reads below see everything committed before the lock was granted.
CREATE FUNCTION connectapi_lock_for_booking(
    p_property bigint, p_reference text, p_room_types bigint[], p_first date, p_last date,
    OUT o_name text, OUT o_currency text, OUT o_timezone text, OUT o_owner_email text,
    OUT o_guest_confirmation boolean, OUT o_channel_manager boolean, OUT o_earlier bigint,
    OUT o_room_types jsonb, OUT o_rate_plans jsonb, OUT o_held jsonb, OUT o_next_id bigint
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM properties WHERE id = p_property FOR NO KEY UPDATE;
    SELECT p.name, p.currency, p.timezone, p.owner_email, p.guest_confirmation, p.channel_manager,
           (SELECT b.id FROM bookings b WHERE b.property_id = p.id AND b.external_reference = p_reference),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(r.id, r.name, r.max_adults, r.max_occupancy, r.rooms)
                                      ORDER BY r.id), '[]')
            FROM room_types r WHERE r.property_id = p.id),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(rp.id, rp.room_type_id, rp.name, rp.meal_plan, rp.min_rate,
                                                        rp.max_rate) ORDER BY rp.id), '[]')
            FROM rate_plans rp WHERE rp.property_id = p.id),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(c.room_type_id, c.night, c.available)), '[]')
            FROM availability_cells c
            WHERE c.property_id = p.id AND c.room_type_id = ANY(p_room_types) AND c.night BETWEEN p_first AND p_last),
           nextval('booking_ids')
    INTO o_name, o_currency, o_timezone, o_owner_email, o_guest_confirmation, o_channel_manager, o_earlier,
         o_room_types, o_rate_plans, o_held, o_next_id
    FROM properties p WHERE p.id = p_property;
END $$;
