package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
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
	AdminUnit string  `json:"admin_unit"`
	Parcels   int64   `json:"parcels"`
	AreaM2    float64 `json:"area_m2"`
	AreaHa    float64 `json:"area_ha"`
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

func requireMatchesOracle(t *testing.T, want []oracleRow, got []reportRow) {
	t.Helper()
	require.Len(t, got, len(want))
	by := map[string]reportRow{}
	for _, r := range got {
		by[r.AdminUnit] = r
	}
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
		rows = append(rows, reportRow{r[0], n, m2, ha})
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
		var rows []reportRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		requireMatchesOracle(t, want, rows)
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
			var rows []reportRow
			require.NoError(t, json.Unmarshal([]byte(out), &rows))
			requireMatchesOracle(t, want, rows)
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
	} {
		code, _, errOut := run(t, nil, args...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}
