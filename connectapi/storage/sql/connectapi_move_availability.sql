-- Moving a booking's rooms in or out of the inventory, as one function: called on its own
-- when a booking is cancelled, and inside the statement that writes a new booking (one
-- round trip fewer under the property's lock, which every booking of a property waits on).
--
-- Adds deltas[i] rooms of room type ids[i] on nights[i] (negative: sold). A night without a
-- cell starts from bases[i] (the room type's count). Every moved cell gets a new version
-- and no batch, so it is dirty for the inventory drain and done for the batch that wrote
-- it last. The cells' check constraint (available >= 0) refuses a sale below zero. The
-- inventory events are the caller's to write.
CREATE OR REPLACE FUNCTION connectapi_move_availability(
    p_property bigint, ids bigint[], nights date[], deltas integer[], bases integer[]
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    UPDATE availability_cells c
    SET available = c.available + w.delta, version = nextval('ari_versions'), last_batch_id = NULL
    FROM unnest(ids, nights, deltas) AS w (id, night, delta)
    WHERE c.room_type_id = w.id AND c.night = w.night AND c.property_id = p_property;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved < cardinality(ids) THEN
        INSERT INTO availability_cells (property_id, room_type_id, night, available, version, pushed_version)
        SELECT p_property, w.id, w.night, w.base + w.delta, nextval('ari_versions'), 0
        FROM unnest(ids, nights, deltas, bases) AS w (id, night, delta, base)
        ON CONFLICT (property_id, room_type_id, night) DO NOTHING;
    END IF;
    RETURN cardinality(ids);
END $$;
