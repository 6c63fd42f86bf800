-- What GET /sync says about the channel manager's pipe (its next attempt, its failures in
-- a row) is kept in the record beside the last outcome, written by whichever process
-- pushed the property: every process answers /sync alike (issue 17).
ALTER TABLE properties ADD COLUMN cm_next_attempt_at timestamptz,
                       ADD COLUMN cm_failures integer NOT NULL DEFAULT 0;
