-- Refusals are shown to the owner for 30 days, then purged by the janitor by age.
CREATE INDEX allowlist_refusals_at ON allowlist_refusals (at);
