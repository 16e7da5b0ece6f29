package ingest

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
