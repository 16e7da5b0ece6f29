package postgis

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/jackc/pgx/v5"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// The quarantine's write (migration 0030, ingest/quarantine.go): the
// features the policies skip as they are read (null or empty geometry,
// not polygonal) are encoded as binary COPY tuples into a spool while the
// job's features stream into their table, and COPYed into
// geoingest_quarantine once that COPY has ended (one connection runs one
// COPY at a time), in the write gate's transaction. The features with no
// area left after repair are quarantined by the server
// (geoingest_finish_job_table). A job with nothing to quarantine costs
// nothing more.

// spoolMemory is how much of a spool is kept in memory before it goes to
// a temporary file: a file of mostly points stays within the worker's
// memory bound whatever its size.
const spoolMemory = 4 << 20

// quarantineSpool collects a job's skipped features as COPY tuples.
type quarantineSpool struct {
	jobID string
	mem   bytes.Buffer
	file  *os.File // once mem would pass spoolMemory; unlinked at creation
	n     int64
	buf   []byte
}

// add encodes one skipped feature.
func (q *quarantineSpool) add(s *prepare.Skipped) error {
	var wkb []byte
	if s.Geom != nil {
		var err error
		if wkb, err = ewkb.Marshal(s.Geom, binary.LittleEndian); err != nil {
			return ingest.Permanentf("feature %d: quarantine its geometry: %w", s.Index, err)
		}
	}
	be := binary.BigEndian
	b := be.AppendUint16(q.buf[:0], 7)
	b = appendText(b, q.jobID)
	b = be.AppendUint32(b, 8)
	b = be.AppendUint64(b, uint64(s.Index))
	b = appendText(b, s.Layer)
	b = appendText(b, s.Rule)
	b = appendText(b, s.Reason)
	b = be.AppendUint32(b, uint32(len(s.Props)+1))
	b = append(b, 1) // jsonb binary format version
	b = append(b, s.Props...)
	if wkb == nil {
		b = be.AppendUint32(b, math.MaxUint32) // NULL
	} else {
		b = be.AppendUint32(b, uint32(len(wkb)))
		b = append(b, wkb...)
	}
	q.buf = b
	q.n++
	if q.file == nil && q.mem.Len()+len(b) > spoolMemory {
		f, err := os.CreateTemp("", "geoingest-quarantine-*")
		if err != nil {
			return ingest.Transientf("quarantine spool: %w", err)
		}
		_ = os.Remove(f.Name()) // gone with the descriptor
		if _, err := q.mem.WriteTo(f); err != nil {
			f.Close()
			return ingest.Transientf("quarantine spool: %w", err)
		}
		q.file = f
	}
	if q.file != nil {
		if _, err := q.file.Write(b); err != nil {
			return ingest.Transientf("quarantine spool: %w", err)
		}
		return nil
	}
	q.mem.Write(b)
	return nil
}

func appendText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// flush COPYs the spooled features into geoingest_quarantine in tx and
// returns how many there were.
func (q *quarantineSpool) flush(ctx context.Context, tx pgx.Tx) (int64, error) {
	if q == nil || q.n == 0 {
		return 0, nil
	}
	var body io.Reader = &q.mem
	if q.file != nil {
		if _, err := q.file.Seek(0, io.SeekStart); err != nil {
			return 0, ingest.Transientf("quarantine spool: %w", err)
		}
		body = q.file
	}
	data := io.MultiReader(bytes.NewReader(pgCopySignature), body, bytes.NewReader([]byte{0xff, 0xff}))
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, data,
		"COPY geoingest_quarantine (job_id, feature_index, layer, rule, reason, properties, geom) FROM STDIN (FORMAT binary)")
	if err != nil {
		return 0, normaliseErr(fmt.Errorf("quarantine: %w", err))
	}
	if tag.RowsAffected() != q.n {
		return 0, fmt.Errorf("quarantine: COPY wrote %d rows of %d", tag.RowsAffected(), q.n)
	}
	return q.n, nil
}

// close frees the spool's file.
func (q *quarantineSpool) close() {
	if q != nil && q.file != nil {
		q.file.Close()
		q.file = nil
	}
}

// prepareRows returns the job's features under its policies, with the
// report cells' observer and the quarantine's spool, which the caller
// closes.
func (s *Store) prepareRows(ctx context.Context, g *gate, job ingest.Job, r ingest.LayerReader) (*prepare.Features, *quarantineSpool) {
	rows := prepare.New(ctx, r, job.Params, s.KnownSRID)
	if g.tally != nil {
		rows.Observe = cellsObserver{g.tally}
	}
	spool := &quarantineSpool{jobID: job.ID}
	rows.Quarantine = spool.add
	return rows, spool
}

// QuarantinedJobs lists the jobs with quarantined features, newest first.
func (s *Store) QuarantinedJobs(ctx context.Context, limit int) ([]ingest.QuarantineJob, error) {
	if limit <= 0 || limit > ingest.MaxPage {
		limit = ingest.MaxPage
	}
	rows, err := s.q.QuarantineByJob(ctx, int32(limit))
	if err != nil {
		return nil, ingest.Transientf("quarantine: %w", err)
	}
	out := make([]ingest.QuarantineJob, len(rows))
	for i, r := range rows {
		out[i] = ingest.QuarantineJob{JobID: r.JobID, Source: sourceURL(r.SourceBucket, r.SourceKey), Target: r.TargetTable,
			Status: r.Status, Committed: r.CommittedAt.Time, Features: r.FeatureCount, Quarantined: r.Quarantined}
		if err := json.Unmarshal(r.ByRule, &out[i].ByRule); err != nil {
			return nil, fmt.Errorf("quarantine of %s: %w", r.JobID, err)
		}
	}
	return out, nil
}

// QuarantinedFeatures returns a page of a job's quarantined features.
func (s *Store) QuarantinedFeatures(ctx context.Context, jobID string, p ingest.QuarantinePage) ([]ingest.QuarantinedFeature, error) {
	if p.Limit <= 0 || p.Limit > ingest.MaxPage {
		p.Limit = ingest.MaxPage
	}
	if _, err := s.q.GetJob(ctx, jobID); errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", jobID, ingest.ErrNoSuchJob)
	} else if err != nil {
		return nil, ingest.Transientf("quarantine: %w", err)
	}
	rows, err := s.q.QuarantinedFeatures(ctx, db.QuarantinedFeaturesParams{JobID: jobID, AfterLayer: p.AfterLayer,
		AfterIndex: p.AfterIndex, OnlyIndex: p.Index, MaxRows: int32(p.Limit)})
	if err != nil {
		return nil, ingest.Transientf("quarantine: %w", err)
	}
	out := make([]ingest.QuarantinedFeature, len(rows))
	for i, r := range rows {
		f := ingest.QuarantinedFeature{Index: r.FeatureIndex, Layer: r.Layer, Rule: r.Rule, Reason: r.Reason,
			Properties: json.RawMessage(r.Properties), Geometry: json.RawMessage("null")}
		if r.Geojson != "" {
			f.Geometry, f.SRID = json.RawMessage(r.Geojson), int(r.Srid)
		}
		out[i] = f
	}
	return out, nil
}
