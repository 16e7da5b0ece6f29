package kml_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/kml"
	"github.com/stretchr/testify/require"
)

// The names geomio's callers know these by.
type (
	Options = core.Options
	Limits  = core.Limits
)

func IsInputError(err error) bool { return core.IsInputError(err) }
func IsLimitError(err error) bool { return core.IsLimitError(err) }

// TestKMLErrorsNameWhere: a KML over a bound or broken fails with an
// *Error that names the file, the layer and the placemark, whichever pass
// finds it; a limit is a LimitError that says how to raise it.
func TestKMLErrorsNameWhere(t *testing.T) {
	dir := t.TempDir()
	poly := `<Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon>`
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(`<kml><Document><Folder><name>parcels</name>`+body+`</Folder></Document></kml>`), 0o644))
		return p
	}
	// Found while reading: the feature's Index.
	p := write("vertices.kml", `<Placemark>`+poly+`</Placemark><Placemark><LineString><coordinates>`+strings.Repeat("1,2 ", 11)+`</coordinates></LineString></Placemark>`)
	_, err := readAllKML(p, Options{Limits: Limits{MaxVertices: 10}})
	require.ErrorContains(t, err, p+`: layer "parcels", feature 1, line 1: more than 10 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`)
	require.True(t, IsLimitError(err))
	// Found by the first pass: the placemark's position in its layer.
	p = write("token.kml", `<Placemark>`+poly+`</Placemark><Placemark><description>`+strings.Repeat("x", 2000)+`</description></Placemark>`)
	_, err = readAllKML(p, Options{Limits: Limits{MaxRecordBytes: 1000}})
	require.ErrorContains(t, err, p+`: layer "parcels", placemark 1 of the layer, line 1: more than 1000 bytes in one XML token`)
	require.True(t, IsLimitError(err))
	// Broken XML: the line.
	p = write("broken.kml", "<Placemark>\n"+poly+"\n</Placemark><Placemark><name>x</nam></Placemark>")
	_, err = readAllKML(p, Options{})
	require.ErrorContains(t, err, p+": invalid KML at ")
	require.ErrorContains(t, err, "line 3")
	require.True(t, IsInputError(err))
}

// readAllKML opens p as geomio.Open opens a .kml (the default limits
// filled in, every feature checked against them) and counts its features.
func readAllKML(p string, opts Options) (int, error) {
	opts.Limits = opts.Limits.WithDefaults()
	lr, err := kml.Open(p, p, kml.Base(p), opts, 0, nil)
	if err != nil {
		return 0, err
	}
	r := core.WithLimits(lr, p, opts.Limits)
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	return n, r.Err()
}
