-- When the reconciler last compared the channel manager's grid with the record.
ALTER TABLE properties ADD COLUMN cm_checked_at timestamptz;
