-- PCI: a revision's `guarantee` holds card data (masked number, cardholder, expiry, CVV
-- mask, a virtual card's balance). None of it is kept: of the guarantee only `is_virtual`
-- stays (docs/decisions.md, "Channex as documented (issue 26)"). Revisions stored before
-- are cleaned here as the intake now cleans them on the way in.
--
-- storage/ota.py keeps a revision as its JSON text in a jsonb string (the pool's jsonb
-- codec encodes the text it is given once more): the object is read out of the string,
-- cleaned, and put back the same way. An object stored as such is cleaned in place.
WITH stored AS (
    SELECT seq, jsonb_typeof(payload) = 'string' AS wrapped,
           CASE WHEN jsonb_typeof(payload) = 'string' THEN (payload #>> '{}')::jsonb ELSE payload END AS revision
    FROM ota_revisions
), cleaned AS (
    SELECT seq, wrapped,
           jsonb_set(revision, '{guarantee}',
                     CASE WHEN jsonb_typeof(revision #> '{guarantee,is_virtual}') = 'boolean'
                          THEN jsonb_build_object('is_virtual', revision #> '{guarantee,is_virtual}')
                          ELSE '{}'::jsonb END) AS revision
    FROM stored
    WHERE jsonb_typeof(revision -> 'guarantee') <> 'null'
)
UPDATE ota_revisions r
SET payload = CASE WHEN cleaned.wrapped THEN to_jsonb(cleaned.revision::text) ELSE cleaned.revision END
FROM cleaned
WHERE r.seq = cleaned.seq;
