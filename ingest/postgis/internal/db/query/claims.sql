-- name: ClaimJob :one
-- ClaimJob takes the claim on a job for owner until now() + lease. It wins
-- when no claim exists, when the existing claim is CLAIMED with an expired
-- lease, or when it FAILED (a re-run of a failed job is allowed). It never
-- takes a COMMITTED claim. No row comes back when the claim was lost.
INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
VALUES (@job_id, 'CLAIMED', @owner, now() + make_interval(secs => @lease_seconds::float8),
        @source_bucket, @source_key)
ON CONFLICT (job_id) DO UPDATE
SET state = 'CLAIMED',
    owner = EXCLUDED.owner,
    lease_until = EXCLUDED.lease_until,
    attempts = claims.attempts + 1,
    updated_at = now()
WHERE claims.state = 'FAILED'
   OR (claims.state = 'CLAIMED' AND claims.lease_until < now())
RETURNING attempts;

-- name: GetClaim :one
SELECT * FROM claims WHERE job_id = @job_id;

-- name: HeartbeatClaim :execrows
-- HeartbeatClaim extends the lease while owner still holds the claim. Zero
-- rows means the lease was lost.
UPDATE claims
SET lease_until = now() + make_interval(secs => @lease_seconds::float8), updated_at = now()
WHERE job_id = @job_id AND owner = @owner AND state = 'CLAIMED';

-- name: CommitClaimOwned :execrows
-- CommitClaimOwned marks the claim COMMITTED if owner still holds it. Zero
-- rows means the lease was stolen (or the claim row is gone).
UPDATE claims
SET state = 'COMMITTED', last_error = NULL, updated_at = now()
WHERE job_id = @job_id AND owner = @owner AND state = 'CLAIMED';

-- name: CommitClaimForce :exec
-- CommitClaimForce makes the claim COMMITTED whoever holds it: used inside
-- the write gate after a stolen lease, so that claims and ledger agree.
INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
VALUES (@job_id, 'COMMITTED', @owner, now(), @source_bucket, @source_key)
ON CONFLICT (job_id) DO UPDATE
SET state = 'COMMITTED', owner = EXCLUDED.owner, last_error = NULL, updated_at = now();

-- name: FailClaim :exec
-- FailClaim records a permanent failure, with its cause's code ('' for
-- none; NULL is left by claims failed before migration 0038). A
-- COMMITTED claim is never downgraded.
UPDATE claims
SET state = 'FAILED', last_error = @last_error, failure_cause = @failure_cause::text,
    lease_until = now(), updated_at = now()
WHERE job_id = @job_id AND state <> 'COMMITTED';

-- name: ReleaseClaim :exec
-- ReleaseClaim gives up owner's claim after a transient failure or on
-- shutdown, so that the next delivery can claim it at once.
UPDATE claims
SET lease_until = now(), last_error = @last_error, updated_at = now()
WHERE job_id = @job_id AND owner = @owner AND state = 'CLAIMED';

-- name: ReclaimOwnAttempt :one
-- ReclaimOwnAttempt takes back a claim that is still CLAIMED by owner
-- under attempt number @attempt (the claim's attempts counter when owner
-- won it), an attempt that owner itself ended but could not release (the
-- database was unreachable when it tried). It renews the lease as a new
-- attempt, so a later release, heartbeat or commit by that number's
-- attempt has nothing to match. No row comes back when the claim moved on
-- (committed, failed, released, or taken by anyone since).
UPDATE claims
SET lease_until = now() + make_interval(secs => @lease_seconds::float8),
    attempts = attempts + 1,
    last_error = NULL,
    updated_at = now()
WHERE job_id = @job_id AND owner = @owner AND state = 'CLAIMED' AND attempts = @attempt::integer
RETURNING attempts;

-- name: ClaimHolder :one
-- ClaimHolder reads a job's claim after a lost ClaimJob: its state, the
-- worker holding it, when that worker's lease ends, and how long that is
-- from now by the database's clock (0 once it has ended), so that a
-- worker's own clock never matters.
SELECT state, owner, lease_until, attempts,
       greatest(extract(epoch FROM lease_until - now()), 0)::float8 AS lease_left_seconds
FROM claims
WHERE job_id = @job_id;

-- name: ClaimJobs :many
-- ClaimJobs is ClaimJob for a batch of jobs in one statement: one row per
-- distinct job id, won when this statement took the claim (as ClaimJob
-- would), otherwise with the state of the claim that stopped it ('' when
-- it was taken by a transaction that committed after this statement
-- began). Claims are taken in job id order, so that two batches never
-- deadlock.
WITH input AS (
    SELECT DISTINCT ON (i.job_id) i.job_id, i.source_bucket, i.source_key
    FROM (SELECT unnest(@job_ids::text[]) AS job_id, unnest(@source_buckets::text[]) AS source_bucket,
                 unnest(@source_keys::text[]) AS source_key) i
    ORDER BY i.job_id
), won AS (
    INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
    SELECT input.job_id, 'CLAIMED', @owner::text, now() + make_interval(secs => @lease_seconds::float8),
           input.source_bucket, input.source_key
    FROM input
    ORDER BY input.job_id
    ON CONFLICT (job_id) DO UPDATE
    SET state = 'CLAIMED',
        owner = EXCLUDED.owner,
        lease_until = EXCLUDED.lease_until,
        attempts = claims.attempts + 1,
        updated_at = now()
    WHERE claims.state = 'FAILED'
       OR (claims.state = 'CLAIMED' AND claims.lease_until < now())
    RETURNING claims.job_id, claims.attempts
)
SELECT input.job_id::text AS job_id, (won.job_id IS NOT NULL)::boolean AS won,
       coalesce(won.attempts, 0)::integer AS attempt,
       coalesce(c.state, '')::text AS state
FROM input
LEFT JOIN won ON won.job_id = input.job_id
LEFT JOIN claims c ON c.job_id = input.job_id
ORDER BY input.job_id;
