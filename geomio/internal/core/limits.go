package core

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/geoingest/geoingest/geomio/jsonscan"
	"github.com/twpayne/go-geom"
)

// Limits bound the resources one upload may take. Each is enforced while
// the input streams, before the memory it guards is spent: a reader
// checks the sizes and counts a file declares (a shapefile record's
// length and point count, a zip's entry count) before it allocates by
// them, and counts what it parses (a GeoJSON feature's bytes and
// vertices) as it goes. Open's Reader checks every feature it yields
// against the per-feature limits and the upload's totals as well, so a
// reader that cannot check earlier is still bounded by them (Limits.check).
//
// A limit only decides whether a job fails; it never changes what a job
// that succeeds writes. Going over one is a permanent failure, an *Error
// whose Err is a *LimitError naming the limit and how to raise it.
type Limits struct {
	MaxUncompressedBytes int64 // total bytes extracted from a zip
	MaxCompressionRatio  int64 // uncompressed/compressed per zip entry
	MaxEntries           int   // entries in a zip
	// MaxRecordBytes bounds one feature's bytes in the file: a GeoJSON
	// feature's text, a shapefile record.
	MaxRecordBytes int64
	// MaxVertices bounds one feature's vertices (positions, counting
	// every ring and part).
	MaxVertices int64
	// MaxPropertyBytes bounds one property value, as JSON text.
	MaxPropertyBytes int64
	// MaxProperties bounds the properties (top-level members) of one
	// feature.
	MaxProperties int
	// MaxLayers bounds the layers of one upload (the shapefile sets and
	// GeoJSON files of a zip).
	MaxLayers int
	// MaxFeatures bounds the features of one upload; 0 (the default) is
	// no limit.
	MaxFeatures int64
	// ReadTimeout bounds the wall-clock time of reading one upload with
	// GDAL (GeoPackage, GML, KML, MapInfo, ...), from Open to the last
	// feature: its reading child is killed at the deadline.
	ReadTimeout time.Duration
	// ReadCPU bounds the CPU time of one GDAL reading child (RLIMIT_CPU).
	ReadCPU time.Duration
	// ReadMemory bounds the memory of one GDAL reading child (RLIMIT_DATA:
	// GDAL's, SQLite's and the child's own heap).
	ReadMemory int64
}

// DefaultLimits are the limits used for zero fields of Options.Limits.
// With them, one upload read and written by one worker stays within about
// 150 MB of memory whatever the input (docs/benchmarks.md measures it).
var DefaultLimits = Limits{
	MaxUncompressedBytes: 8 << 30,
	MaxCompressionRatio:  200,
	MaxEntries:           10000,
	MaxRecordBytes:       16 << 20,
	MaxVertices:          350_000,
	MaxPropertyBytes:     1 << 20,
	MaxProperties:        10_000,
	MaxLayers:            1000,
	ReadTimeout:          10 * time.Minute,
	ReadCPU:              5 * time.Minute,
	ReadMemory:           64 << 20,
}

// The names of the limits. Each is also the name of the geoingest flag
// that sets it, and, upper-cased with a GEOINGEST_ prefix, of its
// environment variable.
const (
	LimitZipBytes      = "max-zip-bytes"
	LimitZipRatio      = "max-zip-ratio"
	LimitZipEntries    = "max-zip-entries"
	LimitFeatureBytes  = "max-feature-bytes"
	LimitVertices      = "max-vertices"
	LimitPropertyBytes = "max-property-bytes"
	LimitProperties    = "max-properties"
	LimitLayers        = "max-layers"
	LimitFeatures      = "max-features"
	LimitReadTimeout   = "read-timeout"
	LimitReadCPU       = "read-cpu"
	LimitReadMemory    = "read-memory"
)

// LimitEnv returns the environment variable of the limit called name.
func LimitEnv(name string) string {
	return "GEOINGEST_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// LimitError is an input over one of the Limits.
type LimitError struct {
	// Limit is the limit's name (LimitVertices, ...).
	Limit string
	// Max is the limit's value.
	Max int64
	// What says what is over it: "more than 350000 vertices".
	What string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s, over the limit (raise it with --%s or %s)", e.What, e.Limit, LimitEnv(e.Limit))
}

// IsLimitError reports whether err is (or wraps) a *LimitError.
func IsLimitError(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}

// OverLimit is the *LimitError of limit name at max; what is formatted
// with max as its only argument ("more than %d vertices").
func OverLimit(name string, max int64, what string) *LimitError {
	return &LimitError{Limit: name, Max: max, What: fmt.Sprintf(what, max)}
}

// FeatureLimitError is the error of a feature over a limit: an *Error
// naming the file, the layer and the feature's index, wrapping le.
// Readers that check a limit while they parse a feature return it.
func FeatureLimitError(file, layer string, index int64, le *LimitError) *Error {
	return &Error{File: file, Problem: fmt.Sprintf("layer %q, feature %d", layer, index), Err: le}
}

// AsFeatureLimit returns err as FeatureLimitError if it is a *LimitError
// that no *Error wraps yet, else nil.
func AsFeatureLimit(file, layer string, index int64, err error) error {
	if err == nil {
		return nil
	}
	var le *LimitError
	if IsInputError(err) || !errors.As(err, &le) {
		return nil
	}
	return FeatureLimitError(file, layer, index, le)
}

// UploadLimitError is the error of an upload as a whole over a limit.
func UploadLimitError(file string, le *LimitError) *Error {
	return &Error{File: file, Problem: "upload", Err: le}
}

// Check checks one decoded feature against the per-feature limits
// (vertices, properties and the bytes of each property value), on limits
// with their defaults filled in. It returns a *LimitError, or nil. Open's
// Reader calls it on every feature.
func (l *Limits) Check(g geom.T, props []byte) *LimitError {
	if g != nil {
		if n := vertices(g); n > l.MaxVertices {
			return OverLimit(LimitVertices, l.MaxVertices, "more than %d vertices")
		}
	}
	return l.checkProperties(props)
}

// vertices counts the positions of g.
func vertices(g geom.T) int64 {
	if c, ok := g.(*geom.GeometryCollection); ok {
		var n int64
		for _, h := range c.Geoms() {
			n += vertices(h)
		}
		return n
	}
	if s := g.Stride(); s > 0 {
		return int64(len(g.FlatCoords()) / s)
	}
	return 0
}

// checkProperties counts the members of the JSON object props and
// measures their values. Props that are not a valid JSON object are not
// its business (readers produce valid ones) and pass.
func (l *Limits) checkProperties(props []byte) *LimitError {
	// Text too short to break either limit is not scanned: n members take
	// at least 5n+1 bytes ({"":0,"":0}), and no value is longer than
	// the whole.
	if int64(len(props)) <= l.MaxPropertyBytes && len(props) < 5*l.MaxProperties+6 {
		return nil
	}
	var s jsonscan.JsonSkipper
	i := jsonscan.SkipSpace(props, 0)
	if i >= len(props) || props[i] != '{' {
		return nil
	}
	i = jsonscan.SkipSpace(props, i+1)
	if i < len(props) && props[i] == '}' {
		return nil
	}
	n := 0
	for i < len(props) && props[i] == '"' {
		if n++; n > l.MaxProperties {
			return OverLimit(LimitProperties, int64(l.MaxProperties), "more than %d properties")
		}
		if i, _ = jsonscan.ScanString(props, i); i < 0 {
			return nil
		}
		if i = jsonscan.SkipSpace(props, i); i >= len(props) || props[i] != ':' {
			return nil
		}
		start := jsonscan.SkipSpace(props, i+1)
		if i = s.Value(props, start, 1); i < 0 {
			return nil
		}
		if int64(i-start) > l.MaxPropertyBytes {
			return OverLimit(LimitPropertyBytes, l.MaxPropertyBytes, "a property value of more than %d bytes")
		}
		if i = jsonscan.SkipSpace(props, i); i >= len(props) || props[i] != ',' {
			return nil
		}
		i = jsonscan.SkipSpace(props, i+1)
	}
	return nil
}

// CountPositions counts the positions in the raw GeoJSON geometry b (an
// array whose first element is a number is one), stopping once there are
// more than max. It does not validate b: it is for bounding what a
// decoder may build from it before decoding it.
func CountPositions(b []byte, max int64) (n int64, over bool) {
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			if i = jsonscan.SkipStringRaw(b, i); i < 0 {
				return n, false
			}
		case c == '[':
			j := jsonscan.SkipSpace(b, i+1)
			if j < len(b) && (b[j] == '-' || jsonscan.IsDigit(b[j])) {
				if n++; n > max {
					return n, true
				}
			}
			i = j
		default:
			i++
		}
	}
	return n, false
}

// LimitedReader is the Reader Open returns: it checks every feature of
// the reader it wraps against the per-feature limits, and the upload's
// features and layers against theirs.
type LimitedReader struct {
	Reader
	file     string
	lim      Limits
	features int64
	layers   int
	layer    string
	zm       int64 // features of the current layer with Feature.DroppedZM
	err      error
}

func WithLimits(r Reader, file string, lim Limits) Reader {
	return &LimitedReader{Reader: r, file: file, lim: lim}
}

func (r *LimitedReader) Next() bool {
	if r.err != nil || !r.Reader.Next() {
		return false
	}
	f := r.Reader.Feature()
	if r.layers == 0 || f.Layer != r.layer {
		r.layer, r.zm = f.Layer, 0
		if r.layers++; r.layers > r.lim.MaxLayers {
			r.err = UploadLimitError(r.file, OverLimit(LimitLayers, int64(r.lim.MaxLayers), "more than %d layers"))
			return false
		}
	}
	if r.features++; r.lim.MaxFeatures > 0 && r.features > r.lim.MaxFeatures {
		r.err = FeatureLimitError(r.file, f.Layer, f.Index, OverLimit(LimitFeatures, r.lim.MaxFeatures, "more than %d features in the upload"))
		return false
	}
	if le := r.lim.Check(f.Geom, f.Properties); le != nil {
		r.err = FeatureLimitError(r.file, f.Layer, f.Index, le)
		return false
	}
	if f.DroppedZM {
		r.zm++
	}
	return true
}

// Layer is the wrapped reader's, with DroppedZM counted from the current
// layer's features.
func (r *LimitedReader) Layer() Layer {
	l := r.Reader.Layer()
	if r.layers > 0 && l.Name == r.layer {
		l.DroppedZM = r.zm
	}
	return l
}

func (r *LimitedReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Reader.Err()
}

// WithDefaults fills zero fields from DefaultLimits (MaxFeatures stays 0:
// no limit).
func (l Limits) WithDefaults() Limits {
	if l.MaxUncompressedBytes <= 0 {
		l.MaxUncompressedBytes = DefaultLimits.MaxUncompressedBytes
	}
	if l.MaxCompressionRatio <= 0 {
		l.MaxCompressionRatio = DefaultLimits.MaxCompressionRatio
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxRecordBytes <= 0 {
		l.MaxRecordBytes = DefaultLimits.MaxRecordBytes
	}
	if l.MaxVertices <= 0 {
		l.MaxVertices = DefaultLimits.MaxVertices
	}
	if l.MaxPropertyBytes <= 0 {
		l.MaxPropertyBytes = DefaultLimits.MaxPropertyBytes
	}
	if l.MaxProperties <= 0 {
		l.MaxProperties = DefaultLimits.MaxProperties
	}
	if l.MaxLayers <= 0 {
		l.MaxLayers = DefaultLimits.MaxLayers
	}
	if l.MaxFeatures < 0 {
		l.MaxFeatures = 0
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultLimits.ReadTimeout
	}
	if l.ReadCPU <= 0 {
		l.ReadCPU = DefaultLimits.ReadCPU
	}
	if l.ReadMemory <= 0 {
		l.ReadMemory = DefaultLimits.ReadMemory
	}
	return l
}

// RawSeed is the seed of the raw hashes (Feature.RawHash) of a reader
// with limits l and what else its reader reads every feature with
// (extra: a DBF's field descriptors and encoding): a feature within some
// limits may not be within others, so its bytes under other limits hash
// otherwise.
func (l Limits) RawSeed(extra ...string) uint64 {
	return xxhash.Sum64String(fmt.Sprintf("geoingest raw 1 %+v %q", l, extra))
}

// RawHasher hashes features' raw bytes under one seed (RawSeed).
type RawHasher struct {
	seed uint64
	d    xxhash.Digest
}

// NewRawHasher is a RawHasher for the limits l and extra (RawSeed).
func NewRawHasher(l Limits, extra ...string) *RawHasher { return &RawHasher{seed: l.RawSeed(extra...)} }

// Sum is the raw hash of b: xxhash64 seeded with the limits' seed, never
// 0 (0 is "none").
func (h *RawHasher) Sum(b []byte) uint64 {
	h.d.ResetWithSeed(h.seed)
	_, _ = h.d.Write(b)
	if s := h.d.Sum64(); s != 0 {
		return s
	}
	return 1
}

// Sum2 is the raw hash of a feature whose bytes are in two parts (a
// shapefile's .shp record and its .dbf record): a's length, a, then b.
func (h *RawHasher) Sum2(a, b []byte) uint64 {
	h.d.ResetWithSeed(h.seed)
	var n [8]byte
	for i := range n {
		n[i] = byte(uint64(len(a)) >> (8 * i))
	}
	_, _ = h.d.Write(n[:])
	_, _ = h.d.Write(a)
	_, _ = h.d.Write(b)
	if s := h.d.Sum64(); s != 0 {
		return s
	}
	return 1
}
