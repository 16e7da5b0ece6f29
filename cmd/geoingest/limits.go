package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio"
)

// limitFlags are the limits on one upload (geomio.Limits), each a flag
// named after the limit and its environment variable (geomio.LimitEnv).
// They are the worker's, not the job's: they decide only whether a job
// fails, never what a job that succeeds writes, so they are not job
// parameters and not part of the job key. A job failed at a limit is
// retried with a raised limit by delivering it again (its FAILED claim
// may be claimed again).
type limitFlags struct {
	l                      geomio.Limits
	props, layers, entries int64 // the int fields of l
}

// addLimitFlags adds the limit flags to fs, their defaults taken from the
// environment, else geomio.DefaultLimits.
func (m *Main) addLimitFlags(fs *flag.FlagSet, lf *limitFlags) {
	d := geomio.DefaultLimits
	size := func(p *int64, name string, def int64, usage string) {
		*p = m.envSize(geomio.LimitEnv(name), def)
		fs.Var((*sizeFlag)(p), name, fmt.Sprintf("%s, in bytes (suffixes kB, MB, GB, KiB, MiB, GiB; env %s; default %s)", usage, geomio.LimitEnv(name), formatSize(def)))
	}
	count := func(p *int64, name string, def int64, usage string) {
		env := geomio.LimitEnv(name)
		fs.Int64Var(p, name, int64(m.envInt(env, int(def))), fmt.Sprintf("%s (env %s)", usage, env))
	}
	size(&lf.l.MaxRecordBytes, geomio.LimitFeatureBytes, d.MaxRecordBytes, "largest feature in the file (a GeoJSON feature's text, a shapefile record)")
	count(&lf.l.MaxVertices, geomio.LimitVertices, d.MaxVertices, "most vertices in one feature")
	size(&lf.l.MaxPropertyBytes, geomio.LimitPropertyBytes, d.MaxPropertyBytes, "largest property value, as JSON text")
	count(&lf.props, geomio.LimitProperties, int64(d.MaxProperties), "most properties of one feature")
	count(&lf.layers, geomio.LimitLayers, int64(d.MaxLayers), "most layers in one upload")
	count(&lf.l.MaxFeatures, geomio.LimitFeatures, d.MaxFeatures, "most features in one upload; 0: no limit")
	count(&lf.entries, geomio.LimitZipEntries, int64(d.MaxEntries), "most entries in a zip")
	size(&lf.l.MaxUncompressedBytes, geomio.LimitZipBytes, d.MaxUncompressedBytes, "most bytes extracted from a zip")
	count(&lf.l.MaxCompressionRatio, geomio.LimitZipRatio, d.MaxCompressionRatio, "highest compression ratio of a zip entry (and of a gzipped file)")
	dur := func(p *time.Duration, name string, def time.Duration, usage string) {
		env := geomio.LimitEnv(name)
		fs.DurationVar(p, name, m.envDuration(env, def), fmt.Sprintf("%s (env %s)", usage, env))
	}
	dur(&lf.l.ReadTimeout, geomio.LimitReadTimeout, d.ReadTimeout, "longest a GDAL read of one upload (GeoPackage, GML, KML, MapInfo, CSV, FlatGeobuf, File Geodatabase) may take, in its contained child process")
	dur(&lf.l.ReadCPU, geomio.LimitReadCPU, d.ReadCPU, "most CPU time a GDAL reading child may use")
	size(&lf.l.ReadMemory, geomio.LimitReadMemory, d.ReadMemory, "most memory a GDAL reading child may add once GDAL is loaded")
}

// limits returns the limits the flags give, or an error naming a flag
// set below zero (0 is the default; for max-features, no limit).
func (lf *limitFlags) limits() (geomio.Limits, error) {
	l := lf.l
	l.MaxProperties, l.MaxLayers, l.MaxEntries = int(lf.props), int(lf.layers), int(lf.entries)
	for name, v := range map[string]int64{
		geomio.LimitFeatureBytes: l.MaxRecordBytes, geomio.LimitVertices: l.MaxVertices,
		geomio.LimitPropertyBytes: l.MaxPropertyBytes, geomio.LimitProperties: int64(l.MaxProperties),
		geomio.LimitLayers: int64(l.MaxLayers), geomio.LimitFeatures: l.MaxFeatures,
		geomio.LimitZipEntries: int64(l.MaxEntries), geomio.LimitZipBytes: l.MaxUncompressedBytes,
		geomio.LimitZipRatio: l.MaxCompressionRatio, geomio.LimitReadTimeout: int64(l.ReadTimeout),
		geomio.LimitReadCPU: int64(l.ReadCPU), geomio.LimitReadMemory: l.ReadMemory,
	} {
		if v < 0 {
			return l, fmt.Errorf("--%s %d: want 0 or more", name, v)
		}
	}
	return l, nil
}

// sizeFlag is a byte size: a whole number, optionally with a unit.
type sizeFlag int64

func (s *sizeFlag) String() string { return formatSize(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// parseSize parses "67108864", "64MiB", "100MB".
func parseSize(v string) (int64, error) {
	s, mult := strings.TrimSpace(v), int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: not a size (a whole number of bytes, or with a unit: 64MiB, 100MB)", v)
	}
	return n * mult, nil
}

// formatSize writes n with the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}

// envSize is envInt for a byte size.
func (m *Main) envSize(name string, def int64) int64 {
	raw := m.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := parseSize(raw)
	if err != nil {
		m.envErrs = append(m.envErrs, fmt.Errorf("environment variable %s=%v", name, err))
		return def
	}
	return v
}
