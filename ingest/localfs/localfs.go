// Package localfs is the local file system as a store of uploads: the
// inbox, a local backfill, `geoingest ingest FILE`. It implements
// ingest.FileSource (a file, or a shapefile set, pinned by the SHA-256 of
// its bytes, copied into a job's directory and hashed on the way, ordered
// by modification time) and lists a directory for a backfill.
package localfs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
)

// Source describes a local file as a job source: bucket ingest.LocalBucket,
// key the cleaned absolute path, version token the SHA-256 of its bytes
// (for a .shp, of every part of the set in a fixed order), order its
// modification time. It also returns the Fetcher that copies the file (or
// set) into the job's directory and checks it has not changed since.
func Source(path string) (ingest.Source, ingest.Fetcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ingest.Source{}, nil, ingest.Permanentf("%s: %w", path, err)
	}
	abs = filepath.Clean(abs)
	parts, err := localParts(abs)
	if err != nil {
		return ingest.Source{}, nil, err
	}
	token, err := hashFiles(parts)
	if err != nil {
		return ingest.Source{}, nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return ingest.Source{}, nil, ingest.Permanentf("%s: %w", path, err)
	}
	src := ingest.Source{Bucket: ingest.LocalBucket, Key: abs, VersionToken: token, Order: ingest.OrderFromTime(st.ModTime())}
	return src, &localFetcher{parts: parts, token: token}, nil
}

// Files is the ingest.FileSource of the local file system.
type Files struct{}

// Size implements ingest.FileSource.
func (Files) Size(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Missing implements ingest.FileSource.
func (Files) Missing(path string) []string {
	if !geomio.IsFileSet(path) {
		return nil
	}
	set, _ := geomio.FindShapefileSet(path)
	return set.Missing()
}

// Source implements ingest.FileSource: Source.
func (Files) Source(path string) (ingest.Source, ingest.Fetcher, error) { return Source(path) }

// localParts returns the files that make up path: the file itself, or for
// the main file of a multi-file set (a .shp, a MapInfo .tab or .mif), the
// parts of its set present beside it (geomio.FindShapefileSet), in the
// order of its geomio.SetRules entry.
func localParts(abs string) ([]string, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, ingest.Permanentf("%s: %w", abs, err)
	}
	if st.IsDir() {
		// An upload is one object: a folder is none. A File
		// Geodatabase is a folder on disk, and is uploaded zipped.
		if strings.EqualFold(filepath.Ext(abs), ".gdb") {
			return nil, ingest.Permanentf("%s is a File Geodatabase folder: geoingest reads a File Geodatabase as a zip, as it is uploaded (cd %s && zip -r %s.zip %s)",
				abs, filepath.Dir(abs), filepath.Base(abs), filepath.Base(abs))
		}
		return nil, ingest.Permanentf("%s is a directory: give its files (or geoingest backfill --dir for every file under it)", abs)
	}
	if !geomio.IsFileSet(abs) {
		return []string{abs}, nil
	}
	set, err := geomio.FindShapefileSet(abs)
	if err != nil {
		return nil, ingest.Transientf("%s: %w", filepath.Dir(abs), err)
	}
	return set.Paths(), nil
}

type localFetcher struct {
	parts []string
	token string
}

// Fetch copies the file (or shapefile set, its parts at once) into dir,
// hashing it on the way, and fails with a Transient error if it changed
// since its key was made.
func (l *localFetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	// The token is computed from the bytes as they were copied: what the
	// copy holds is what was hashed, so reading the copies again to hash
	// them would add a pass over the data and no assurance.
	copies := make([]string, len(l.parts))
	sums := make([]string, len(l.parts))
	sizes := make([]int64, len(l.parts))
	err := eachPart(len(l.parts), func(i int) error {
		p := l.parts[i]
		dst := filepath.Join(dir, filepath.Base(p))
		out, err := os.Create(dst)
		if err != nil {
			return ingest.Transientf("%s: %w", dst, err)
		}
		cw := &countingWriter{w: out}
		sum, err := hashFile(p, cw)
		sizes[i] = cw.n
		if cerr := out.Close(); err == nil && cerr != nil {
			err = ingest.Transientf("%s: %w", dst, cerr)
		}
		copies[i], sums[i] = dst, sum
		return err
	})
	if err != nil {
		return ingest.Fetched{}, err
	}
	token := combineHashes(copies, sums)
	if token != l.token {
		return ingest.Fetched{}, ingest.Transientf("%s: file changed while being ingested; run it again as a new version", l.parts[0])
	}
	var size int64
	for _, n := range sizes {
		size += n
	}
	return ingest.Fetched{Path: filepath.Join(dir, filepath.Base(l.parts[0])), ContentHash: token, Size: size}, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
