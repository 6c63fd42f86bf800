-- Forget subjects with nothing left in their window, a few at a time: a row a request
-- holds is skipped, never waited for. A slice's event is counted at the end of the
-- slice's life, after the call that took it (connectapi_reserve_budgets): a subject is
-- kept while any event of it has yet to leave its window.
CREATE OR REPLACE FUNCTION connectapi_prune_budgets(p_now double precision, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    v_gone text[];
BEGIN
    SELECT array_agg(subject) INTO v_gone FROM (
        SELECT subject FROM budget_windows w
        WHERE last_at + window_seconds <= v_now
          AND NOT EXISTS (SELECT 1 FROM budget_events e
                          WHERE e.subject = w.subject AND e.at + w.window_seconds > v_now)
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
