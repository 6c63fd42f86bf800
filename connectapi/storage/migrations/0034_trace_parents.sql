-- Traces (issue 46, docs/decisions/0141-traces-over-otlp.md): the span that caused a piece
-- of work kept beside it, as a W3C traceparent, so that the work done later, in another
-- task or process, joins or links to it: a batch's push to the request's write, a webhook
-- delivery to the revision or booking that made its event. NULL where tracing was off.
-- A delivery keeps the trace id of its last attempt, for the console to show.
ALTER TABLE write_batches ADD COLUMN trace_parent text;
ALTER TABLE webhook_events ADD COLUMN trace_parent text;
ALTER TABLE webhook_deliveries ADD COLUMN trace_id text;

-- connectapi_write_cells takes the batch's traceparent (storage/sql/connectapi_write_cells.sql).
DROP FUNCTION IF EXISTS connectapi_write_cells(
    bigint, bigint, text, uuid, bigint, timestamptz, integer, bigint[], date[], bigint[], smallint[], jsonb, jsonb,
    jsonb, jsonb, double precision, text, integer, double precision, text, text, bytea, timestamptz, timestamptz);
