-- One ARI write, whole, in one statement (issue 43, docs/decisions/0132-a-keyed-write-in-one-statement.md):
-- the property's lock, the catalog check, the `cells` budget, the idempotency key, the
-- cells, the batch and the outcome kept under the key, committed together or not at all.
-- Before, a keyed PUT /rates made up to ten round trips to the record; now one, beside
-- the request's budgets.
--
-- The writer checked the write against its copy of the catalog (room types, rate plans
-- and their policies, the currency) and sends that copy's version: a version that moved
-- meanwhile answers 'stale', having done nothing, and the writer checks again against
-- the catalog read afresh. Then the write is charged its cells (refused: 'budget', with
-- the window as connectapi_charge_budgets counts it; nothing else is done). Then a key is
-- claimed as in storage/idempotency.py: one held already answers 'kept' with what holds
-- it (the cells stay charged: a repeat costs its cells, as it always did). A key whose
-- write runs in another transaction now (its advisory lock, taken first) answers 'kept'
-- in flight at once, charged nothing. A write refused
-- whole by the writer's checks (`p_refusal`, the outcome kept under the key) answers
-- 'refused'. Otherwise the cells that differ from the record are written, marked dirty
-- (restrictions merged field by field into the record's: a field not sent stays), the
-- batch recorded, the outcome kept under the key with its counts, and 'written' answered
-- with them.
--
-- The cells come as arrays in step: ids (room types or rate plans), nights, and either
-- values (available rooms, rates in minor units) or, for restrictions, one JSON object
-- per cell with the fields sent (a field sent as null clears it); rates also carry each
-- cell's occupancy (0: a per-room plan's one price; else the adult count it prices).
CREATE OR REPLACE FUNCTION connectapi_write_cells(
    p_property bigint, p_catalog bigint, p_resource text,
    p_batch uuid, p_key_id bigint, p_at timestamptz, p_requested integer,
    p_ids bigint[], p_nights date[], p_values bigint[], p_occupancies smallint[], p_restrictions jsonb,
    p_rejected jsonb, p_refusal jsonb, p_outcome jsonb,
    p_budget_now double precision, p_cells_subject text, p_cells_limit integer, p_cells_window double precision,
    p_route text, p_key text, p_body_hash bytea, p_replace_before timestamptz, p_stale_before timestamptz,
    p_trace_parent text
) RETURNS TABLE (
    answer text, accepted integer, noop integer, catalog bigint,
    used bigint, reset_after double precision, wait double precision,
    same_body boolean, kept_state text, kept_status integer, kept_response jsonb
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_twin_of bigint;
    v_catalog bigint;
    v_claimed boolean;
    v_written integer;
    v_cells integer := coalesce(array_length(p_ids, 1), 0);
    v_charge record;
    v_kept record;
BEGIN
    -- A twin of a write running elsewhere (its key's lock held) hears so at once, rather
    -- than wait for the property's lock behind it; nothing is charged.
    IF p_key IS NOT NULL
       -- Two 32-bit keys: a space apart from the one-key form the migrations' lock uses.
       AND NOT pg_try_advisory_xact_lock(hashtext('idempotency/' || p_property), hashtext(p_route || '/' || p_key))
    THEN
        answer := 'kept';
        same_body := true;
        kept_state := 'in_flight';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT p.twin_of INTO v_twin_of FROM properties p WHERE p.id = p_property FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no property %', p_property USING ERRCODE = 'no_data_found';
    END IF;
    SELECT coalesce(sum(v.version), 0) INTO v_catalog FROM catalog_versions v
    WHERE v.property_id IN (p_property, coalesce(v_twin_of, p_property));
    IF v_catalog IS DISTINCT FROM p_catalog THEN
        answer := 'stale';
        catalog := v_catalog;
        RETURN NEXT;
        RETURN;
    END IF;

    SELECT * INTO v_charge FROM connectapi_charge_budgets(
        p_budget_now, ARRAY[0], ARRAY[p_cells_subject], ARRAY[1], ARRAY[p_cells_limit], ARRAY[p_cells_window],
        ARRAY[p_requested], ARRAY[p_requested], ARRAY[NULL::integer]);
    used := v_charge.used;
    reset_after := v_charge.reset_after;
    wait := v_charge.wait;
    IF v_charge.verdict = 'refused' THEN
        answer := 'budget';
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_key IS NOT NULL THEN
        INSERT INTO idempotency_keys AS k (property_id, route, key, body_hash, state, created_at)
        VALUES (p_property, p_route, p_key, p_body_hash, 'in_flight', p_at)
        ON CONFLICT (property_id, route, key) DO UPDATE
            SET body_hash = excluded.body_hash, state = 'in_flight', status = NULL, response = NULL,
                created_at = excluded.created_at
            WHERE k.created_at <= p_replace_before OR (k.state = 'in_flight' AND k.created_at <= p_stale_before)
        RETURNING true INTO v_claimed;
        IF v_claimed IS NULL THEN
            -- Read in a snapshot of this statement's own: the insert may have waited for it.
            SELECT k.body_hash = p_body_hash AS same, k.state, k.status, k.response INTO v_kept
            FROM idempotency_keys k WHERE k.property_id = p_property AND k.route = p_route AND k.key = p_key;
            answer := 'kept';
            same_body := coalesce(v_kept.same, true);
            kept_state := coalesce(v_kept.state, 'in_flight');  -- released meanwhile: in flight as far as we know
            kept_status := v_kept.status;
            kept_response := v_kept.response;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    IF p_refusal IS NOT NULL THEN
        IF p_key IS NOT NULL THEN
            UPDATE idempotency_keys k SET state = 'done', response = p_refusal
            WHERE k.property_id = p_property AND k.route = p_route AND k.key = p_key;
        END IF;
        answer := 'refused';
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_resource = 'availability' THEN
        WITH written AS (
            INSERT INTO availability_cells AS c (property_id, room_type_id, night, available, version,
                                                 pushed_version, last_batch_id)
            SELECT p_property, w.id, w.night, w.value, nextval('ari_versions'), 0, p_batch
            FROM unnest(p_ids, p_nights, p_values) AS w (id, night, value)
            ON CONFLICT (property_id, room_type_id, night) DO UPDATE
            SET available = EXCLUDED.available, version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id
            WHERE c.available IS DISTINCT FROM EXCLUDED.available
            RETURNING 1)
        SELECT count(*) INTO v_written FROM written;
    ELSIF p_resource = 'rates' THEN
        WITH written AS (
            INSERT INTO rate_cells AS c (property_id, rate_plan_id, night, occupancy, rate_minor, version,
                                         last_batch_id)
            SELECT p_property, w.id, w.night, w.occupancy, w.value, nextval('ari_versions'), p_batch
            FROM unnest(p_ids, p_nights, p_occupancies, p_values) AS w (id, night, occupancy, value)
            ON CONFLICT (property_id, rate_plan_id, night, occupancy) DO UPDATE
            SET rate_minor = EXCLUDED.rate_minor, version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id
            WHERE c.rate_minor IS DISTINCT FROM EXCLUDED.rate_minor
            RETURNING 1)
        SELECT count(*) INTO v_written FROM written;
    ELSIF p_resource = 'restrictions' THEN
        -- The record's fields with the sent ones replaced; a cell the record lacks holds no
        -- opinion on anything. Only cells that end different are written. Cast from JSON
        -- itself, so only a JSON boolean is a boolean and only a number an integer.
        WITH sent AS (
            SELECT w.id, w.night, f.value AS f
            FROM unnest(p_ids, p_nights) WITH ORDINALITY AS w (id, night, n)
            JOIN jsonb_array_elements(p_restrictions) WITH ORDINALITY AS f (value, n) ON f.n = w.n
        ), merged AS (
            SELECT s.id, s.night,
                   CASE WHEN s.f ? 'stopSell' THEN nullif(s.f -> 'stopSell', 'null')::boolean ELSE c.stop_sell END AS stop_sell,
                   CASE WHEN s.f ? 'closedToArrival' THEN nullif(s.f -> 'closedToArrival', 'null')::boolean
                        ELSE c.closed_to_arrival END AS closed_to_arrival,
                   CASE WHEN s.f ? 'closedToDeparture' THEN nullif(s.f -> 'closedToDeparture', 'null')::boolean
                        ELSE c.closed_to_departure END AS closed_to_departure,
                   CASE WHEN s.f ? 'minStayArrival' THEN nullif(s.f -> 'minStayArrival', 'null')::integer
                        ELSE c.min_stay_arrival END AS min_stay_arrival,
                   CASE WHEN s.f ? 'minStayThrough' THEN nullif(s.f -> 'minStayThrough', 'null')::integer
                        ELSE c.min_stay_through END AS min_stay_through,
                   CASE WHEN s.f ? 'maxStay' THEN nullif(s.f -> 'maxStay', 'null')::integer ELSE c.max_stay END AS max_stay,
                   ROW(c.stop_sell, c.closed_to_arrival, c.closed_to_departure, c.min_stay_arrival,
                       c.min_stay_through, c.max_stay) AS before
            FROM sent s
            LEFT JOIN restriction_cells c ON c.property_id = p_property AND c.rate_plan_id = s.id AND c.night = s.night
        ), written AS (
            INSERT INTO restriction_cells AS c (property_id, rate_plan_id, night, stop_sell, closed_to_arrival,
                                                closed_to_departure, min_stay_arrival, min_stay_through, max_stay,
                                                version, last_batch_id)
            SELECT p_property, m.id, m.night, m.stop_sell, m.closed_to_arrival, m.closed_to_departure,
                   m.min_stay_arrival, m.min_stay_through, m.max_stay, nextval('ari_versions'), p_batch
            FROM merged m
            WHERE ROW(m.stop_sell, m.closed_to_arrival, m.closed_to_departure, m.min_stay_arrival,
                      m.min_stay_through, m.max_stay) IS DISTINCT FROM m.before
            ON CONFLICT (property_id, rate_plan_id, night) DO UPDATE
            SET stop_sell = EXCLUDED.stop_sell, closed_to_arrival = EXCLUDED.closed_to_arrival,
                closed_to_departure = EXCLUDED.closed_to_departure, min_stay_arrival = EXCLUDED.min_stay_arrival,
                min_stay_through = EXCLUDED.min_stay_through, max_stay = EXCLUDED.max_stay,
                version = EXCLUDED.version, last_batch_id = EXCLUDED.last_batch_id
            RETURNING 1)
        SELECT count(*) INTO v_written FROM written;
    ELSE
        RAISE EXCEPTION 'not a resource: %', p_resource;
    END IF;

    INSERT INTO write_batches (id, property_id, key_id, resource, created_at, requested_cells, accepted_cells,
                               noop_cells, rejected, trace_parent)
    VALUES (p_batch, p_property, p_key_id, p_resource, p_at, p_requested, v_written, v_cells - v_written,
            p_rejected, p_trace_parent);
    IF p_key IS NOT NULL THEN
        UPDATE idempotency_keys k
        SET state = 'done',
            response = jsonb_set(jsonb_set(p_outcome, '{result,acceptedCells}', to_jsonb(v_written)),
                                 '{result,noopCells}', to_jsonb(v_cells - v_written))
        WHERE k.property_id = p_property AND k.route = p_route AND k.key = p_key;
    END IF;
    answer := 'written';
    accepted := v_written;
    noop := v_cells - v_written;
    RETURN NEXT;
END;
$$;
