//go:build cgo && !geoingest_nogdal && !linux

package ogr

// applySandbox has no sandbox to apply outside Linux: the child still
// runs with GDAL's options for untrusted input and the parent's deadline.
func applySandbox(read, write []string) string { return "none (not Linux)" }

func setLimits(cpuSeconds, dataBytes int64) {}
