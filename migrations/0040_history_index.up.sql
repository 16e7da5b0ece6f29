-- geoingest schema, version 40: feature_history indexed by retired_by
-- alone (docs/design.md, "History: why rows copied beside the current
-- ones").
--
-- Every row a version retires is inserted into feature_history (0033,
-- 0037), and each inserted a 70-byte key (job id, feature id) into its
-- index. geoingest_features_as_of and the report cells of a version
-- (migration 0041) find a job's rows by retired_by and join them by
-- feature id themselves, so the index keys retired_by alone: B-tree
-- deduplication stores one key per retiring job, about 8 bytes a row.

DROP INDEX feature_history_job_idx;
CREATE INDEX feature_history_retired_idx ON feature_history (retired_by);
