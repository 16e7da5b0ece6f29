package main

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

const (
	synthParcels    = "../../testdata/synthetic/parcels_10k.geojson"
	synthAdmin      = "../../testdata/synthetic/admin.geojson"
	synthOracle     = "../../testdata/synthetic/report_oracle.json"
	bristolMSOA     = "../../testdata/corpus/bristol_msoa_bng/middlelayersupperoutputareas_bristol_bng.geojson"
	bristolBound    = "../../testdata/corpus/bristol_boundary_bng/boundary_bristol_bng.geojson"
	corpusOracle    = "../../testdata/corpus/oracle.json"
	reportHeaderCSV = "admin_unit,parcels,area_m2,area_ha"
)

type reportRow struct {
	AdminUnit  string  `json:"admin_unit"`
	Parcels    int64   `json:"parcels"`
	AreaM2     float64 `json:"area_m2"`
	AreaHa     float64 `json:"area_ha"`
	Unassigned bool    `json:"unassigned"`
}

// reportJSON is the JSON of `report area --format json`.
type reportJSON struct {
	Method          string      `json:"method"`
	PipelineVersion string      `json:"pipeline_version"`
	Rows            []reportRow `json:"rows"`
	Total           reportRow   `json:"total"`
	Unassigned      reportRow   `json:"unassigned"`
	Reconciled      bool        `json:"reconciled"`
	AdminCheck      struct {
		OK            bool     `json:"ok"`
		Problems      []string `json:"problems"`
		DuplicateKeys []struct {
			AdminUnit string  `json:"admin_unit"`
			UnitIDs   []int64 `json:"unit_ids"`
		} `json:"duplicate_keys"`
		Overlaps []struct {
			AreaM2 float64 `json:"area_m2"`
		} `json:"overlaps"`
	} `json:"admin_check"`
}

type oracleRow struct {
	Admin    string  `json:"admin"`
	N        int64   `json:"n_parcels"`
	NOverlap int64   `json:"n_parcels_overlapping"`
	AreaM2   float64 `json:"area_m2"`
	Area     float64 `json:"area"`
}

// ingestInto runs `geoingest ingest` on a file into target, twice (a
// duplicate delivery must change nothing).
func ingestInto(t *testing.T, env map[string]string, path, target string) {
	t.Helper()
	for i := 0; i < 2; i++ {
		code, _, errOut := run(t, env, "ingest", "--target", target, path)
		require.Equal(t, 0, code, errOut)
	}
}

// requireMatchesOracle checks the admin-unit rows (not the unassigned
// one) against the oracle.
func requireMatchesOracle(t *testing.T, want []oracleRow, rows []reportRow) {
	t.Helper()
	var got []reportRow
	by := map[string]reportRow{}
	for _, r := range rows {
		if r.AdminUnit != "(unassigned)" {
			got = append(got, r)
			by[r.AdminUnit] = r
		}
	}
	require.Len(t, got, len(want))
	for _, w := range want {
		g, ok := by[w.Admin]
		require.True(t, ok, "admin unit %q missing", w.Admin)
		n, area := w.N, w.AreaM2
		if w.NOverlap != 0 {
			n = w.NOverlap
		}
		if area == 0 {
			area = w.Area
		}
		require.Equal(t, n, g.Parcels, "parcels of %q", w.Admin)
		require.InEpsilon(t, area, g.AreaM2, 1e-4, "area of %q", w.Admin)
		require.InEpsilon(t, g.AreaM2/1e4, g.AreaHa, 1e-6, "hectares of %q", w.Admin)
	}
}

func parseReportCSV(t *testing.T, out string) []reportRow {
	t.Helper()
	require.True(t, strings.HasPrefix(out, reportHeaderCSV+"\n"), "CSV header: %q", strings.SplitN(out, "\n", 2)[0])
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	var rows []reportRow
	for _, r := range recs[1:] {
		require.Len(t, r, 4)
		n, err := strconv.ParseInt(r[1], 10, 64)
		require.NoError(t, err)
		m2, err := strconv.ParseFloat(r[2], 64)
		require.NoError(t, err)
		ha, err := strconv.ParseFloat(r[3], 64)
		require.NoError(t, err)
		rows = append(rows, reportRow{AdminUnit: r[0], Parcels: n, AreaM2: m2, AreaHa: ha})
	}
	return rows
}

func TestReportAreaSyntheticMatchesOracle(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	ingestInto(t, env, synthParcels, "parcels")
	ingestInto(t, env, synthAdmin, "admin_units")
	var oracle struct {
		ByPointOnSurface []oracleRow `json:"by_point_on_surface"`
		ByIntersection   []oracleRow `json:"by_intersection"`
	}
	b, err := os.ReadFile(synthOracle)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &oracle))

	for method, want := range map[string][]oracleRow{"point-on-surface": oracle.ByPointOnSurface, "intersection": oracle.ByIntersection} {
		code, out, errOut := run(t, env, "report", "area", "--method", method, "--format", "csv")
		require.Equal(t, 0, code, errOut)
		requireMatchesOracle(t, want, parseReportCSV(t, out))

		code, out, errOut = run(t, env, "report", "area", "--method", method, "--format", "json")
		require.Equal(t, 0, code, errOut)
		var rep reportJSON
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		requireMatchesOracle(t, want, rep.Rows)
		require.True(t, rep.Reconciled)
		require.EqualValues(t, 10000, rep.Total.Parcels)
		require.True(t, rep.AdminCheck.OK, "%v", rep.AdminCheck.Problems)
		require.Contains(t, errOut, "the rows add up to the total")
		require.NotContains(t, errOut, "WARNING")
	}

	// The default is an aligned table of the point-on-surface method.
	code, out, errOut := run(t, env, "report", "area")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 1+120+2, "header, 120 units, rule, total")
	require.True(t, strings.HasPrefix(lines[0], "admin_unit "))
	require.Contains(t, lines[0], "area_ha")
	width := len([]rune(lines[0]))
	for _, l := range lines[1:] {
		require.Equal(t, width, len([]rune(l)), "misaligned line %q", l)
	}
	require.Regexp(t, `^total +10000 +1502728\d{3}\.\d +150272\.\d{4}$`, lines[len(lines)-1])
}

func TestReportAreaBristolMatchesOracle(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	var oracle struct {
		AreaByAdmin []struct {
			Pair     string `json:"pair"`
			AdminKey string `json:"admin_key"`
			Geog     struct {
				ByPointOnSurface []oracleRow `json:"by_point_on_surface"`
				ByIntersection   []oracleRow `json:"by_intersection"`
			} `json:"geography_m2"`
		} `json:"area_by_admin"`
	}
	b, err := os.ReadFile(corpusOracle)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &oracle))
	ingestInto(t, env, bristolMSOA, "parcels")
	ingestInto(t, env, bristolBound, "admin_units")
	found := false
	for _, pair := range oracle.AreaByAdmin {
		if pair.Pair != "bristol_msoa_by_boundary" {
			continue
		}
		found = true
		for method, want := range map[string][]oracleRow{"point-on-surface": pair.Geog.ByPointOnSurface, "intersection": pair.Geog.ByIntersection} {
			code, out, errOut := run(t, env, "report", "area", "--method", method, "--admin-key", pair.AdminKey, "--format", "json")
			require.Equal(t, 0, code, errOut)
			var rep reportJSON
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			requireMatchesOracle(t, want, rep.Rows)
		}
	}
	require.True(t, found)
}

func TestReportUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"report"},
		{"report", "volume"},
		{"report", "area", "--method", "centroid"},
		{"report", "area", "--format", "xml"},
		{"report", "area", "--admin-key", "x'); DROP TABLE parcels; --"},
		{"report", "area", "extra"},
		{"report", "admin-check", "--format", "xml"},
		{"report", "refresh", "extra"},
	} {
		code, _, errOut := run(t, nil, args...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}

// writeBoxes writes a FeatureCollection of named boxes, in grid cells of
// 1/512 degree from (13, 52).
func writeBoxes(t *testing.T, path string, boxes map[string][4]float64) {
	t.Helper()
	var fs []string
	for name, b := range boxes {
		x0, y0, x1, y1 := 13+b[0]/512, 52+b[1]/512, 13+b[2]/512, 52+b[3]/512
		fs = append(fs, fmt.Sprintf(`{"type":"Feature","properties":{"name":%q},"geometry":{"type":"Polygon","coordinates":[[[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g],[%.17g,%.17g]]]}}`,
			strings.Fields(name)[0], x0, y0, x1, y0, x1, y1, x0, y1, x0, y0))
	}
	sort.Strings(fs)
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",\n")+"]}"), 0o644))
}

// TestReportBrokenAdminLayerCommand runs the reports over an admin layer
// with a duplicate key, an overlap and a parcel outside every unit: `report
// area` says so on stderr and in the JSON, `report admin-check` exits 1,
// and the SVG map is well-formed and says what it shows.
func TestReportBrokenAdminLayerCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	dir := t.TempDir()
	// Names sort so that ids follow: "A 1" < "A 2" < "B".
	writeBoxes(t, dir+"/admin.geojson", map[string][4]float64{"A 1": {0, 0, 4, 4}, "A 2": {4, 0, 8, 4}, "B": {2, 0, 6, 2}})
	writeBoxes(t, dir+"/parcels.geojson", map[string][4]float64{"p1": {2.5, 0.5, 3, 1}, "p2": {5, 3, 6, 3.5}, "p3": {10, 0, 11, 1}})
	ingestInto(t, env, dir+"/parcels.geojson", "parcels")
	ingestInto(t, env, dir+"/admin.geojson", "admin_units")

	code, out, errOut := run(t, env, "report", "area", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var rep reportJSON
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.False(t, rep.AdminCheck.OK)
	require.Len(t, rep.AdminCheck.DuplicateKeys, 1)
	require.Equal(t, "A", rep.AdminCheck.DuplicateKeys[0].AdminUnit)
	require.Len(t, rep.AdminCheck.Overlaps, 2)
	require.Greater(t, rep.AdminCheck.Overlaps[0].AreaM2, 0.0)
	require.Equal(t, "(unassigned)", rep.Rows[len(rep.Rows)-1].AdminUnit)
	require.EqualValues(t, 1, rep.Unassigned.Parcels)
	require.True(t, rep.Reconciled)
	require.EqualValues(t, 3, rep.Total.Parcels)
	require.Contains(t, errOut, "WARNING: the admin layer (pipeline version 1) has 4 problems")
	require.Contains(t, errOut, "duplicate key")
	require.Contains(t, errOut, "overlap")
	require.Contains(t, errOut, "coverage gap")

	// The table: header, A, B, (unassigned), rule, total.
	code, out, errOut = run(t, env, "report", "area")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 6, out)
	require.Regexp(t, `^\(unassigned\) +1 `, lines[3])
	require.Regexp(t, `^total +3 `, lines[5])

	code, out, _ = run(t, env, "report", "admin-check")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "3 units")
	require.Contains(t, out, "FAILED: 4 problems")

	code, out, errOut = run(t, env, "report", "area", "--method", "intersection", "--format", "svg")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "WARNING: the rows do not add up", "the overlap counts area twice")
	dec := xml.NewDecoder(strings.NewReader(out))
	paths := 0
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is not well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			text.Write(el)
		}
	}
	require.Equal(t, 3, paths, "one path per admin unit")
	require.Contains(t, text.String(), "pipeline geoingest version 1")
	require.Contains(t, text.String(), "Admin layer check: 4 problems")
	require.Contains(t, text.String(), "intersection")
}
