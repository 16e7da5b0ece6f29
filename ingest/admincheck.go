package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/ingest/internal/db"
	"github.com/jackc/pgx/v5"
)

// AdminCheck is what is wrong with the admin layer of one pipeline version
// for an area report: key values shared by several units (their rows mix
// units), units that overlap (area in both is counted twice by the
// intersection method, and point-on-surface gives it to the lower id), and
// parcels where no unit is (they make the UnassignedUnit row).
type AdminCheck struct {
	PipelineVersion string `json:"pipeline_version"`
	AdminKey        string `json:"admin_key"`
	// Units is the number of current admin units.
	Units         int            `json:"units"`
	DuplicateKeys []DuplicateKey `json:"duplicate_keys"`
	Overlaps      []Overlap      `json:"overlaps"`
	Gaps          Gaps           `json:"gaps"`
	// Problems says each finding in a sentence; OK is true when there is
	// none.
	Problems []string `json:"problems"`
	OK       bool     `json:"ok"`
}

// DuplicateKey is a key value shared by several admin units.
type DuplicateKey struct {
	AdminUnit string  `json:"admin_unit"`
	UnitIDs   []int64 `json:"unit_ids"`
}

// Overlap is a pair of admin units whose interiors overlap, with the area
// of the overlap on the spheroid.
type Overlap struct {
	UnitA      int64   `json:"unit_a"`
	AdminUnitA string  `json:"admin_unit_a"`
	UnitB      int64   `json:"unit_b"`
	AdminUnitB string  `json:"admin_unit_b"`
	AreaM2     float64 `json:"area_m2"`
}

// Gaps is where parcels exist but no admin unit does: the parcels whose
// point on surface is in no unit and their area, and the parcels with
// area outside every unit and that area.
type Gaps struct {
	Parcels        int64   `json:"parcels"`
	AreaM2         float64 `json:"area_m2"`
	OutsideParcels int64   `json:"outside_parcels"`
	OutsideAreaM2  float64 `json:"outside_area_m2"`
}

// CheckAdmin checks the admin layer of a pipeline version ("" means the
// newest) with key values read from the property adminKey ("" means
// "name"). Returns a Permanent error for an invalid key, a Transient one
// when the database fails; findings are in the result, not errors.
func (s *PostGISStore) CheckAdmin(ctx context.Context, adminKey, version string) (*AdminCheck, error) {
	q := AreaQuery{AdminKey: adminKey, PipelineVersion: version}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, Transientf("admin check: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	qt := s.q.WithTx(tx)
	if version == "" {
		if version, err = qt.NewestPipelineVersion(ctx); err != nil {
			return nil, Transientf("admin check: %w", err)
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
func adminCheck(ctx context.Context, q *db.Queries, adminKey, version string, units []UnitCell) (*AdminCheck, error) {
	c := &AdminCheck{PipelineVersion: version, AdminKey: adminKey, DuplicateKeys: []DuplicateKey{}, Overlaps: []Overlap{}, Problems: []string{}}
	dups, err := q.AdminDuplicateKeys(ctx, db.AdminDuplicateKeysParams{AdminKey: adminKey, PipelineVersion: version})
	if err != nil {
		return nil, Transientf("admin check: duplicate keys: %w", err)
	}
	for _, d := range dups {
		c.DuplicateKeys = append(c.DuplicateKeys, DuplicateKey{AdminUnit: d.AdminUnit, UnitIDs: d.UnitIds})
		c.Problems = append(c.Problems, fmt.Sprintf("duplicate key: %d admin units (ids %s) have %s %q; their report rows are summed together",
			d.Units, joinIDs(d.UnitIds), adminKey, d.AdminUnit))
	}
	ovs, err := q.AdminOverlaps(ctx, db.AdminOverlapsParams{AdminKey: adminKey, PipelineVersion: version})
	if err != nil {
		return nil, Transientf("admin check: overlaps: %w", err)
	}
	for _, o := range ovs {
		c.Overlaps = append(c.Overlaps, Overlap{UnitA: o.UnitA, AdminUnitA: o.AdminUnitA, UnitB: o.UnitB, AdminUnitB: o.AdminUnitB, AreaM2: o.AreaM2})
		c.Problems = append(c.Problems, fmt.Sprintf("overlap: admin units %d (%q) and %d (%q) overlap by %.1f m²; intersection counts parcel area there twice",
			o.UnitA, o.AdminUnitA, o.UnitB, o.AdminUnitB, o.AreaM2))
	}
	for _, u := range units {
		if u.UnitID == 0 {
			c.Gaps = Gaps{Parcels: u.PosParcels, AreaM2: u.PosAreaM2, OutsideParcels: u.IntParcels, OutsideAreaM2: u.IntAreaM2}
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
			g.Parcels, g.AreaM2, where, g.OutsideParcels, g.OutsideAreaM2, UnassignedUnit))
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
