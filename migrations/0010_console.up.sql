-- geoingest schema, version 10: what the operator's console reads.
--
-- * jobs.write_seconds: how long a job's write-gate transaction took,
--   from its first statement (committed_at is that statement's now()) to
--   the ledger's last update (FinishJob, by clock_timestamp()). NULL for
--   jobs that wrote no features and for jobs written before version 10.
-- * claim_events: the history of each job's claim, one row per change
--   that matters to an operator: claimed (first, or taken over, or
--   re-run after a failure), released (lease given up after a transient
--   failure), committed, failed. Written by a trigger on claims, so that
--   every writer of claims records it; heartbeats (which only move the
--   lease) record nothing. Retention: a job keeps its latest 20 events,
--   and its events go with its claim row (ON DELETE CASCADE).
-- * Indexes for the console's pages, which list jobs newest claim first
--   (keyset pagination on (created_at, job_id)), optionally of one claim
--   state, and sources most recently changed first: each page reads its
--   rows off an index whatever the number of jobs.
ALTER TABLE jobs ADD COLUMN write_seconds double precision;

CREATE INDEX claims_created_idx ON claims (created_at, job_id);
CREATE INDEX claims_state_created_idx ON claims (state, created_at, job_id);
CREATE INDEX sources_updated_idx ON sources (updated_at, source_bucket, source_key, target_table, pipeline_version);

CREATE TABLE claim_events (
    job_id      text NOT NULL REFERENCES claims (job_id) ON DELETE CASCADE,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    event       text NOT NULL CHECK (event IN ('claimed', 'released', 'committed', 'failed')),
    owner       text NOT NULL,
    attempt     integer NOT NULL,
    lease_until timestamptz NOT NULL,
    error       text,
    PRIMARY KEY (job_id, seq)
);

-- geoingest_claim_event records a change of a claims row in claim_events
-- (see above). It runs as the writer that changed the claim, which the
-- default privileges of version 3 let write claim_events.
CREATE FUNCTION geoingest_claim_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ev text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state = 'CLAIMED' AND OLD.state = 'CLAIMED'
       AND NEW.owner = OLD.owner AND NEW.attempts = OLD.attempts THEN
        ev := 'released';
    ELSE
        ev := CASE NEW.state WHEN 'CLAIMED' THEN 'claimed' WHEN 'COMMITTED' THEN 'committed' ELSE 'failed' END;
    END IF;
    INSERT INTO claim_events (job_id, event, owner, attempt, lease_until, error)
    VALUES (NEW.job_id, ev, NEW.owner, NEW.attempts, NEW.lease_until, NEW.last_error);
    IF NEW.attempts > 6 THEN
        DELETE FROM claim_events
        WHERE job_id = NEW.job_id
          AND seq <= (SELECT e.seq FROM claim_events e WHERE e.job_id = NEW.job_id
                      ORDER BY e.seq DESC OFFSET 20 LIMIT 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER geoingest_claim_inserted AFTER INSERT ON claims
    FOR EACH ROW EXECUTE FUNCTION geoingest_claim_event();
-- An update is an event when the state, the holder or the attempt
-- changes, or when a live lease is given up (ReleaseClaim sets it to
-- now()); not when a heartbeat moves the lease on.
CREATE TRIGGER geoingest_claim_updated AFTER UPDATE ON claims
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.owner IS DISTINCT FROM NEW.owner
          OR OLD.attempts IS DISTINCT FROM NEW.attempts
          OR (NEW.state = 'CLAIMED' AND OLD.lease_until > now() AND NEW.lease_until <= now()))
    EXECUTE FUNCTION geoingest_claim_event();
