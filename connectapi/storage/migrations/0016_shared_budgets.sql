-- The contract's rate budgets, counted in the record so that every process and machine
-- shares exact counts (issue 17). A budget subject (`requests:12`, `ip:203.0.113.7`,
-- `global`) has a row holding what its window counts now, and one event per instant it
-- was charged. Unlogged: a crash of the database server may forget the last minute of
-- counts (docs/decisions.md, "Budgets in the record"); nothing else is lost with them.
CREATE UNLOGGED TABLE budget_windows (
    subject text PRIMARY KEY,
    used bigint NOT NULL DEFAULT 0,
    window_seconds double precision NOT NULL,
    first_at double precision,  -- the oldest counted event; NULL when none is
    last_at double precision NOT NULL  -- the latest charge: past last_at + window nothing is counted
) WITH (fillfactor = 50);  -- room on each page, so a hot row (`global`) is updated in place (HOT)

CREATE UNLOGGED TABLE budget_events (
    subject text NOT NULL,
    at double precision NOT NULL,  -- seconds since the epoch
    amount integer NOT NULL,
    PRIMARY KEY (subject, at)
);

-- Check and charge the budgets of one or more requests in one statement, and forget
-- subjects with nothing left in their window: storage/sql/connectapi_charge_budgets.sql
-- and storage/sql/connectapi_prune_budgets.sql.
-- functions: connectapi_charge_budgets, connectapi_prune_budgets
