-- Prices per occupancy (issue 44, docs/decisions/0136-prices-per-occupancy.md): a rate plan
-- is sold per room (one price a night, as before) or per person (one price per adult
-- count, 1 to its room type's maxAdults), fixed when the plan is made. A rate cell is a
-- plan, a night and an occupancy: 0 for a per-room plan's one price, the adult count for
-- a per-person plan's. Every cell of the record is a per-room plan's: they take 0.
ALTER TABLE rate_plans
    ADD COLUMN sell_mode text NOT NULL DEFAULT 'per_room' CHECK (sell_mode IN ('per_room', 'per_person'));

ALTER TABLE rate_cells
    ADD COLUMN occupancy smallint NOT NULL DEFAULT 0 CHECK (occupancy BETWEEN 0 AND 18),
    DROP CONSTRAINT rate_cells_pkey,
    ADD PRIMARY KEY (property_id, rate_plan_id, night, occupancy);

-- connectapi_write_cells takes the rate cells' occupancies (storage/sql/connectapi_write_cells.sql).
DROP FUNCTION IF EXISTS connectapi_write_cells(
    bigint, bigint, text, uuid, bigint, timestamptz, integer, bigint[], date[], bigint[], jsonb, jsonb, jsonb, jsonb,
    double precision, text, integer, double precision, text, text, bytea, timestamptz, timestamptz);
