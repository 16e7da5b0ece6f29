package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSourcePrefix(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                     {"", ""},
		"parcels/2024/":        {"", "parcels/2024/"},
		"s3://uploads":         {"uploads", ""},
		"s3://uploads/parcels": {"uploads", "parcels"},
		"file:///srv/inbox/":   {LocalBucket, "/srv/inbox/"},
		// As Source.String names a GCS or Azure source.
		"gs://county-uploads/parcels/a.zip": {"county-uploads", "parcels/a.zip"},
		"azblob://uploads/parcels/a.zip":    {"uploads", "parcels/a.zip"},
	} {
		b, k := ParseSourcePrefix(in)
		require.Equal(t, want, [2]string{b, k}, in)
	}
	// Every source as Source.String names it is read back.
	for _, src := range []Source{{Bucket: "b", Key: "p/x.zip"}, {Bucket: "b", Key: "p/x.zip", Store: StoreGCS},
		{Bucket: "c", Key: "p/x.zip", Store: StoreAzure}, {Bucket: LocalBucket, Key: "/srv/x.shp"}} {
		b, k := ParseSourcePrefix(src.String())
		require.Equal(t, [2]string{src.Bucket, src.Key}, [2]string{b, k}, src.String())
	}
}

func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	c := FormatCursor(at, "uploads", "parcels/a <b>.zip", "parcels", "1")
	got, keys, err := ParseCursor(c, 4)
	require.NoError(t, err)
	require.True(t, at.Equal(got))
	require.Equal(t, []string{"uploads", "parcels/a <b>.zip", "parcels", "1"}, keys)
	_, keys, err = ParseCursor(FormatCursor(at, "odd\x1f\"key\"\u00e9"), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"odd\x1f\"key\"\u00e9"}, keys)
	for _, bad := range []string{"", "zzz", c + "!", FormatCursor(at, "x")} {
		_, _, err := ParseCursor(bad, 4)
		require.Error(t, err, bad)
		require.Equal(t, Permanent, KindOf(err))
	}
}

// FuzzParseCursor: a cursor from the query string never panics, and one
// that parses formats back to itself.
func FuzzParseCursor(f *testing.F) {
	f.Add(FormatCursor(time.Unix(0, 0), "a"), 1)
	f.Add(FormatCursor(time.Now(), "b", "k", "t", "v"), 4)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, c string, n int) {
		if n < 0 || n > 8 {
			return
		}
		at, keys, err := ParseCursor(c, n)
		if err != nil {
			return
		}
		again, keys2, err := ParseCursor(FormatCursor(at, keys...), n)
		if err != nil || !again.Equal(at) || strings.Join(keys, "\x00") != strings.Join(keys2, "\x00") {
			t.Fatalf("cursor %q: round trip gives %v %q, %v", c, again, keys2, err)
		}
	})
}

func TestFailureHint(t *testing.T) {
	for reason, want := range map[string]string{
		`layer "c": unknown CRS (no .prj or crs member that names one); give the source SRID (--source-srid) if you know it`: "source-srid",
		"feature 3: invalid geometry: Self-intersection (invalid policy is fail)":                                            "invalid=repair",
		"feature 3: invalid geometry: Self-intersection":                                                                     "invalid=repair",
		"feature 0: null or empty geometry (null-geometry policy is fail)":                                                   "null-geometry=skip",
		"shapefile x.shp: missing .dbf (gave up waiting)":                                                                    "missing parts",
		"feature 0: invalid json at byte 53: unexpected EOF":                                                                 "upload it again",
	} {
		require.Contains(t, FailureHint(reason), want, reason)
	}
	// A GeoJSON whose geometry does not parse is told to fix the file, not
	// to repair invalid geometries (geomio says "invalid geometry" too).
	for _, reason := range []string{
		"file:///up/a.geojson: feature 2: invalid geometry: geojson: invalid geometry",
		`file:///up/a.geojson: feature 0: invalid geometry: polygon ring of 2 points`,
		"s3://b/a.parquet: feature 4: invalid geometry: unexpected EOF",
	} {
		h := FailureHint(reason)
		require.NotContains(t, h, "invalid=repair", reason)
		require.Contains(t, h, "Fix the file", reason)
	}
}

func TestJobQueryValidate(t *testing.T) {
	q := JobQuery{State: "failed", Limit: 10_000}
	require.NoError(t, q.Validate())
	require.Equal(t, MaxPage, q.Limit)
	q = JobQuery{}
	require.NoError(t, q.Validate())
	require.Equal(t, DefaultPage, q.Limit)
	for _, bad := range []JobQuery{{State: "FAILED "}, {Target: "roads"}} {
		require.Equal(t, Permanent, KindOf(bad.Validate()))
	}
	// Every ledger status is a state to select, the guards' too: `jobs
	// list` shows pending and rejected jobs, and refused to list only them.
	for _, status := range []string{"current", "superseded", "replaced", "retired", "deleted", "pending", "rejected"} {
		q := JobQuery{State: status}
		require.NoError(t, q.Validate(), status)
	}
}
