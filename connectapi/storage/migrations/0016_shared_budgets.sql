-- The contract's rate budgets, counted in the record so that every process and machine
-- shares exact counts (issue 17). A budget subject (`requests:12`, `ip:203.0.113.7`,
-- `global`) has a row holding what its window counts now, and one event per instant it
-- was charged. Unlogged: a crash of the database server may forget the last minute of
-- counts (docs/decisions.md, "Budgets in the record"); nothing else is lost with them.
CREATE UNLOGGED TABLE budget_windows (
    subject text PRIMARY KEY,
    used bigint NOT NULL DEFAULT 0,
    window_seconds double precision NOT NULL,
    last_at double precision NOT NULL  -- the latest charge: past last_at + window nothing is counted
) WITH (fillfactor = 50);  -- room on each page, so a hot row (`global`) is updated in place (HOT)

CREATE UNLOGGED TABLE budget_events (
    subject text NOT NULL,
    at double precision NOT NULL,  -- seconds since the epoch
    amount integer NOT NULL,
    PRIMARY KEY (subject, at)
);

-- Check and charge a request's budgets in one statement, all or nothing per stage.
--
-- Items are checked in the order given (the contract's order of gates); each belongs to
-- a stage. A stage whose items all fit is charged, and the next stage is checked; the
-- first item that does not fit refuses, and nothing of its stage or later ones is
-- charged (earlier stages stay charged: `ip` counts a request that `requests` refused).
--
-- Per item: `need` must fit (used + need <= limit; NULL: not checked, always charged),
-- `charge` is what is counted. `fallback`, when not NULL, is a smaller need: an item that
-- misses `need` but meets `fallback` is left uncharged and reported 'deferred' (the
-- share of `global` kept for good keys: docs/decisions.md, "The global budget").
--
-- Answers one row per item: its verdict ('charged', 'deferred', 'refused' or 'unchecked'),
-- what its window counts after this call, the seconds until its oldest counted event
-- leaves (0 when empty), and for a refusal the seconds until `need` would fit.
--
-- Rows are locked in subject order, so two calls never wait on each other in a circle.
CREATE FUNCTION connectapi_charge_budgets(
    p_now double precision,  -- NULL: this server's clock, one clock for every process
    p_subjects text[], p_stages integer[], p_limits integer[], p_windows double precision[],
    p_needs integer[], p_charges integer[], p_fallbacks integer[]
) RETURNS TABLE (verdict text, used bigint, reset_after double precision, wait double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_now double precision := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    n integer := coalesce(array_length(p_subjects, 1), 0);
    v_used bigint[] := array_fill(0::bigint, ARRAY[n]);
    v_verdicts text[] := array_fill('unchecked'::text, ARRAY[n]);
    v_waits double precision[] := array_fill(NULL::double precision, ARRAY[n]);
    v_subject text;
    v_freed bigint;
    v_count bigint;
    v_stage integer;
    v_stage_start integer;
    v_refused boolean := false;
    v_must_free bigint;
    v_wait double precision;
    i integer;
    j integer;
    k integer;
BEGIN
    -- Lock (creating where new) and expire every subject, in subject order.
    FOR v_subject IN SELECT DISTINCT s FROM unnest(p_subjects) AS s ORDER BY s LOOP
        i := array_position(p_subjects, v_subject);
        INSERT INTO budget_windows AS w (subject, used, window_seconds, last_at)
        VALUES (v_subject, 0, p_windows[i], v_now)
        ON CONFLICT (subject) DO UPDATE SET window_seconds = excluded.window_seconds
        RETURNING w.used INTO v_count;
        WITH gone AS (
            DELETE FROM budget_events e
            WHERE e.subject = v_subject AND e.at <= v_now - p_windows[i]
            RETURNING e.amount
        )
        SELECT coalesce(sum(amount), 0) INTO v_freed FROM gone;
        IF v_freed <> 0 THEN
            v_count := v_count - v_freed;
            UPDATE budget_windows SET used = v_count WHERE subject = v_subject;
        END IF;
        FOR j IN 1..n LOOP
            IF p_subjects[j] = v_subject THEN
                v_used[j] := v_count;
            END IF;
        END LOOP;
    END LOOP;

    -- Check stage by stage; charge a stage only when all of it fits.
    i := 1;
    WHILE i <= n AND NOT v_refused LOOP
        v_stage := p_stages[i];
        v_stage_start := i;
        WHILE i <= n AND p_stages[i] = v_stage LOOP
            IF p_needs[i] IS NULL OR v_used[i] + p_needs[i] <= p_limits[i] THEN
                v_verdicts[i] := 'charged';
            ELSIF p_fallbacks[i] IS NOT NULL AND v_used[i] + p_fallbacks[i] <= p_limits[i] THEN
                v_verdicts[i] := 'deferred';
            ELSE
                v_verdicts[i] := 'refused';
                v_refused := true;
                IF p_needs[i] > p_limits[i] THEN
                    v_waits[i] := p_windows[i];  -- never fits: a whole window is the honest figure
                ELSE
                    v_must_free := v_used[i] + p_needs[i] - p_limits[i];
                    SELECT x.at + p_windows[i] - v_now INTO v_wait
                    FROM (SELECT e.at, sum(e.amount) OVER (ORDER BY e.at) AS freed
                          FROM budget_events e WHERE e.subject = p_subjects[i]) x
                    WHERE x.freed >= v_must_free ORDER BY x.at LIMIT 1;
                    v_waits[i] := coalesce(v_wait, p_windows[i]);
                END IF;
                EXIT;
            END IF;
            i := i + 1;
        END LOOP;
        IF v_refused THEN
            -- Nothing of this stage is charged; its other items are reported as unchecked.
            FOR j IN v_stage_start..n LOOP
                IF v_verdicts[j] <> 'refused' THEN
                    v_verdicts[j] := 'unchecked';
                END IF;
            END LOOP;
        ELSE
            FOR j IN v_stage_start..i - 1 LOOP
                IF v_verdicts[j] = 'charged' AND p_charges[j] > 0 THEN
                    INSERT INTO budget_events AS e (subject, at, amount)
                    VALUES (p_subjects[j], v_now, p_charges[j])
                    ON CONFLICT (subject, at) DO UPDATE SET amount = e.amount + excluded.amount;
                    UPDATE budget_windows SET used = used + p_charges[j], last_at = greatest(last_at, v_now)
                    WHERE subject = p_subjects[j];
                    FOR k IN 1..n LOOP  -- the same subject twice in one call sees both charges
                        IF p_subjects[k] = p_subjects[j] THEN
                            v_used[k] := v_used[k] + p_charges[j];
                        END IF;
                    END LOOP;
                END IF;
            END LOOP;
        END IF;
    END LOOP;

    FOR i IN 1..n LOOP
        verdict := v_verdicts[i];
        used := v_used[i];
        wait := v_waits[i];
        SELECT coalesce(min(e.at) + p_windows[i] - v_now, 0) INTO reset_after
        FROM budget_events e WHERE e.subject = p_subjects[i];
        RETURN NEXT;
    END LOOP;
END;
$$;

-- Forget subjects with nothing left in their window, a few at a time: a row a request
-- holds is skipped, never waited for.
CREATE FUNCTION connectapi_prune_budgets(p_now double precision, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    v_gone text[];
BEGIN
    SELECT array_agg(subject) INTO v_gone FROM (
        SELECT subject FROM budget_windows
        WHERE last_at + window_seconds <= v_now
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ) idle;
    IF v_gone IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM budget_events WHERE subject = ANY(v_gone);
    DELETE FROM budget_windows WHERE subject = ANY(v_gone);
    RETURN array_length(v_gone, 1);
END;
$$;
