package prepare

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
)

// A stored row's raw hash (migration 0047, docs/design.md "Versions as
// changes") stands for the row itself: two features with the same raw
// hash under one source are written as the same row, so a later version's
// feature whose bytes hash to an old row's need not be parsed to be known
// unchanged. It is the reader's hash of the feature's bytes in the file
// (geomio.Feature.RawHash) combined with a salt that holds everything else
// that decides the row:
//
//   - the job's parameters (target, key, policies, source SRID, encoding,
//     layers, geometry field, typed mapping and schema, pipeline version),
//     all but Replaces, which names the generation a version replaces;
//   - the layer as the reader resolved it: its name, format, SRID, CRS
//     (method, code, definition, as the file gave it: the GeoJSON crs
//     member wherever it sits, the .prj), encoding, geometry field;
//   - the reader's limits from the environment (a feature within them
//     once may not be under lower ones);
//   - the build: the module's version and VCS revision, and the
//     executable's size and time when the tree was modified, so that a
//     build that decodes or prepares otherwise never matches another's
//     hashes (a new build costs one version its prefilter, never a wrong
//     row);
//   - rawHashForm, bumped by hand if the recipe here changes.
//
// When unsure whether something decides the row, it goes in the salt: a
// salt too wide costs a match, one too narrow a wrong row.

// rawHashForm is the version of this recipe.
const rawHashForm = 1

// rawHash is a feature's salted raw hash (never 0) from the reader's hash
// of its bytes and its layer's salt.
func rawHash(fileHash, salt uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], fileHash)
	binary.LittleEndian.PutUint64(b[8:], salt)
	h := xxhash.Sum64(b[:])
	if h == 0 {
		h = 1
	}
	return h
}

// RawSalt is the salt of the rows of layer l read under p (see above).
func RawSalt(p ingest.Params, l geomio.Layer) uint64 {
	p.Replaces = ""
	layer := struct {
		Name, Format, CRSText, Encoding, GeometryField string
		SRID                                           int
		CRS                                            any
	}{l.Name, l.Format, l.CRSText, l.Encoding, l.GeometryField, l.SRID, l.CRS}
	b, err := json.Marshal(struct {
		Form   int
		Build  string
		Limits []string
		Params ingest.Params
		Layer  any
	}{rawHashForm, buildID(), limitEnv(), p, layer})
	if err != nil {
		// Not expected (plain data); a salt of its own then, so that no
		// row matches another's.
		b = []byte(err.Error())
	}
	return xxhash.Sum64(b)
}

// limitEnv is the reader limits set in the environment, sorted.
func limitEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GEOINGEST_LIMIT") || strings.HasPrefix(kv, "GEOINGEST_MAX") {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}

var buildID = sync.OnceValue(func() string {
	var b strings.Builder
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.WriteString(bi.GoVersion + " " + bi.Main.Path + "@" + bi.Main.Version + " " + bi.Main.Sum)
		for _, s := range bi.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				b.WriteString(" " + s.Key + "=" + s.Value)
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			// A build from a modified tree (or with no VCS stamp) is told
			// apart by its executable.
			if !ok || strings.Contains(b.String(), "vcs.modified=true") || !strings.Contains(b.String(), "vcs.revision=") {
				b.WriteString(" " + exe + " " + st.ModTime().UTC().Format(time.RFC3339Nano) + " " + strconv.FormatInt(st.Size(), 10))
			}
		}
	}
	return b.String()
})

// SaltedRawHash is the raw hash a row of a feature stores (Feature.Raw),
// from the reader's hash of its bytes and its layer's salt (RawSalt): the
// prefilter's first read computes it without preparing the feature.
func SaltedRawHash(fileHash, salt uint64) uint64 { return rawHash(fileHash, salt) }
