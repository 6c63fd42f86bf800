-- A channel-manager id maps to one property of ours only (issue 41,
-- docs/decisions/0125-one-property-per-channel-id.md): a channel-manager property, room
-- type or rate plan id mapped to two of ours sent one hotel's OTA bookings, with their
-- guests, to the other's webhooks and test keys.
--
-- Which of two properties sharing an id is right cannot be told from the record (the one
-- made first may be the one that copied). Every property that shares one loses its whole
-- mapping: its pushes stop and its revisions stay in the channel manager's feed until an
-- operator maps it again, rather than a guest landing on the wrong hotel. Its owner is
-- told, through the outbox. Test twins hold no ids of their own (they read their live
-- property's).
CREATE TEMPORARY TABLE sharing ON COMMIT DROP AS
    SELECT p.id FROM properties p
    WHERE p.cm_property_id IS NOT NULL
      AND EXISTS (SELECT FROM properties o WHERE o.cm_property_id = p.cm_property_id AND o.id <> p.id)
    UNION
    SELECT r.property_id FROM room_types r
    WHERE r.cm_id IS NOT NULL AND EXISTS (SELECT FROM room_types o WHERE o.cm_id = r.cm_id AND o.property_id <> r.property_id)
    UNION
    SELECT r.property_id FROM rate_plans r
    WHERE r.cm_id IS NOT NULL AND EXISTS (SELECT FROM rate_plans o WHERE o.cm_id = r.cm_id AND o.property_id <> r.property_id);
UPDATE properties SET cm_property_id = NULL WHERE id IN (SELECT id FROM sharing);
UPDATE room_types SET cm_id = NULL WHERE property_id IN (SELECT id FROM sharing);
UPDATE rate_plans SET cm_id = NULL WHERE property_id IN (SELECT id FROM sharing);
INSERT INTO notifications (property_id, kind, to_address, subject, body, created_at)
    SELECT p.id, 'channel.unmapped', p.owner_email, 'Your property is no longer mapped to the channel manager ('
                                                     || p.name || ')',
           'The channel-manager mapping of ' || p.name || ' named an id that another property''s mapping named '
           || 'too. One channel-manager id may belong to one property only: both mappings were removed, so that '
           || 'no booking reaches the wrong hotel. Until the operator maps the property again, its availability, '
           || 'rates and restrictions are not sent to the channels and its OTA bookings wait at the channel '
           || 'manager.' || chr(10),
           now()
    FROM properties p WHERE p.id IN (SELECT id FROM sharing) AND p.owner_email IS NOT NULL;

CREATE UNIQUE INDEX properties_cm_property_id ON properties (cm_property_id) WHERE cm_property_id IS NOT NULL;
-- Unique per property before; unique in the record now (which holds the old rule too).
DROP INDEX room_types_cm_id;
CREATE UNIQUE INDEX room_types_cm_id ON room_types (cm_id) WHERE cm_id IS NOT NULL;
DROP INDEX rate_plans_cm_id;
CREATE UNIQUE INDEX rate_plans_cm_id ON rate_plans (cm_id) WHERE cm_id IS NOT NULL;
