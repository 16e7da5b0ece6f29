package postgis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// CheckAdmin checks the admin layer of a pipeline version ("" means the
// newest) with key values read from the property adminKey ("" means
// "name"). Returns a Permanent error for an invalid key, a Transient one
// when the database fails; findings are in the result, not errors.
func (s *Store) CheckAdmin(ctx context.Context, adminKey, version string) (*ingest.AdminCheck, error) {
	q := ingest.AreaQuery{AdminKey: adminKey, PipelineVersion: version}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, ingest.Transientf("admin check: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	qt := s.q.WithTx(tx)
	// The locks first, the snapshot after them (retirewhole.go).
	if err := qt.LockFeatureViews(ctx); err != nil {
		return nil, ingest.Transientf("admin check: %w", err)
	}
	if version == "" {
		if version, err = qt.NewestPipelineVersion(ctx); err != nil {
			return nil, ingest.Transientf("admin check: %w", err)
		}
	}
	units, err := unitCells(ctx, qt, q.AdminKey, version, false)
	if err != nil {
		return nil, err
	}
	return adminCheck(ctx, qt, q.AdminKey, version, units)
}

// adminCheck runs the checks in q's snapshot; units are that snapshot's
// unit cells.
func adminCheck(ctx context.Context, q *db.Queries, adminKey, version string, units []ingest.UnitCell) (*ingest.AdminCheck, error) {
	c := &ingest.AdminCheck{PipelineVersion: version, AdminKey: adminKey, DuplicateKeys: []ingest.DuplicateKey{}, Overlaps: []ingest.Overlap{}, Problems: []string{}}
	dups, err := q.AdminDuplicateKeys(ctx, db.AdminDuplicateKeysParams{AdminKey: adminKey, PipelineVersion: version})
	if err != nil {
		return nil, ingest.Transientf("admin check: duplicate keys: %w", err)
	}
	for _, d := range dups {
		c.DuplicateKeys = append(c.DuplicateKeys, ingest.DuplicateKey{AdminUnit: d.AdminUnit, UnitIDs: d.UnitIds})
		c.Problems = append(c.Problems, fmt.Sprintf("duplicate key: %d admin units (ids %s) have %s %q; their report rows are summed together",
			d.Units, joinIDs(d.UnitIds), adminKey, d.AdminUnit))
	}
	ovs, err := q.AdminOverlaps(ctx, db.AdminOverlapsParams{AdminKey: adminKey, PipelineVersion: version})
	if err != nil {
		return nil, ingest.Transientf("admin check: overlaps: %w", err)
	}
	for _, o := range ovs {
		c.Overlaps = append(c.Overlaps, ingest.Overlap{UnitA: o.UnitA, AdminUnitA: o.AdminUnitA, UnitB: o.UnitB, AdminUnitB: o.AdminUnitB, AreaM2: o.AreaM2})
		c.Problems = append(c.Problems, fmt.Sprintf("overlap: admin units %d (%q) and %d (%q) overlap by %.1f m²; intersection counts parcel area there twice",
			o.UnitA, o.AdminUnitA, o.UnitB, o.AdminUnitB, o.AreaM2))
	}
	for _, u := range units {
		if u.UnitID == 0 {
			c.Gaps = ingest.Gaps{Parcels: u.PosParcels, AreaM2: u.PosAreaM2, OutsideParcels: u.IntParcels, OutsideAreaM2: u.IntAreaM2}
		} else {
			c.Units++
		}
	}
	if g := c.Gaps; g.Parcels > 0 || g.OutsideParcels > 0 {
		where := "outside the admin units"
		if c.Units == 0 {
			where = "with no admin unit at all (no current admin layer for this pipeline version)"
		}
		c.Problems = append(c.Problems, fmt.Sprintf("coverage gap: %d parcels (%.1f m²) have their point on surface %s, and %d parcels have %.1f m² outside every unit; they make the %s row",
			g.Parcels, g.AreaM2, where, g.OutsideParcels, g.OutsideAreaM2, ingest.UnassignedUnit))
	}
	c.OK = len(c.Problems) == 0
	return c, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}
