-- Budget slices (docs/decisions/0124-budget-slices.md): a process under steady load on a
-- subject takes a few of its budget's units ahead, counted here at once, and spends them
-- on its next requests without a statement each; what it did not spend it gives back.
--
-- Every unit is counted before the process spends it, and counted as spent at the end of
-- the slice's life (`p_now + p_ahead`, the event's instant), which is never earlier than
-- the request that spends it (the process stops spending before then, by its own clock,
-- measured from before this call): every window that holds such a request counts it,
-- even if the process dies and never gives back. The window only ever counts more than
-- was admitted, never less.
--
-- Gives back first: each of `p_back_*` takes up to its amount off its subject's event at
-- its instant (a slice's unspent units; an event already gone has nothing to give).
--
-- Then `p_subjects` (distinct: one request's), on their windows as they are now, all
-- together or none: `p_wanted` units of each are granted only if every window, with
-- them, stays within its `p_caps` (a share of the limit: near its limit a budget is
-- counted request by request, as connectapi_charge_budgets does), and each `p_wanted` 0
-- (a check, such as `ip-auth`, that the process may trust for the slice's life) has room
-- for one more request. A slice of one subject alone would admit nothing.
--
-- Answers one row per subject: the units granted, the instant they are counted at, what
-- the window counts after the call, and the seconds until its oldest event leaves.
--
-- Rows are locked in subject order, as connectapi_charge_budgets locks them; `last_at`
-- stays the latest call's instant (the record's clock never runs ahead of itself), and
-- connectapi_prune_budgets keeps a subject while an event of its window is still to leave.
CREATE OR REPLACE FUNCTION connectapi_reserve_budgets(
    p_now double precision,  -- NULL: this server's clock
    p_ahead double precision,  -- seconds: a slice's life
    p_subjects text[], p_limits integer[], p_windows double precision[], p_wanted integer[], p_caps integer[],
    p_back_subjects text[], p_back_ats double precision[], p_back_amounts integer[]
) RETURNS TABLE (subject text, granted integer, at double precision, used bigint, reset_after double precision)
LANGUAGE plpgsql
SET lock_timeout = '5s'
AS $$
#variable_conflict use_column
DECLARE
    v_now double precision;
    v_latest double precision := '-infinity';
    v_at double precision;
    n integer := coalesce(array_length(p_subjects, 1), 0);
    b integer := coalesce(array_length(p_back_subjects, 1), 0);
    v_names text[];
    v_name text;
    v_count bigint;
    v_first double precision;
    v_last double precision;
    v_have integer;
    v_taken integer;
    v_freed bigint;
    v_counts bigint[] := array_fill(0::bigint, ARRAY[n]);
    v_firsts double precision[] := array_fill(NULL::double precision, ARRAY[n]);
    v_all boolean := true;
    i integer;
BEGIN
    -- Lock every row the call touches, in subject order; a subject only checked, or only
    -- given back to, is not made when it has no row.
    SELECT array_agg(s ORDER BY s) INTO v_names
    FROM (SELECT DISTINCT s FROM unnest(p_subjects || p_back_subjects) AS s) d;
    FOREACH v_name IN ARRAY coalesce(v_names, ARRAY[]::text[]) LOOP
        LOOP
            SELECT w.last_at INTO v_last FROM budget_windows w WHERE w.subject = v_name FOR UPDATE;
            EXIT WHEN FOUND;
            i := array_position(p_subjects, v_name);
            EXIT WHEN i IS NULL OR p_wanted[i] = 0;
            INSERT INTO budget_windows (subject, used, window_seconds, first_at, last_at)
            VALUES (v_name, 0, p_windows[i], NULL, '-infinity') ON CONFLICT (subject) DO NOTHING;
        END LOOP;
        v_latest := greatest(v_latest, coalesce(v_last, '-infinity'));
    END LOOP;

    v_now := coalesce(p_now, greatest(extract(epoch FROM clock_timestamp()), v_latest));
    v_at := v_now + p_ahead;

    FOR i IN 1..b LOOP
        SELECT e.amount INTO v_have FROM budget_events e
        WHERE e.subject = p_back_subjects[i] AND e.at = p_back_ats[i];
        CONTINUE WHEN NOT FOUND;
        v_taken := least(v_have, p_back_amounts[i]);
        IF v_taken = v_have THEN
            DELETE FROM budget_events e WHERE e.subject = p_back_subjects[i] AND e.at = p_back_ats[i];
        ELSE
            UPDATE budget_events e SET amount = e.amount - v_taken
            WHERE e.subject = p_back_subjects[i] AND e.at = p_back_ats[i];
        END IF;
        SELECT min(e.at) INTO v_first FROM budget_events e WHERE e.subject = p_back_subjects[i];
        UPDATE budget_windows w SET used = greatest(w.used - v_taken, 0), first_at = v_first
        WHERE w.subject = p_back_subjects[i];
    END LOOP;

    -- Each wanted subject's window as it is now (trimmed as connectapi_charge_budgets
    -- trims); the slices are granted only if every one of them fits.
    FOR i IN 1..n LOOP
        SELECT w.used, w.first_at INTO v_count, v_first FROM budget_windows w WHERE w.subject = p_subjects[i];
        IF NOT FOUND THEN
            v_count := 0;
            v_first := NULL;
        ELSIF v_first IS NOT NULL AND v_first <= v_now - p_windows[i] THEN
            WITH gone AS (
                DELETE FROM budget_events e
                WHERE e.subject = p_subjects[i] AND e.at <= v_now - p_windows[i]
                RETURNING e.amount
            )
            SELECT coalesce(sum(amount), 0) INTO v_freed FROM gone;
            v_count := v_count - v_freed;
            SELECT min(e.at) INTO v_first FROM budget_events e WHERE e.subject = p_subjects[i];
            UPDATE budget_windows w SET used = v_count, first_at = v_first WHERE w.subject = p_subjects[i];
        END IF;
        v_counts[i] := v_count;
        v_firsts[i] := v_first;
        IF p_wanted[i] > 0 THEN
            v_all := v_all AND v_count + p_wanted[i] <= least(p_caps[i], p_limits[i]);
        ELSE
            v_all := v_all AND v_count + 1 <= p_limits[i];  -- a check: one more request fits
        END IF;
    END LOOP;

    FOR i IN 1..n LOOP
        subject := p_subjects[i];
        granted := 0;
        v_count := v_counts[i];
        v_first := v_firsts[i];
        IF v_all AND p_wanted[i] > 0 THEN
            granted := p_wanted[i];
            INSERT INTO budget_events AS e (subject, at, amount)
            VALUES (p_subjects[i], v_at, granted)
            ON CONFLICT (subject, at) DO UPDATE SET amount = e.amount + excluded.amount;
            v_count := v_count + granted;
            v_first := coalesce(least(v_first, v_at), v_at);
            UPDATE budget_windows w SET used = v_count, first_at = v_first, last_at = greatest(w.last_at, v_now)
            WHERE w.subject = p_subjects[i];
        END IF;
        at := v_at;
        used := v_count;
        reset_after := least(greatest(coalesce(v_first + p_windows[i] - v_now, 0), 0), p_windows[i]);
        RETURN NEXT;
    END LOOP;
END;
$$;
