package ingest

import (
	"context"
	"time"
)

// ReplicaStatus is what a reader on a replica (--read-database-url) knows
// of how current its database is.
type ReplicaStatus struct {
	// Standby: the server is a standby (in recovery), not a primary.
	Standby bool `json:"standby"`
	// Lag is how far behind the primary the standby's data is: the age
	// of the last transaction it replayed, zero when it has replayed all
	// it has received.
	Lag time.Duration `json:"-"`
	// LagSeconds is Lag in seconds, for JSON.
	LagSeconds float64 `json:"lag_seconds"`
	// UnreplayedBytes is the WAL received but not yet replayed.
	UnreplayedBytes int64 `json:"unreplayed_bytes"`
}

// ReplicaLagger tells the replication state of the database a reader is
// connected to.
type ReplicaLagger interface {
	ReplicaLag(ctx context.Context) (ReplicaStatus, error)
}
