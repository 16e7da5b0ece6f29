package postgis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestFirstVersionChangesAreTheServers: a source's first version records
// its changes from the writer's count and extent (RecordFirstVersion),
// not from a pass over its rows; the record is what
// geoingest_match_generation made of the rows: every feature added,
// nothing else, and the extent exactly ST_Extent's of the stored rows
// (which is exact: a box rounded outward to floats, as each row's stored
// box is, fails), for coordinates of every sign and many digits, in its own
// partition and in the shared one; seq and pipeline_version as the
// trigger sets them. A first version with an invalid feature (repaired
// by the server, so the writer's box is not its rows') still gets the
// server's record.
func TestFirstVersionChangesAreTheServers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(31, 1))
	for src := 0; src < 6; src++ {
		var fs []feat
		for i := 0; i < 40; i++ {
			x := (r.Float64()*2 - 1) * 179.9
			y := (r.Float64()*2 - 1) * 84
			if src == 0 {
				x, y = 1e-9*r.Float64(), -1e-9*r.Float64() // near zero, below float32's steps
			}
			fs = append(fs, feat{Props: fmt.Sprintf(`{"APN":"%d-%d"}`, src, i), X: x, Y: y, W: 1e-4 + r.Float64()*1e-3})
		}
		if src == 5 {
			fs[3].Bow = true // invalid: repaired by the server
		}
		p := ingest.DefaultParams("parcels")
		if src == 5 {
			p.Invalid = ingest.PolicyRepair
		}
		job, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: fmt.Sprintf("first/%d.geojson", src), VersionToken: "v1",
			Order: ingest.OrderFromSequencer("01")}, p, fileFetcher{writeFeats(t, "v1.geojson", fs)})
		require.NoError(t, err)
		if src%2 == 1 {
			b.store.OwnPartitionBytes = 1 // its own partition
		} else {
			b.store.OwnPartitionBytes = math.MaxInt64 / 2
		}
		res := b.svc.Run(ctx, job)
		require.NoError(t, res.Err)
		var added, others, seq int64
		var base, pv *string
		var same bool
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT c.added, c.removed + c.geometry + c.attributes + c.unchanged + c.by_key + c.by_content + c.by_overlap + c.duplicate_keys + c.lineage,
			       c.base_job_id, c.seq, c.pipeline_version,
			       ST_AsEWKB(c.bbox::geometry) = (SELECT ST_AsEWKB(ST_Extent(f.geom)::geometry) FROM geoingest_features f WHERE f.job_ref = j.job_ref)
			FROM job_changes c JOIN jobs j USING (job_id) WHERE c.job_id = $1`, job.ID).Scan(&added, &others, &base, &seq, &pv, &same))
		require.Equal(t, int64(len(fs)), added, "source %d", src)
		require.Zero(t, others)
		require.Nil(t, base)
		require.Equal(t, int64(1), seq)
		require.NotNil(t, pv)
		if !same {
			var a, e string
			_ = b.pool.QueryRow(ctx, `SELECT ST_AsText(c.bbox::geometry), (SELECT ST_AsText(ST_Extent(f.geom)::geometry) FROM geoingest_features f WHERE f.job_ref = j.job_ref) FROM job_changes c JOIN jobs j USING (job_id) WHERE c.job_id = $1`, job.ID).Scan(&a, &e)
			t.Logf("%s\n%s", a, e)
		}
		require.True(t, same, "source %d: the recorded extent is ST_Extent's of its rows", src)
		require.NotNil(t, res.Changes)
		require.Equal(t, int64(len(fs)), res.Changes.Counts.Added)
		require.NotEmpty(t, res.Changes.BBox)
	}
}
