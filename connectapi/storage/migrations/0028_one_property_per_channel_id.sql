-- A channel-manager id maps to one property of ours only (issue 41, docs/decisions/0125-one-property-per-channel-id.md): a
-- channel-manager property, room type or rate plan id mapped to two of ours sent one
-- hotel's OTA bookings, with their guests, to the other's webhooks and test keys.
--
-- Where the record already holds such a pair, the property mapped first (the lower id)
-- keeps the id and the other loses it: its pushes stop (not mapped) and `connectapi status`
-- shows it failing until an operator maps it again, rather than a guest landing on the
-- wrong hotel. Test twins hold no ids of their own (they read their live property's).
UPDATE properties p SET cm_property_id = NULL
WHERE p.cm_property_id IS NOT NULL
  AND EXISTS (SELECT FROM properties o WHERE o.cm_property_id = p.cm_property_id AND o.id < p.id);
UPDATE room_types r SET cm_id = NULL
WHERE r.cm_id IS NOT NULL
  AND EXISTS (SELECT FROM room_types o WHERE o.cm_id = r.cm_id AND o.property_id < r.property_id);
UPDATE rate_plans r SET cm_id = NULL
WHERE r.cm_id IS NOT NULL
  AND EXISTS (SELECT FROM rate_plans o WHERE o.cm_id = r.cm_id AND o.property_id < r.property_id);

CREATE UNIQUE INDEX properties_cm_property_id ON properties (cm_property_id) WHERE cm_property_id IS NOT NULL;
-- Unique per property before; unique in the record now (which holds the old rule too).
DROP INDEX room_types_cm_id;
CREATE UNIQUE INDEX room_types_cm_id ON room_types (cm_id) WHERE cm_id IS NOT NULL;
DROP INDEX rate_plans_cm_id;
CREATE UNIQUE INDEX rate_plans_cm_id ON rate_plans (cm_id) WHERE cm_id IS NOT NULL;
