package postgis

import (
	"context"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// ReplicaLag tells whether the console's database is a standby and how
// far behind its primary (ingest.ReplicaLagger).
func (c *Console) ReplicaLag(ctx context.Context) (ingest.ReplicaStatus, error) {
	r, err := c.q.ReplicaLag(ctx)
	if err != nil {
		return ingest.ReplicaStatus{}, ingest.Transientf("replica lag: %w", err)
	}
	return ingest.ReplicaStatus{Standby: r.InRecovery, Lag: time.Duration(r.LagSeconds * float64(time.Second)),
		LagSeconds: r.LagSeconds, UnreplayedBytes: int64(r.UnreplayedBytes)}, nil
}

var _ ingest.ReplicaLagger = (*Console)(nil)
