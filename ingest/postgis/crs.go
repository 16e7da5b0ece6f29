package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterCRS returns the SRID under which PostGIS knows a CRS that
// crs.Resolve resolved; it is geomio's Options.RegisterCRS.
//
//   - An EPSG CRS (Authority, Identified) is its EPSG code when
//     spatial_ref_sys has it. PostGIS's spatial_ref_sys is older than
//     PROJ's database, so a recent code may be missing: it is then
//     registered with auth_name 'EPSG' and its code, so that PostGIS builds
//     it from PROJ's database like any other.
//   - A custom CRS (no EPSG equivalent) is registered with its own
//     definition (PROJ's WKT and PROJ string), auth_name 'GEOINGEST'.
//
// Registered CRSs take the lowest free SRID of geoingest's range
// 990000-998999, once per definition, recorded in custom_crs: identical
// definitions share one SRID, and two workers registering one at once
// serialise on an advisory lock, in a short transaction of its own (a
// registered CRS that no job ends up using is harmless). SRIDs are cached
// in the Store. A full range is a Permanent error; database errors are
// Transient.
func (s *Store) RegisterCRS(c crs.CRS) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, def := c.Definition, c.PROJString
	var epsg pgtype.Int4
	switch {
	case c.Method == crs.Custom && c.Definition != "":
	case c.EPSG > 0:
		known, err := s.KnownSRID(ctx, c.EPSG)
		if err != nil {
			return 0, ingest.Transientf("check srid: %w", err)
		}
		if known {
			return c.EPSG, nil
		}
		key, epsg = fmt.Sprintf("EPSG:%d", c.EPSG), pgtype.Int4{Int32: int32(c.EPSG), Valid: true}
	default:
		return 0, ingest.Permanentf("register CRS: %s has neither an EPSG code nor a definition", c)
	}
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:])
	if srid, ok := s.customCRS.Load(hash); ok {
		return srid.(int), nil
	}
	srid, err := s.q.CustomCRSByHash(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		wkt := c.Definition
		if epsg.Valid {
			if wkt, def, err = crs.EPSGDefinition(c.EPSG); err != nil {
				return 0, ingest.Transientf("register EPSG:%d: %w", c.EPSG, err)
			}
		}
		srid, err = s.registerCRS(ctx, db.RegisterCustomCRSParams{DefinitionSha256: hash, Epsg: epsg, Name: c.Name,
			Srtext: pgtype.Text{String: wkt, Valid: true}, Proj4text: pgtype.Text{String: def, Valid: true}})
	}
	if err != nil {
		return 0, err
	}
	s.customCRS.Store(hash, int(srid))
	return int(srid), nil
}

func (s *Store) registerCRS(ctx context.Context, p db.RegisterCustomCRSParams) (int32, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, ingest.Transientf("register CRS: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	q := s.q.WithTx(tx)
	if err := q.LockCustomCRS(ctx); err != nil {
		return 0, ingest.Transientf("register CRS: %w", err)
	}
	srid, err := q.CustomCRSByHash(ctx, p.DefinitionSha256) // registered while we waited?
	if errors.Is(err, pgx.ErrNoRows) {
		srid, err = q.RegisterCustomCRS(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, ingest.Permanentf("register CRS %q: geoingest's SRID range 990000-998999 is full", p.Name)
		}
	}
	if err != nil {
		return 0, ingest.Transientf("register CRS: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, ingest.Transientf("register CRS: %w", err)
	}
	s.log.Info("registered a CRS in spatial_ref_sys", "srid", srid, "crs", p.Name, "epsg", p.Epsg.Int32)
	return srid, nil
}

// recordJobCRS records on the job, in the write-gate transaction, the CRS
// of every layer r read, its geometry field and what was changed of its
// geometries. Layers that share a name are one row: the first one's CRS
// and field, the counts of all of them.
func recordJobCRS(ctx context.Context, q *db.Queries, jobID string, r ingest.LayerReader) error {
	layers := r.Layers()
	seen := map[string]bool{}
	for i, l := range layers {
		if seen[l.Name] {
			continue
		}
		seen[l.Name] = true
		linearised, droppedZM := l.Linearised, l.DroppedZM
		for _, o := range layers[i+1:] {
			if o.Name == l.Name {
				linearised += o.Linearised
				droppedZM += o.DroppedZM
			}
		}
		c := l.CRS
		method := string(c.Method)
		if method == "" {
			method = "none"
		}
		confident := c.Method == crs.Identified || c.Method == crs.Authority
		if err := q.RecordJobCRS(ctx, db.RecordJobCRSParams{
			JobID: jobID, Layer: l.Name, Method: method, Srid: int32(l.SRID),
			Epsg:       pgtype.Int4{Int32: int32(c.EPSG), Valid: c.EPSG != 0},
			Confidence: pgtype.Int4{Int32: int32(c.Confidence), Valid: confident},
			CrsName:    c.Name, Definition: c.Definition, Transformation: c.Transformation, // Definition: custom only
			SourceText:    l.CRSText,
			GeometryField: l.GeometryField, LinearisedCurves: linearised, DroppedZm: droppedZM,
		}); err != nil {
			return err
		}
	}
	return nil
}

// JobCRS returns the CRSs the layers of a written job were read in.
func (s *Store) JobCRS(ctx context.Context, jobID string) ([]ingest.LayerCRS, error) {
	rows, err := s.q.JobCRS(ctx, jobID)
	if err != nil {
		return nil, ingest.Transientf("job crs: %w", err)
	}
	out := make([]ingest.LayerCRS, 0, len(rows))
	for _, r := range rows {
		out = append(out, layerCRS(r))
	}
	return out, nil
}

// layerCRS is one row of job_crs as ingest describes it.
func layerCRS(r db.JobCRSRow) ingest.LayerCRS {
	l := ingest.LayerCRS{Layer: r.Layer, Method: r.Method, SRID: int(r.Srid), EPSG: int(r.Epsg.Int32),
		Name: r.CrsName, Definition: r.Definition, Transformation: r.Transformation, SourceText: r.SourceText,
		GeometryField: r.GeometryField, LinearisedCurves: r.LinearisedCurves, DroppedZM: r.DroppedZm}
	if r.Confidence.Valid {
		c := int(r.Confidence.Int32)
		l.Confidence = &c
	}
	return l
}

// KnownSRID reports whether spatial_ref_sys has srid, caching the answer.
// It is the feature preparation's SRID check (prepare.KnownSRID).
func (s *Store) KnownSRID(ctx context.Context, srid int) (bool, error) {
	s.sridMu.Lock()
	known, ok := s.sridKnown[srid]
	s.sridMu.Unlock()
	if ok {
		return known, nil
	}
	known, err := s.q.SRIDKnown(ctx, int32(srid))
	if err != nil {
		return false, err
	}
	s.sridMu.Lock()
	s.sridKnown[srid] = known
	s.sridMu.Unlock()
	return known, nil
}
