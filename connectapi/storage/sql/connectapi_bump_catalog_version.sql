-- A change to a property's catalog (its room types, its rate plans, its currency) moves
-- its version in catalog_versions, so a writer that keeps the catalog in memory learns of
-- it in the write's own statement (connectapi_write_cells) instead of reading the catalog
-- again before every write. The triggers that call it are migration 0032's.
--
-- As its owner (the role that migrated the record): whoever changes a catalog may move its
-- version, though it may not write catalog_versions itself; a restore loads the rows of
-- room types and rate plans as a role that may only insert (storage/record_restore.py).
-- Its search path is the one it was made with, so no caller's path can stand in a table.
CREATE OR REPLACE FUNCTION connectapi_bump_catalog_version() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    v_property bigint;
BEGIN
    IF TG_TABLE_NAME = 'properties' THEN
        v_property := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        v_property := OLD.property_id;
    ELSE
        v_property := NEW.property_id;
    END IF;
    INSERT INTO catalog_versions AS v (property_id, version) VALUES (v_property, 1)
    ON CONFLICT (property_id) DO UPDATE SET version = v.version + 1;
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME <> 'properties' THEN
        -- Nested: a properties row has no property_id for the test to read.
        IF OLD.property_id <> NEW.property_id THEN
            INSERT INTO catalog_versions AS v (property_id, version) VALUES (OLD.property_id, 1)
            ON CONFLICT (property_id) DO UPDATE SET version = v.version + 1;
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
