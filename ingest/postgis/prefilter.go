package postgis

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/jackc/pgx/v5"
)

// The raw-bytes prefilter of a diff write (migration 0049, docs/design.md
// "Versions as changes"). A stored row's raw hash (0047) is its feature's
// bytes in the file hashed under a salt that holds everything else that
// decides the row (prepare/rawhash.go): a feature of the new version with
// the same salted hash is that row. Inside the write gate, under the
// source's row lock, before the version streams (diffwrite.go):
//
//  1. the file is read once more for the hashes only (geomio's
//     RawHashOnly: delimited and hashed, not decoded), salted as the
//     prepare stage salts them, and copied into pg_temp.geoingest_raw;
//  2. one pass over the current generation's rows, joined with those
//     hashes (a FULL JOIN, migration 0051), finds the features kept by
//     their bytes and lists, at once, the match's old side: the rows not
//     kept. The kept features' match columns are copied from the rows into
//     the version's (geoingest_version), so that the match sees the whole
//     version, exactly as a full read would list it, and its pairs,
//     duplicate keys, feature ids and counts are a full read's; except,
//     for a keyed source, those whose row has a key (0050, the bypass
//     pairs): they stay out of the match, rows and features, and are
//     counted as unchanged key pairs, which they are when their key is
//     found once on each side. That is checked by a 64-bit hash of the
//     keys (a collision only puts a pair back): among the pairs and the
//     rows not kept in the same pass, among the version's listed rows by
//     the match (geoingest_diff_plan); a pair whose key is found again
//     goes back into the match, from its row;
//  3. the job's reader skips the kept features (geomio.Options.Skip,
//     filled before it reads anything: all the indexes copied but the
//     ones not kept, when those are fewer): only the other features are
//     parsed, prepared, spooled and, as needed, sent;
//  4. where the version needs a kept feature whole (a held version, kept
//     whole; a kept feature that the match does not pair unchanged, which
//     only repeated keys or contents can cause), it is copied from its
//     row on the server (geoingest_prefilter_send).
//
// The job's numbers are a full read's: the count and area add the kept
// rows'; the guards' extent adds their coordinates' extent; the drift
// guard's property keys are the parsed features' when those hold every
// key, with every kind, recorded for any version of the source (every
// stored row was read by one of them), else the whole file's, read again.
//
// The version is read whole, as without the prefilter, when: the store's
// NoPrefilter is set; the reader began before the gate (its skip set is
// closed); the job has a typed mapping (the drift keys of its rows cannot
// be had from them) or computes its report cells as it streams; the
// writer's hashes do not agree with the server's; a version of the source
// ever had curves linearised or Z/M coordinates dropped (the layers'
// counters of kept features would be missing); the format gives no raw
// hashes (only GeoJSON's streamed collections and sequences, and
// shapefiles, do); a layer is not in EPSG:4326 (the server transforms
// it); no feature is kept; or, with a table of its own, more of the
// version than Store.DiffRewriteAbove is not kept (it is likely written
// whole into that table). A prefiltered version is never written whole
// into its own table: it is changed in place.

// prefiltered is what the prefilter kept of a version.
type prefiltered struct {
	kept int64   // features kept by their bytes
	area float64 // their rows' area
	// bypassed of them are left out of the version and the match
	// (migration 0050: a keyed source's), with their area.
	bypassed     int64
	bypassedArea float64
	extent       [4]float64
	salts        map[string]uint64 // each layer's salt, by name, as the first read found it
	oldRef       int64             // the generation its rows are in
	layers       []geomio.Layer    // the layers the first read found, in order
}

// layersOf is r's layers with those whose every feature was kept (which
// the second read never yields) as the first read found them, in the
// file's order: the layers a full read lists. A layer's salt holds all of
// it but its counters, which are 0 for a kept feature (see above), so
// the first read's description of a layer is the second's.
func (p *prefiltered) layersOf(r ingest.LayerReader) ingest.LayerReader {
	if p == nil {
		return r
	}
	return keptLayers{LayerReader: r, pre: p}
}

type keptLayers struct {
	ingest.LayerReader
	pre *prefiltered
}

func (k keptLayers) Layers() []geomio.Layer {
	read := map[string]geomio.Layer{}
	for _, l := range k.LayerReader.Layers() {
		read[l.Name] = l
	}
	out := make([]geomio.Layer, 0, len(k.pre.layers))
	for _, l := range k.pre.layers {
		if r, ok := read[l.Name]; ok {
			l = r
		}
		out = append(out, l)
	}
	return out
}

// prefilter runs the prefilter's first read and its join (see above),
// and fills pf.Skip; nil when the version is to be read whole.
func (s *Store) prefilter(ctx context.Context, g *gate, job ingest.Job, pf *ingest.Prefilter, oldRef int64, key []string, hashes bool) (*prefiltered, error) {
	if s.NoPrefilter || s.prefilterOff.Load() || pf == nil || pf.Skip == nil || pf.Open == nil || pf.Skip.Started() ||
		g.typed != nil || g.tally != nil || !hashes || (g.ref > 0 && s.diffRewriteAbove() < 0) {
		return nil, nil
	}
	dropped, err := g.q.SourceDroppedCoordinates(ctx, db.SourceDroppedCoordinatesParams{
		SourceBucket: g.srcKey.SourceBucket, SourceKey: g.srcKey.SourceKey, TargetTable: g.srcKey.TargetTable})
	if err != nil {
		return nil, fmt.Errorf("prefilter: %w", err)
	}
	if dropped {
		return nil, nil
	}
	r, err := pf.Open(true)
	if err != nil {
		return nil, nil // the second read reports it
	}
	defer r.Close()
	if !r.Next() || r.Feature().RawHash == 0 || r.Layer().SRID != 4326 {
		return nil, nil // no features, a format without raw hashes, or transformed by the server
	}
	if err := g.q.PrefilterCreate(ctx); err != nil {
		return nil, fmt.Errorf("prefilter: %w", err)
	}
	pre := &prefiltered{salts: map[string]uint64{}, oldRef: oldRef}
	ok := true
	var sent geomio.SkipSet // the indexes whose hashes were copied
	copied, err := copyData(ctx, g.tx, "COPY pg_temp.geoingest_raw (fi, raw) FROM STDIN (FORMAT binary)", func(w *bufio.Writer) error {
		if _, err := w.Write(pgCopySignature); err != nil {
			return err
		}
		be := binary.BigEndian
		var buf [2 + 2*(4+8)]byte
		layer, salt := "", uint64(0)
		for first := true; first || r.Next(); first = false {
			f := r.Feature()
			if first || f.Layer != layer {
				l := r.Layer()
				if l.SRID != 4326 {
					ok = false // transformed by the server: read whole
					break
				}
				layer, salt = f.Layer, prepare.RawSalt(job.Params, l)
				if _, seen := pre.salts[layer]; !seen {
					pre.layers = append(pre.layers, l)
				}
				pre.salts[layer] = salt
			}
			if f.RawHash == 0 {
				continue
			}
			b := be.AppendUint16(buf[:0], 2)
			b = be.AppendUint32(b, 8)
			b = be.AppendUint64(b, uint64(f.Index))
			b = be.AppendUint32(b, 8)
			b = be.AppendUint64(b, prepare.SaltedRawHash(f.RawHash, salt))
			if _, err := w.Write(b); err != nil {
				return err
			}
			sent.Add(f.Index)
		}
		if _, err := w.Write([]byte{0xff, 0xff}); err != nil {
			return err
		}
		return w.Flush()
	}, func() error { return nil })
	if err != nil {
		return nil, fmt.Errorf("prefilter: raw hashes: %w", normaliseErr(err))
	}
	if !ok || r.Err() != nil {
		return nil, nil // the second read reports the file's error
	}
	m, err := g.q.PrefilterMatch(ctx, db.PrefilterMatchParams{TargetTable: job.Params.Target, OldRef: oldRef, KeyFields: key, Copied: copied})
	if err != nil {
		return nil, fmt.Errorf("prefilter: match: %w", normaliseErr(err))
	}
	if m.Kept == 0 || (g.ref > 0 && float64(m.Total-m.Kept) > s.diffRewriteAbove()*float64(m.Total)) {
		return nil, nil
	}
	// The reader skips the kept features: listed as all those sent but
	// the ones not kept where these are fewer (most of a version is kept,
	// and a set bit costs nothing on the wire).
	if m.Total-m.Kept < m.Kept {
		unkept, err := g.q.PrefilterUnkept(ctx)
		if err != nil {
			return nil, fmt.Errorf("prefilter: %w", err)
		}
		if pf.Skip.Started() || !pf.Skip.AddAllBut(&sent, unkept) {
			return nil, nil
		}
	} else {
		kept, err := g.q.PrefilterKept(ctx)
		if err != nil {
			return nil, fmt.Errorf("prefilter: %w", err)
		}
		if pf.Skip.Started() {
			return nil, nil
		}
		for _, fi := range kept {
			pf.Skip.Add(fi)
		}
	}
	// The generation's extent as its version recorded it (the guards'):
	// the kept rows' is found from its edges (migration 0050).
	var box []float64
	if st, err := g.q.JobStats(ctx, g.src.CurrentJobID.String); err == nil && st.MinX.Valid && st.MinY.Valid && st.MaxX.Valid && st.MaxY.Valid {
		box = []float64{st.MinX.Float64, st.MinY.Float64, st.MaxX.Float64, st.MaxY.Float64}
	} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("prefilter: %w", err)
	}
	k, err := g.q.PrefilterKeep(ctx, db.PrefilterKeepParams{TargetTable: job.Params.Target, OldRef: oldRef, BaseBox: box})
	if err != nil {
		return nil, fmt.Errorf("prefilter: keep: %w", normaliseErr(err))
	}
	if k.Kept != pf.Skip.Len() {
		return nil, fmt.Errorf("prefilter: %d features kept, %d skipped", k.Kept, pf.Skip.Len())
	}
	pre.kept, pre.area = k.Kept, k.AreaM2
	pre.bypassed, pre.bypassedArea = k.Bypassed, k.BypassedArea
	pre.extent = [4]float64{k.MinX, k.MinY, k.MaxX, k.MaxY}
	s.prefilterKept.Add(k.Kept)
	s.log.Debug("prefilter", "job", job.ID, "features", m.Total, "kept", k.Kept)
	ingest.HookAt(ctx, ingest.HookDuringPrefilter, ingest.HookWhere{Job: job.ID})
	return pre, nil
}

// errPrefilterDisagrees is a prefiltered version whose second read found
// its layers otherwise than its first: the job fails (transiently), and
// the store reads every version whole from then on.
var errPrefilterDisagrees = ingest.Transientf("prefilter: the second read's layers are not the first's: read whole from now on")

// checkLayers holds the second read's layers (r, read to its end) to the
// salts the first read found: a kept feature was kept under its layer's
// salt. Where they differ the job fails (a retry reads it whole).
func (s *Store) checkLayers(pre *prefiltered, job ingest.Job, r ingest.LayerReader) error {
	seen := map[string]bool{}
	for _, l := range r.Layers() {
		if seen[l.Name] {
			continue
		}
		seen[l.Name] = true
		if salt, ok := pre.salts[l.Name]; !ok || salt != prepare.RawSalt(job.Params, l) {
			s.prefilterOff.Store(true)
			s.log.Error("prefilter: a layer read twice differs: every version is read whole from now on", "job", job.ID, "layer", l.Name)
			return errPrefilterDisagrees
		}
	}
	return nil
}

// versionKeys is the drift guard's property keys of a prefiltered version:
// the parsed features' (parsed), when they hold every key, with every kind,
// recorded for a version of the source (the kept features' rows were read
// by one of them); else the whole file's, read again.
func (s *Store) versionKeys(ctx context.Context, g *gate, pf *ingest.Prefilter, parsed map[string]uint8) (map[string]uint8, error) {
	all, err := g.q.SourceJobKeys(ctx, db.SourceJobKeysParams{
		SourceBucket: g.srcKey.SourceBucket, SourceKey: g.srcKey.SourceKey, TargetTable: g.srcKey.TargetTable})
	if err != nil {
		return nil, fmt.Errorf("prefilter: keys: %w", err)
	}
	covered := true
	for _, raw := range all {
		var ks map[string]uint8
		if err := json.Unmarshal(raw, &ks); err != nil {
			return nil, fmt.Errorf("prefilter: keys: %w", err)
		}
		for k, kinds := range ks {
			if have, ok := parsed[k]; !ok || kinds&^have != 0 {
				covered = false
			}
		}
	}
	if covered {
		return parsed, nil
	}
	r, err := pf.Open(false)
	if err != nil {
		return nil, ingest.Transientf("prefilter: keys: %w", err)
	}
	defer r.Close()
	kr := ingest.NewKeysReader(ingest.LogLayers(r))
	for kr.Next() {
	}
	if err := kr.Err(); err != nil {
		return nil, err
	}
	return kr.Keys(), nil
}

// grow adds the kept rows' extent to a version's.
func (p *prefiltered) grow(sp *versionSpool, box *[4]float64) {
	if p == nil || math.IsNaN(p.extent[0]) {
		return
	}
	sp.grow(p.extent)
	if box != nil {
		box[0], box[1] = math.Min(box[0], p.extent[0]), math.Min(box[1], p.extent[1])
		box[2], box[3] = math.Max(box[2], p.extent[2]), math.Max(box[3], p.extent[3])
	}
}
