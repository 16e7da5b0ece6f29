package ogr

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// Gunzip decompresses the gzipped file at path (file in errors) into
// a folder of its own under opts.TempDir, under the limits a zip entry
// has: at most Limits.MaxCompressionRatio times the file's size (1 KiB at
// least) and Limits.MaxUncompressedBytes. GDAL then reads the plain copy,
// never a gzip stream it would inflate without a bound. It returns the
// copy's path (the same name without .gz) and the folder to remove.
func Gunzip(path, file string, opts core.Options) (string, string, error) {
	l := opts.Limits.WithDefaults()
	in, err := os.Open(path)
	if err != nil {
		return "", "", &core.Error{File: file, Problem: "open", Err: err}
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", "", &core.Error{File: file, Problem: "open", Err: err}
	}
	max := l.MaxCompressionRatio * max(fi.Size(), 1024)
	what := "decompresses to more than %d times its size"
	limit := core.LimitZipRatio
	if l.MaxUncompressedBytes < max {
		max, what, limit = l.MaxUncompressedBytes, "decompresses to more than %d bytes", core.LimitZipBytes
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(in, 64<<10))
	if err != nil {
		return "", "", &core.Error{File: file, Problem: "invalid gzip", Err: err}
	}
	dir, err := os.MkdirTemp(opts.TempDir, "geomio-gunzip-")
	if err != nil {
		return "", "", err // the machine's fault
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	out, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	n, err := io.Copy(out, io.LimitReader(zr, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case n > max:
		os.RemoveAll(dir)
		m := l.MaxCompressionRatio
		if limit == core.LimitZipBytes {
			m = l.MaxUncompressedBytes
		}
		return "", "", core.UploadLimitError(file, core.OverLimit(limit, m, what))
	case err != nil:
		os.RemoveAll(dir)
		var perr *os.PathError
		if errors.As(err, &perr) {
			return "", "", err // writing the copy: the machine's fault
		}
		return "", "", &core.Error{File: file, Problem: "invalid gzip", Err: err}
	}
	return filepath.Join(dir, name), dir, nil
}
