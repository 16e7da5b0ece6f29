-- geoingest schema, version 39: keeping history costs a row copy and
-- little more (docs/design.md, "History: why rows copied beside the
-- current ones").
--
-- Since 0037 a version copies the rows it retires into feature_history
-- with one INSERT ... SELECT. Each copied row still checked
-- feature_history's foreign key to jobs (a lookup per row) and inserted
-- a 70-byte key (job id, feature id) into its index. Now:
--   - feature_history is indexed by retired_by alone: B-tree
--     deduplication stores one key per retiring job, about 8 bytes a row;
--     geoingest_features_as_of and the report cells of a version
--     (migration 0040) find a job's rows by retired_by and join them by
--     feature id themselves;
--   - the foreign key is a statement trigger on jobs instead: the same
--     cascade when prune (or anything) deletes a ledger row, without a
--     check per history row.

DROP INDEX feature_history_job_idx;
CREATE INDEX feature_history_retired_idx ON feature_history (retired_by);

ALTER TABLE feature_history DROP CONSTRAINT feature_history_retired_by_fkey;

CREATE FUNCTION geoingest_history_cascade() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM feature_history h USING gone g WHERE h.retired_by = g.job_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER feature_history_cascade AFTER DELETE ON jobs
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION geoingest_history_cascade();
