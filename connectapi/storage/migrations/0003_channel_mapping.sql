-- The channel manager's ids for a property and its catalog. They never leave the service
-- through the Connect API; the pushers of the channel-manager pipeline read them.
ALTER TABLE properties ADD COLUMN cm_property_id text;
ALTER TABLE room_types ADD COLUMN cm_id text;
ALTER TABLE rate_plans ADD COLUMN cm_id text;
CREATE UNIQUE INDEX room_types_cm_id ON room_types (property_id, cm_id) WHERE cm_id IS NOT NULL;
CREATE UNIQUE INDEX rate_plans_cm_id ON rate_plans (property_id, cm_id) WHERE cm_id IS NOT NULL;
