-- Retention (issue 18): the janitor prunes, by age, what the record keeps only for a while.
-- Each index finds the rows past their retention without reading the rest; the one on an
-- event's deliveries also serves the foreign key when an event is deleted.
CREATE INDEX write_batches_created ON write_batches (created_at);
CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (delivered_at) WHERE status = 'delivered';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_events_occurred ON webhook_events (occurred_at);
CREATE INDEX notifications_sent ON notifications (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX ota_revisions_settled ON ota_revisions (settled_at) WHERE state IN ('applied', 'stale');
