-- The typed schema (migration 0034, ingest/schema.go).

-- name: ApplyTypedView :one
-- ApplyTypedView creates or extends a target's typed view with columns
-- (a JSON array of {"name", "type"}): see geoingest_apply_typed_view.
SELECT geoingest_apply_typed_view(@target_table::text, @columns::jsonb)::text AS view_name;

-- name: TypedColumns :many
-- TypedColumns lists the typed columns stored in a target's feature table
-- (migration 0036), in order.
SELECT name, type FROM geoingest_typed_columns WHERE target_table = @target_table::text ORDER BY position;
