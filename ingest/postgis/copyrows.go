package postgis

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// copyFeatures streams r into the job's table (its own partition or the
// target's shared one) with one binary COPY, the features prepared by
// ingest/prepare (policies applied, MultiPolygon EWKB with its area and
// validity, see copyRows); features in a CRS other than EPSG:4326 go
// through the staging table to be transformed, measured and checked by
// PostGIS. Then the server repairs the invalid features (per the invalid policy)
// and sums the count, area and checksum in one pass, and a job with its
// own partition gets its GiST index (it is attached at the gate's commit,
// attach.go). The counts are recorded on the job.
func (s *Store) copyFeatures(ctx context.Context, g *gate, job ingest.Job, r ingest.LayerReader, res *ingest.WriteResult) error {
	target := job.Params.Target
	table, err := g.q.CreateJobTable(ctx, db.CreateJobTableParams{TargetTable: target, JobRef: g.ref})
	if err != nil {
		return fmt.Errorf("job table: %w", err)
	}
	if g.ref > 0 {
		g.attach = target
	}
	rows, spool := s.prepareRows(ctx, g, job, r) // quarantine.go
	defer spool.close()
	key, _, _ := job.Params.Match()
	hashes, err := s.serverHashesAgree(ctx, g.q)
	if err != nil {
		return err
	}
	if _, err := copyRows(ctx, g.tx, pgx.Identifier{table.SchemaName, table.TableName}, g.typed, featureTuple(g.ref, key, g.typed, hashes), rows); err != nil {
		return err
	}
	if rows.Switched() {
		// A feature in another CRS: it and the rest are staged and
		// transformed to 4326 by PostGIS.
		if g.tally != nil {
			g.tally.GiveUp("features transformed by the server")
		}
		if err := g.q.CreateStaging(ctx); err != nil {
			return err
		}
		if _, err := copyRows(ctx, g.tx, pgx.Identifier{"geoingest_staging"}, staged, nil, rows); err != nil {
			return err
		}
		if _, err := g.q.InsertStagedFeatures(ctx, db.InsertStagedFeaturesParams{TargetTable: target, JobRef: g.ref, Mapped: g.typed != nil}); err != nil {
			return normaliseErr(err)
		}
	}
	fin, err := g.q.FinishJobTable(ctx, db.FinishJobTableParams{TargetTable: target, JobRef: g.ref, Repair: job.Params.Invalid == ingest.PolicyRepair,
		Invalid: rows.Invalid, ServerCheck: rows.ServerCheck || rows.Switched(), JobID: job.ID})
	if err != nil {
		var pgErr *pgconn.PgError
		if job.Params.Invalid == ingest.PolicyFail && errors.As(err, &pgErr) && pgErr.Code == "22000" && strings.Contains(pgErr.Message, ": invalid geometry: ") {
			// The invalid policy's refusal (geoingest_finish_job_table),
			// named as the other policies name theirs, with its cause
			// (ingest.CauseOf; FailureHint reads the words of reasons
			// recorded before causes were).
			return ingest.PermanentCause(ingest.CauseInvalidGeometry, "%s (%s)", pgErr.Message, ingest.InvalidPolicyFailed)
		}
		return normaliseErr(err)
	}
	return s.recordWritten(ctx, g, job, r, rows, spool, fin, res)
}

// recordWritten checks a job's summarised rows (fin) against its
// policies, records them on the job's ledger row, and sets res: the tail
// of copyFeatures and of writeDiff (diffwrite.go). The features the
// policies skipped go to the quarantine (spool, quarantine.go), beside
// the ones the server quarantined (collapsed).
func (s *Store) recordWritten(ctx context.Context, g *gate, job ingest.Job, r ingest.LayerReader, rows *prepare.Features, spool *quarantineSpool, fin db.FinishJobTableRow, res *ingest.WriteResult) error {
	target := job.Params.Target
	written, area, repaired, collapsed := fin.Written, fin.AreaM2, fin.Repaired, fin.Collapsed
	if collapsed > 0 && job.Params.NullGeometry == ingest.PolicyFail {
		return ingest.Permanentf("%d features have no polygonal area left after repair", collapsed)
	}
	skipped, err := spool.flush(ctx, g.tx)
	if err != nil {
		return err
	}
	res.Quarantined = skipped + collapsed
	if box, ok := rows.Extent(); ok && !rows.Switched() && repaired == 0 {
		// The rows are the features as the workers saw them: the guards
		// need not aggregate them again (pending.go).
		g.extent = &box
	}
	if written == 0 {
		// Nothing to write is a wrong upload (a points or lines layer, an
		// empty layer), not an empty generation: committing it would
		// replace the source's current parcels with nothing.
		if rows.SkippedNull+rows.SkippedType+collapsed+rows.SkippedCast == 0 {
			// An emptied version (a FeatureCollection of none, a
			// shapefile of no records). Of a source with a current
			// generation it is what the guards are for (DESIGN: an
			// emptied file is held, never applied without an approval):
			// they hold it as pending, or --force applies it (the source
			// then has no features); refused otherwise (pending.go). A
			// source's first version of nothing is refused.
			if g.src.CurrentJobID.Valid && !job.Guards.Off {
				g.emptied = true
			} else {
				return emptiedError(target)
			}
		} else {
			cast := ""
			if rows.SkippedCast > 0 {
				// Nothing is quarantined when the job fails: name the first.
				cast = fmt.Sprintf(", %d with a value that does not cast under the mapping (the first: %s)", rows.SkippedCast, rows.FirstCast)
			}
			return ingest.PermanentCause(ingest.CauseWrongType, "no polygonal features to write for %s: %d null or empty, %d not polygonal (points or lines), %d with no area left after repair%s",
				target, rows.SkippedNull, rows.SkippedType, collapsed, cast)
		}
	}
	res.Features, res.AreaM2 = written, area
	g.rows = written
	if repaired == 0 && collapsed == 0 {
		g.cells = finishCells(g.tally, written)
	}
	s.metrics.FeaturesWritten.Add(float64(written))
	var linearised, droppedZM int64
	for _, l := range r.Layers() {
		linearised += l.Linearised
		droppedZM += l.DroppedZM
	}
	return g.q.FinishJob(ctx, db.FinishJobParams{
		JobID: job.ID, Status: "current", FeatureCount: written, TotalAreaM2: area, FeaturesChecksum: fin.FeaturesChecksum,
		Encoding: r.Layer().Encoding, SkippedNull: rows.SkippedNull + collapsed,
		SkippedType: rows.SkippedType, SkippedCast: rows.SkippedCast, RepairedInvalid: repaired,
		LinearisedCurves: linearised, DroppedZm: droppedZM, Quarantined: pgtype.Int8{Int64: res.Quarantined, Valid: true},
	})
}

// emptiedError refuses a version of no features: a source's first, one
// under guards turned off, or one the guards did not hold and no --force
// applied.
func emptiedError(target string) error {
	return ingest.PermanentCause(ingest.CauseWrongType, "no polygonal features to write for %s: the file has no features; an emptied version is refused, never applied "+
		"(a source's current generation stays; under the guards it is held as pending, for an operator to approve or reject)", target)
}

// copyRows streams the features feats yields into table with one binary
// COPY. The features are prepared by feats.Run (on several workers, each
// also encoding its rows as binary COPY tuples) and written in their
// input order by a third goroutine, all overlapping with the server's
// work on the rows already sent. With staged, the columns are the staging
// table's (feature_index, layer, properties, wkb) and the run is
// prepare.Staged; otherwise they are the feature table's (featureColumns,
// with the typed columns of typed), the run is prepare.Direct, and enc
// encodes them (featureTuple).
//
// Never COPY FREEZE, though a job's own table is created in its
// transaction: frozen rows are visible to every snapshot, also to a
// repeatable-read reader whose snapshot is older than the commit, which
// would then see the new generation beside the one it replaces.
//
// The table is geoingest_staging or the one that
// geoingest_create_job_storage returned: never input. It returns the
// features' own error when they stopped on one, so that its
// classification survives; a server error is classified by normaliseErr.
func copyRows(ctx context.Context, tx pgx.Tx, table pgx.Identifier, typed *typedCols, enc prepare.RowEncoder, feats *prepare.Features) (int64, error) {
	cols := featureColumns(typed)
	mode := prepare.Direct
	if typed == staged {
		cols = " (feature_index, layer, properties, wkb)"
		mode, enc = prepare.Staged, stagedTuple
	}
	return copyData(ctx, tx, "COPY "+table.Sanitize()+cols+" FROM STDIN (FORMAT binary)", func(w *bufio.Writer) error {
		return writeCopyData(w, feats, mode, enc)
	}, feats.Err)
}

// featureColumns are the columns of a feature table's tuple
// (featureTuple): featureCols, then the typed columns of typed (typed.go).
func featureColumns(typed *typedCols) string {
	return featureCols + typed.columns() + ")"
}

// featureCols are the columns of every feature table's tuple, less the
// closing parenthesis (featureColumns).
const featureCols = " (job_ref, feature_index, layer, properties, geom, area_m2, match_key, geom_hash, props_hash, raw_hash"

// staged is copyRows's typed columns for the staging table's tuple.
var staged = &typedCols{}

// copyData runs the COPY statement sql with the data that write writes
// (on a goroutine of its own, into a pipe). srcErr, called once write
// returned, is the source's own error, returned first.
func copyData(ctx context.Context, tx pgx.Tx, sql string, write func(w *bufio.Writer) error, srcErr func() error) (int64, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		w := bufio.NewWriterSize(pw, 1<<16)
		err := write(w)
		runErr = srcErr()
		pw.CloseWithError(err) // nil: the reader sees EOF, the end of the COPY data
	}()
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, pr, sql)
	pr.CloseWithError(io.ErrClosedPipe) // stops the producer if the server gave up first
	<-done
	if runErr != nil {
		return 0, runErr
	}
	if err != nil {
		return 0, normaliseErr(fmt.Errorf("copy: %w", err))
	}
	return tag.RowsAffected(), nil
}

// writeCopyData writes the binary COPY data: header, the tuples of the
// prepared features in input order, trailer.
func writeCopyData(w *bufio.Writer, feats *prepare.Features, mode prepare.Mode, enc prepare.RowEncoder) error {
	if _, err := w.Write(pgCopySignature); err != nil {
		return err
	}
	if err := feats.Run(mode, enc, func(out []byte) error {
		_, err := w.Write(out)
		return err
	}); err != nil {
		return err
	}
	if _, err := w.Write([]byte{0xff, 0xff}); err != nil { // the trailer: a tuple of -1 fields
		return err
	}
	return w.Flush()
}

// pgCopySignature is the binary COPY header: signature, flags, extension.
var pgCopySignature = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// featureTuple encodes a prepared feature as the feature table's tuple
// (featureCols): job_ref, feature_index, layer, properties (jsonb), geom
// (EWKB), area_m2, which is NULL for an unmeasured feature (the server
// measures and checks the rows with no area, see
// geoingest_finish_job_table), the match columns (migration 0029)
// for the source's key fields key (matchColumns; their hashes when
// hashes), raw_hash (the feature's salted raw hash, prepare/rawhash.go;
// NULL when it has none or the server must see the row), then the typed
// columns of typed from the feature's record (typed.go).
func featureTuple(ref int64, key []string, typed *typedCols, hashes bool) prepare.RowEncoder {
	sig := keySignature(key)
	return func(out []byte, f *prepare.Feature, p *prepare.Prepared) []byte {
		out, _, _, _ = appendFeature(out, ref, f, p, key, sig, typed, hashes)
		return out
	}
}

// featureFields is the count of the fields of featureCols.
const featureFields = 10

// appendFeature appends featureTuple's tuple of f for the key fields key
// (sig their keySignature) and the typed columns typed (the match hashes
// when hashes), and returns where in out its match columns are
// (out[match:end]) and whether the server must see the row (matchColumns).
func appendFeature(out []byte, ref int64, f *prepare.Feature, p *prepare.Prepared, key []string, sig []byte, typed *typedCols, hashes bool) (_ []byte, match, end int, must bool) {
	be := binary.BigEndian
	out = be.AppendUint16(out, uint16(featureFields+typed.n()))
	out = be.AppendUint32(out, 8)
	out = be.AppendUint64(out, uint64(ref))
	// A mapped record's values are found once, for its canonical text and
	// its typed columns (typed.go).
	var buf [66]int32
	sp := typed.spans(f, buf[:0])
	out, ph, canonical := canonicalFields(out, f, p, typed, sp)
	if !p.Measured {
		out = be.AppendUint32(out, math.MaxUint32) // -1: NULL
	} else {
		out = be.AppendUint32(out, 8)
		out = be.AppendUint64(out, math.Float64bits(p.Area))
	}
	match = len(out)
	out, must = matchColumns(out, f, p, key, sig, hashes, ph, canonical)
	end = len(out)
	// The raw hash (migration 0047) stands for the row as written here: a
	// row the server must see (measure, check, repair, hash) has none.
	if must || f.Raw == 0 {
		out = be.AppendUint32(out, math.MaxUint32)
	} else {
		out = be.AppendUint32(out, 8)
		out = be.AppendUint64(out, f.Raw)
	}
	if sp != nil {
		return typed.appendTypedSpans(out, f.Props, sp), match, end, must
	}
	return typed.appendTyped(out, f.Props), match, end, must
}

// matchColumns appends the match columns of a feature (migration 0029,
// ingest/prepare/identity.go): match_key (sig, the key's field names,
// then the feature's normalised key if it has one; NULL for a source
// with no key), geom_hash and props_hash. A geometry that the server may
// still change (unmeasured or invalid: measured, checked, repaired there)
// and properties that jsonb may read otherwise than CanonicalProps have
// NULL hashes, which the server computes when a match needs them; must
// reports either. Without hashes (the server's hash is not the writer's,
// serverHashesAgree) both hashes are NULL and the server must see every
// row. ph is the properties hash, of their canonical text when canonical
// (canonicalFields): otherwise they are not JSON that the writer reads as
// jsonb does.
func matchColumns(out []byte, f *prepare.Feature, p *prepare.Prepared, key []string, sig []byte, hashes bool, ph [16]byte, canonical bool) (_ []byte, must bool) {
	be := binary.BigEndian
	if len(key) == 0 {
		out = be.AppendUint32(out, math.MaxUint32)
	} else {
		at := len(out)
		out = be.AppendUint32(out, 0)
		out = append(out, sig...)
		out, _ = prepare.MatchKey(out, f.Props, key)
		be.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	if !hashes {
		out = be.AppendUint32(out, math.MaxUint32)
		return be.AppendUint32(out, math.MaxUint32), true
	}
	must = !p.Measured || !p.Valid
	if must {
		out = be.AppendUint32(out, math.MaxUint32)
	} else {
		gh := prepare.GeomHash(p.EWKB)
		out = be.AppendUint32(out, 16)
		out = append(out, gh[:]...)
	}
	if !canonical {
		return be.AppendUint32(out, math.MaxUint32), true
	}
	out = be.AppendUint32(out, 16)
	return append(out, ph[:]...), must
}

// keySignature is the start of every match_key under the key fields key:
// the names as a PostgreSQL text array, then ':' (the server's
// key_fields::text || ':'); nil for no key.
func keySignature(key []string) []byte {
	if len(key) == 0 {
		return nil
	}
	sig := []byte{'{'}
	for i, k := range key {
		if i > 0 {
			sig = append(sig, ',')
		}
		sig = prepare.ArrayElement(sig, []byte(k))
	}
	return append(sig, '}', ':')
}

// stagedTuple encodes a feature as the staging table's tuple:
// feature_index, layer, properties (jsonb), wkb (EWKB).
func stagedTuple(out []byte, f *prepare.Feature, p *prepare.Prepared) []byte {
	out = binary.BigEndian.AppendUint16(out, 4)
	return commonFields(out, f, p)
}

// canonicalFields appends commonFields' fields, the properties as their
// canonical text (prepare.CanonicalProps: what jsonb_out prints for them,
// keys unique and in jsonb's order) when it can, with the hash of that
// text: the server then reads the same jsonb value, but finds its keys
// sorted already, and no white space or escapes to drop; a 21-key object
// went into jsonb with a sort of its keys at every row. Properties that
// the canonicaliser does not read as jsonb does (canonical false) go as
// they came, for the server to read, or refuse, as it always has. A
// mapped record whose values were found (sp, typedCols.spans) is written member by
// member in its known key order (typedCols.canonicalRecord), the same
// bytes.
func canonicalFields(out []byte, f *prepare.Feature, p *prepare.Prepared, typed *typedCols, sp []int32) (_ []byte, ph [16]byte, canonical bool) {
	be := binary.BigEndian
	out = be.AppendUint32(out, 8)
	out = be.AppendUint64(out, uint64(f.Index))
	out = be.AppendUint32(out, uint32(len(f.Layer)))
	out = append(out, f.Layer...)
	at := len(out)
	out = be.AppendUint32(out, 0)
	out = append(out, 1) // jsonb binary format version
	var c []byte
	err := errNoSpans
	if sp != nil {
		c, err = typed.canonicalRecord(out, f.Props, sp)
	}
	if err != nil {
		c, err = prepare.CanonicalProps(out[:at+5], f.Props)
	}
	if err == nil {
		out = c
		ph, canonical = prepare.CanonicalHash(out[at+5:]), true
	} else {
		out = append(out[:at+5], f.Props...)
	}
	be.PutUint32(out[at:], uint32(len(out)-at-4))
	out = be.AppendUint32(out, uint32(len(p.EWKB)))
	return append(out, p.EWKB...), ph, canonical
}

// errNoSpans: a record's values were not found (canonicalFields).
var errNoSpans = errors.New("no spans")

// commonFields appends feature_index, layer, properties and the geometry.
func commonFields(out []byte, f *prepare.Feature, p *prepare.Prepared) []byte {
	be := binary.BigEndian
	out = be.AppendUint32(out, 8)
	out = be.AppendUint64(out, uint64(f.Index))
	out = be.AppendUint32(out, uint32(len(f.Layer)))
	out = append(out, f.Layer...)
	out = be.AppendUint32(out, uint32(len(f.Props)+1))
	out = append(out, 1) // jsonb binary format version
	out = append(out, f.Props...)
	out = be.AppendUint32(out, uint32(len(p.EWKB)))
	return append(out, p.EWKB...)
}
