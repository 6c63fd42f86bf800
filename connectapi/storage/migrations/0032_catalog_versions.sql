-- A version per property's catalog (issue 43, docs/decisions/0132-a-keyed-write-in-one-statement.md):
-- the property's writer keeps the catalog it checks writes against (room type and rate plan
-- ids, rate policies, currency) and sends the version it checked against with the write;
-- connectapi_write_cells refuses to write on a version that moved, and the writer reads the
-- catalog again. A test twin's writes are checked against its own row (its currency) and
-- its live property's (the catalog it shares).
--
-- No foreign key: deleting a property deletes its catalog, whose triggers bump this row;
-- a row left of a property gone is a few bytes, and ids are never reused.
-- functions: connectapi_bump_catalog_version, connectapi_write_cells
CREATE TABLE catalog_versions (
    property_id bigint PRIMARY KEY,
    version     bigint NOT NULL
);

-- Only what a write is checked against: ids, and a plan's rate policy (a mapping to the
-- channel manager, a name, a room count move nothing).
CREATE TRIGGER room_types_catalog_version AFTER INSERT OR DELETE OR UPDATE OF id, property_id ON room_types
    FOR EACH ROW EXECUTE FUNCTION connectapi_bump_catalog_version();
CREATE TRIGGER rate_plans_catalog_version
    AFTER INSERT OR DELETE OR UPDATE OF id, property_id, min_rate, max_rate ON rate_plans
    FOR EACH ROW EXECUTE FUNCTION connectapi_bump_catalog_version();
CREATE TRIGGER properties_catalog_version AFTER UPDATE OF currency ON properties
    FOR EACH ROW WHEN (OLD.currency IS DISTINCT FROM NEW.currency)
    EXECUTE FUNCTION connectapi_bump_catalog_version();
