-- Test mode (issue 29): a property's test twin is a property of its own (mode 'test',
-- twin_of its live property), so that everything the record keeps by property (cells,
-- batches, sync state, leases, bookings, idempotency records, webhook endpoints and
-- events, per-property budgets) is the twin's own. The twin has no catalog of its own: it
-- reads its live property's room types and rate plans, with their ids.
ALTER TABLE properties
    ADD COLUMN mode text NOT NULL DEFAULT 'live' CHECK (mode IN ('live', 'test')),
    ADD COLUMN twin_of bigint UNIQUE REFERENCES properties (id),
    ADD CONSTRAINT properties_twin_is_test CHECK ((mode = 'test') = (twin_of IS NOT NULL));

-- A room type's or rate plan's night now has a cell of the live property and one of its
-- twin: cells are keyed by their property too.
ALTER TABLE availability_cells DROP CONSTRAINT availability_cells_pkey,
                               ADD PRIMARY KEY (property_id, room_type_id, night);
ALTER TABLE rate_cells DROP CONSTRAINT rate_cells_pkey,
                       ADD PRIMARY KEY (property_id, rate_plan_id, night);
ALTER TABLE restriction_cells DROP CONSTRAINT restriction_cells_pkey,
                              ADD PRIMARY KEY (property_id, rate_plan_id, night);
