-- name: ReplicaLag :one
-- ReplicaLag tells whether this server is a standby and how far behind
-- its primary it is: the time since the last transaction it replayed was
-- committed on the primary, 0 when it has replayed all it has received
-- (an idle primary sends nothing, and the replica is then caught up, not
-- behind), and 0 on a primary.
SELECT pg_is_in_recovery() AS in_recovery,
       CASE
           WHEN NOT pg_is_in_recovery() THEN 0
           WHEN pg_last_wal_receive_lsn() IS NOT NULL
                AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
           ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8 AS lag_seconds,
       coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0)::float8 AS unreplayed_bytes;

-- The durable acknowledgement (replicawait.go): positions in this
-- server's WAL and the standbys streaming from it.

-- name: WALPosition :one
-- WALPosition is this server's WAL write position: every commit that
-- returned to its session (synchronous_commit on or remote_*) or that a
-- session can see is before it. An error on a standby.
SELECT pg_current_wal_lsn()::text AS lsn;

-- name: LedgerJobAt :one
-- LedgerJobAt reads, in one statement, whether job_id is in this
-- server's ledger and the WAL position then (WALPosition).
SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = sqlc.arg(job_id)) AS committed,
       pg_current_wal_lsn()::text AS lsn;

-- name: StandbysFlushed :one
-- StandbysFlushed counts the standbys streaming from this server that
-- have flushed its WAL up to lsn. Reading flush_lsn takes
-- pg_read_all_stats (or pg_monitor): without it the column is NULL and
-- no standby counts (CanReadReplication).
-- (pg_stat_get_wal_senders() is the function behind the view
-- pg_stat_replication.)
SELECT count(*)::int AS standbys FROM pg_stat_get_wal_senders() AS s
WHERE s.flush_lsn >= sqlc.arg(lsn)::text::pg_lsn;

-- name: ReplicationStatus :one
-- ReplicationStatus is what serve --ack-replicas checks at start: whether
-- this role may read the standbys' positions (a superuser, or a member
-- of pg_read_all_stats) and how many standbys stream from this server
-- now.
SELECT (current_setting('is_superuser')::bool
        OR pg_has_role('pg_read_all_stats', 'USAGE'))::bool AS can_read,
       (SELECT count(*) FROM pg_stat_get_wal_senders() AS s WHERE s.state = 'streaming')::int AS streaming;
