-- Taking a property's lock once for a run of bookings queued together, and reading what
-- all of them need in the same round trip: the repeat check for every reference, the
-- catalog, the nights asked for over the run's whole span, and an id per booking. The
-- writer then makes each booking in one statement, keeping the counts it read up to date
-- itself; the cells' check constraint still refuses a sale below zero.
--
-- The lock and the reads must be separate statements: a statement that waited for the
-- lock keeps the snapshot it started with and would miss what the booking before it
-- committed. A VOLATILE function takes a fresh snapshot for each statement it runs, so
-- the reads below see everything committed before the lock was granted.
--
-- An external reference is the API's: the repeat check covers API bookings only (as the
-- unique index bookings_external_reference does, migration 0013), so a desk or OTA
-- booking can never be replayed to an integrator.
--
-- A test twin (migration 0026) has its live property's catalog: coalesce(twin_of, id).
--
-- Each booking asked for gets an id (connectapi_new_id) and a number of the property's
-- references (connectapi_next_booking_numbers, from o_first_number on), drawn under the
-- lock; a reference names the live property (o_live_id) and its mode (migration 0030).
CREATE OR REPLACE FUNCTION connectapi_lock_for_bookings(
    p_property bigint, p_references text[], p_room_types bigint[], p_first date, p_last date, p_count integer,
    OUT o_name text, OUT o_currency text, OUT o_timezone text, OUT o_owner_email text,
    OUT o_guest_confirmation boolean, OUT o_channel_manager boolean, OUT o_earlier jsonb,
    OUT o_room_types jsonb, OUT o_rate_plans jsonb, OUT o_held jsonb, OUT o_next_ids bigint[],
    OUT o_first_number bigint, OUT o_live_id bigint, OUT o_mode text
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM properties WHERE id = p_property FOR NO KEY UPDATE;
    o_first_number := connectapi_next_booking_numbers(p_property, p_count);
    SELECT p.name, p.currency, p.timezone, p.owner_email, p.guest_confirmation, p.channel_manager,
           (SELECT coalesce(jsonb_agg(jsonb_build_array(b.external_reference, b.id)), '[]')
            FROM bookings b WHERE b.property_id = p.id AND b.source = 'api'
                              AND b.external_reference = ANY(p_references)),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(r.id, r.name, r.max_adults, r.max_occupancy, r.rooms)
                                      ORDER BY r.id), '[]')
            FROM room_types r WHERE r.property_id = coalesce(p.twin_of, p.id)),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(rp.id, rp.room_type_id, rp.name, rp.meal_plan, rp.min_rate,
                                                        rp.max_rate, rp.sell_mode, r.max_adults) ORDER BY rp.id), '[]')
            FROM rate_plans rp JOIN room_types r ON r.id = rp.room_type_id
            WHERE rp.property_id = coalesce(p.twin_of, p.id)),
           (SELECT coalesce(jsonb_agg(jsonb_build_array(c.room_type_id, c.night, c.available)), '[]')
            FROM availability_cells c
            WHERE c.property_id = p.id AND c.room_type_id = ANY(p_room_types) AND c.night BETWEEN p_first AND p_last),
           ARRAY(SELECT connectapi_new_id('bookings') FROM generate_series(1, p_count)),
           coalesce(p.twin_of, p.id), p.mode
    INTO o_name, o_currency, o_timezone, o_owner_email, o_guest_confirmation, o_channel_manager, o_earlier,
         o_room_types, o_rate_plans, o_held, o_next_ids, o_live_id, o_mode
    FROM properties p WHERE p.id = p_property;
END $$;
