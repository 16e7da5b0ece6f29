package postgis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// BenchmarkClaimHistory measures what the claim history (migration
// 0010's trigger) costs the claim gate: per op one job is claimed,
// heartbeated, released, claimed by another worker and failed (four
// recorded changes), with the triggers on and, for comparison, off.
func BenchmarkClaimHistory(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "history"
		if !on {
			name = "no_history"
		}
		b.Run(name, func(b *testing.B) {
			benchClaimCycle(b, setupBench(b).Store.(*Store), on)
		})
	}
}

func benchClaimCycle(b *testing.B, s *Store, on bool) {
	ctx := context.Background()
	if !on {
		if _, err := s.pool.Exec(ctx, "ALTER TABLE claims DISABLE TRIGGER USER"); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		i++
		job := ingest.Job{ID: fmt.Sprintf("%064x", i), Source: ingest.Source{Bucket: "b", Key: fmt.Sprint("k", i)}}
		if _, err := s.Claim(ctx, job, "A", time.Minute); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Heartbeat(ctx, job.ID, "A", time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, job.ID, "A", "transient"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Claim(ctx, job, "B", time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := s.Fail(ctx, job.ID, "permanent", ""); err != nil {
			b.Fatal(err)
		}
	}
}
