-- A new id for a booking or a booking room (migration 0030): the next value of the kind's
-- sequence, permuted by a keyed Feistel network over 52 bits and set above 2^32, so that
-- an id tells nothing of how many bookings the record holds or when one was made, and
-- never collides with another (a permutation of distinct sequence values), nor with the
-- small ids made before (all under 2^32). The largest, 2^32 + 2^52 - 1, is exact in a
-- JavaScript number.
--
-- The key of each kind is kept in `id_keys`, whose rows a backup carries: a restored record
-- goes on with the same permutation. Each start makes the keys a record lacks
-- (storage.migrations.make_id_keys); a key still missing is made here, in the caller's
-- transaction. An id already taken (a key lost and made again) is passed over.
CREATE OR REPLACE FUNCTION connectapi_new_id(p_kind text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    half CONSTANT bigint := 67108863;  -- 2^26 - 1
    v_secret text;
    v_n bigint;
    v_left bigint;
    v_right bigint;
    v_next bigint;
    v_id bigint;
BEGIN
    IF p_kind NOT IN ('bookings', 'booking_rooms') THEN
        RAISE EXCEPTION 'connectapi_new_id: no ids of kind %', p_kind;
    END IF;
    SELECT k.secret INTO v_secret FROM id_keys k WHERE k.kind = p_kind;
    IF v_secret IS NULL THEN
        INSERT INTO id_keys (kind, secret)
            VALUES (p_kind, md5(gen_random_uuid()::text) || md5(gen_random_uuid()::text))
            ON CONFLICT (kind) DO NOTHING;
        SELECT k.secret INTO v_secret FROM id_keys k WHERE k.kind = p_kind;
    END IF;
    LOOP
        v_n := nextval(CASE p_kind WHEN 'bookings' THEN 'booking_ids' ELSE 'booking_room_ids' END);
        v_left := (v_n >> 26) & half;
        v_right := v_n & half;
        FOR i IN 1..4 LOOP
            v_next := v_left # (('x' || substr(md5(v_secret || ':' || i || ':' || v_right), 1, 7))::bit(28)::bigint
                                & half);
            v_left := v_right;
            v_right := v_next;
        END LOOP;
        v_id := 4294967296 + ((v_left << 26) | v_right);
        EXIT WHEN CASE p_kind WHEN 'bookings' THEN NOT EXISTS (SELECT FROM bookings b WHERE b.id = v_id)
                              ELSE NOT EXISTS (SELECT FROM booking_rooms r WHERE r.id = v_id) END;
    END LOOP;
    RETURN v_id;
END $$;
