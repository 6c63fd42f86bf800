-- Check and charge the budgets of one or more requests in one statement (counted in
-- budget_windows and budget_events, migration 0016's tables). A process gathers the asks
-- of the requests that arrive while its previous statement is out, and sends them
-- together; each request is still checked and charged on its own, in the order given,
-- exactly as if it came alone.
--
-- Items are grouped by request (`p_requests`, contiguous), and within a request checked
-- in the order given (the contract's order of gates); each belongs to a stage. A stage
-- whose items all fit is charged, and the next stage is checked; the first item that
-- does not fit refuses the request, and nothing of its stage or later ones is charged
-- (earlier stages stay charged: `ip` counts a request that `requests` refused).
--
-- Per item: `need` must fit (used + need <= limit; NULL: not checked, always charged),
-- `charge` is what is counted. `fallback`, when not NULL, is a smaller need: an item that
-- misses `need` but meets `fallback` is left uncharged and reported 'deferred' (the
-- share of `global` kept for good keys: docs/decisions/0061-share-of-global-kept-for-good-keys.md);
-- its refusal's wait is until `fallback` fits. A subject appears at most once in a stage.
-- A subject that is only checked (nothing to count) gets no row if it has none.
--
-- Answers one row per item: its verdict ('charged', 'deferred', 'refused' or 'unchecked'),
-- what its window counts after its request, the seconds until its oldest counted event
-- leaves (0 when empty), and for a refusal the seconds until `need` would fit.
--
-- Rows are locked in subject order, so two calls never wait on each other in a circle;
-- the call's instant is read once they are held (never before an event already counted).
CREATE OR REPLACE FUNCTION connectapi_charge_budgets(
    p_now double precision,  -- NULL: this server's clock, one clock for every process
    p_requests integer[], p_subjects text[], p_stages integer[], p_limits integer[],
    p_windows double precision[], p_needs integer[], p_charges integer[], p_fallbacks integer[]
) RETURNS TABLE (verdict text, used bigint, reset_after double precision, wait double precision)
LANGUAGE plpgsql
SET lock_timeout = '5s'  -- a hot row held that long means the record is in trouble: 503, retry
AS $$
#variable_conflict use_column
DECLARE
    v_now double precision;
    v_latest double precision := '-infinity';
    n integer := coalesce(array_length(p_subjects, 1), 0);
    m integer;
    -- Per distinct subject, in subject order: its count, oldest event, what this call adds.
    s_names text[];
    s_used bigint[];
    s_first double precision[];
    s_trimmed boolean[];
    s_add bigint[];
    s_window double precision[];
    s_counts boolean[];  -- some item of the call may count on it (else it is only checked)
    v_of integer[] := array_fill(0, ARRAY[n]);  -- each item's subject
    v_verdicts text[] := array_fill('unchecked'::text, ARRAY[n]);
    v_waits double precision[] := array_fill(NULL::double precision, ARRAY[n]);
    v_used bigint[] := array_fill(0::bigint, ARRAY[n]);
    v_resets double precision[] := array_fill(0::double precision, ARRAY[n]);
    v_count bigint;
    v_first double precision;
    v_last double precision;
    v_freed bigint;
    v_request integer;
    v_request_start integer;
    v_stage integer;
    v_stage_start integer;
    v_refused boolean;
    v_must_free bigint;
    v_wait double precision;
    i integer;
    j integer;
    k integer;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(s ORDER BY s) INTO s_names FROM (SELECT DISTINCT s FROM unnest(p_subjects) AS s) d;
    m := array_length(s_names, 1);
    s_used := array_fill(0::bigint, ARRAY[m]);
    s_first := array_fill(NULL::double precision, ARRAY[m]);
    s_trimmed := array_fill(false, ARRAY[m]);
    s_add := array_fill(0::bigint, ARRAY[m]);
    s_window := array_fill(0::double precision, ARRAY[m]);
    s_counts := array_fill(false, ARRAY[m]);
    FOR i IN 1..n LOOP
        k := array_position(s_names, p_subjects[i]);
        v_of[i] := k;
        s_window[k] := p_windows[i];
        IF p_charges[i] > 0 THEN
            s_counts[k] := true;
        END IF;
    END LOOP;

    -- Lock every subject's row, in subject order: made where new if the call may count on it.
    FOR k IN 1..m LOOP
        LOOP
            SELECT w.used, w.first_at, w.last_at INTO v_count, v_first, v_last
            FROM budget_windows w WHERE w.subject = s_names[k] FOR UPDATE;
            EXIT WHEN FOUND;
            IF NOT s_counts[k] THEN
                v_count := 0;  -- nothing counted, nothing to lock: a check only
                v_first := NULL;
                EXIT;
            END IF;
            INSERT INTO budget_windows (subject, used, window_seconds, first_at, last_at)
            VALUES (s_names[k], 0, s_window[k], NULL, '-infinity') ON CONFLICT (subject) DO NOTHING;
        END LOOP;
        s_used[k] := v_count;
        s_first[k] := v_first;
        v_latest := greatest(v_latest, v_last);
    END LOOP;

    -- Now, with the rows held: never before an event already counted on them.
    v_now := coalesce(p_now, greatest(extract(epoch FROM clock_timestamp()), v_latest));

    -- Trim what left each window.
    FOR k IN 1..m LOOP
        IF s_first[k] IS NOT NULL AND s_first[k] <= v_now - s_window[k] THEN
            WITH gone AS (
                DELETE FROM budget_events e
                WHERE e.subject = s_names[k] AND e.at <= v_now - s_window[k]
                RETURNING e.amount
            )
            SELECT coalesce(sum(amount), 0) INTO v_freed FROM gone;
            s_used[k] := s_used[k] - v_freed;
            SELECT min(e.at) INTO v_first FROM budget_events e WHERE e.subject = s_names[k];
            s_first[k] := v_first;
            s_trimmed[k] := true;
        END IF;
    END LOOP;

    -- Each request in turn; within it, stage by stage, a stage charged only when all of it fits.
    i := 1;
    WHILE i <= n LOOP
        v_request := p_requests[i];
        v_request_start := i;
        v_refused := false;
        WHILE i <= n AND p_requests[i] = v_request LOOP
            v_stage := p_stages[i];
            v_stage_start := i;
            WHILE i <= n AND p_requests[i] = v_request AND p_stages[i] = v_stage LOOP
                k := v_of[i];
                IF v_refused THEN
                    NULL;  -- past the refusal: unchecked
                ELSIF p_needs[i] IS NULL OR s_used[k] + p_needs[i] <= p_limits[i] THEN
                    v_verdicts[i] := 'charged';
                ELSIF p_fallbacks[i] IS NOT NULL AND s_used[k] + p_fallbacks[i] <= p_limits[i] THEN
                    v_verdicts[i] := 'deferred';
                ELSE
                    v_verdicts[i] := 'refused';
                    v_refused := true;
                    IF coalesce(p_fallbacks[i], p_needs[i]) > p_limits[i] THEN
                        v_waits[i] := p_windows[i];  -- never fits: a whole window is the honest figure
                    ELSE
                        -- Until the smallest need that lets the request on fits. Events this
                        -- call adds are the newest (at v_now): they leave last.
                        v_must_free := s_used[k] + coalesce(p_fallbacks[i], p_needs[i]) - p_limits[i];
                        SELECT x.at + p_windows[i] - v_now INTO v_wait
                        FROM (SELECT e.at, sum(e.amount) OVER (ORDER BY e.at) AS freed
                              FROM budget_events e WHERE e.subject = s_names[k]) x
                        WHERE x.freed >= v_must_free ORDER BY x.at LIMIT 1;
                        v_waits[i] := least(greatest(coalesce(v_wait, p_windows[i]), 0), p_windows[i]);
                    END IF;
                END IF;
                i := i + 1;
            END LOOP;
            FOR j IN v_stage_start..i - 1 LOOP
                IF v_refused THEN
                    IF v_verdicts[j] <> 'refused' THEN
                        v_verdicts[j] := 'unchecked';
                    END IF;
                ELSIF v_verdicts[j] = 'charged' AND p_charges[j] > 0 THEN
                    k := v_of[j];
                    s_used[k] := s_used[k] + p_charges[j];
                    s_add[k] := s_add[k] + p_charges[j];
                    s_first[k] := coalesce(least(s_first[k], v_now), v_now);
                END IF;
            END LOOP;
        END LOOP;
        FOR j IN v_request_start..i - 1 LOOP
            k := v_of[j];
            v_used[j] := s_used[k];
            v_resets[j] := least(greatest(coalesce(s_first[k] + p_windows[j] - v_now, 0), 0), p_windows[j]);
        END LOOP;
    END LOOP;

    FOR k IN 1..m LOOP
        IF s_add[k] > 0 THEN
            INSERT INTO budget_events AS e (subject, at, amount)
            VALUES (s_names[k], v_now, s_add[k])
            ON CONFLICT (subject, at) DO UPDATE SET amount = e.amount + excluded.amount;
            UPDATE budget_windows w SET used = s_used[k], first_at = s_first[k], last_at = greatest(w.last_at, v_now)
            WHERE w.subject = s_names[k];
        ELSIF s_trimmed[k] THEN  -- only a row that exists has events to trim
            UPDATE budget_windows w SET used = s_used[k], first_at = s_first[k] WHERE w.subject = s_names[k];
        END IF;
    END LOOP;

    FOR i IN 1..n LOOP
        verdict := v_verdicts[i];
        used := v_used[i];
        wait := v_waits[i];
        reset_after := v_resets[i];
        RETURN NEXT;
    END LOOP;
END;
$$;
