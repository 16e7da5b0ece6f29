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
