// Package localfs is the local file system as a store of uploads: the
// inbox, a local backfill, `geoingest ingest FILE`. It implements
// ingest.FileSource (a file, or a shapefile set, pinned by the SHA-256 of
// its bytes, copied into a job's directory and hashed on the way, ordered
// by modification time) and lists a directory for a backfill.
package localfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	if !geomio.IsShapefile(path) {
		return nil
	}
	set, _ := geomio.FindShapefileSet(path)
	return set.Missing()
}

// Source implements ingest.FileSource: Source.
func (Files) Source(path string) (ingest.Source, ingest.Fetcher, error) { return Source(path) }

// localParts returns the files that make up path: the file itself, or for a
// .shp, the parts of its set present beside it (geomio.FindShapefileSet),
// in geomio.ShapefileParts order.
func localParts(abs string) ([]string, error) {
	if _, err := os.Stat(abs); err != nil {
		return nil, ingest.Permanentf("%s: %w", abs, err)
	}
	if !geomio.IsShapefile(abs) {
		return []string{abs}, nil
	}
	set, err := geomio.FindShapefileSet(abs)
	if err != nil {
		return nil, ingest.Transientf("%s: %w", filepath.Dir(abs), err)
	}
	return set.Paths(), nil
}

// hashFiles returns the SHA-256 of the files' bytes; for several files, of
// each file's extension and hash in turn, so that the token covers every
// part.
func hashFiles(paths []string) (string, error) {
	sums := make([]string, len(paths))
	for i, p := range paths {
		sum, err := hashFile(p, nil)
		if err != nil {
			return "", err
		}
		sums[i] = sum
	}
	return combineHashes(paths, sums), nil
}

// combineHashes is hashFiles's token from each part's own SHA-256.
func combineHashes(paths, sums []string) string {
	if len(paths) == 1 {
		return sums[0]
	}
	h := sha256.New()
	for i, p := range paths {
		fmt.Fprintf(h, "%s %s\n", strings.ToLower(filepath.Ext(p)), sums[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashFile hashes path, copying it to w on the way when w is not nil.
func hashFile(path string, w io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", ingest.Permanentf("%s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	dst := io.Writer(h)
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	// 1 MiB reads and writes (io.Copy would use 32 KiB: os.File.WriteTo
	// ignores the buffer, hence the wrapper).
	if _, err := io.CopyBuffer(dst, struct{ io.Reader }{f}, make([]byte, 1<<20)); err != nil {
		return "", ingest.Transientf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type localFetcher struct {
	parts []string
	token string
}

// Fetch copies the file (or shapefile set) into dir, hashing it on the way,
// and fails with a Transient error if it changed since its key was made.
func (l *localFetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	// The token is computed from the bytes as they were copied: what the
	// copy holds is what was hashed, so reading the copies again to hash
	// them would add a pass over the data and no assurance.
	var copies, sums []string
	for _, p := range l.parts {
		dst := filepath.Join(dir, filepath.Base(p))
		out, err := os.Create(dst)
		if err != nil {
			return ingest.Fetched{}, ingest.Transientf("%s: %w", dst, err)
		}
		sum, err := hashFile(p, out)
		if cerr := out.Close(); err == nil && cerr != nil {
			err = ingest.Transientf("%s: %w", dst, cerr)
		}
		if err != nil {
			return ingest.Fetched{}, err
		}
		copies, sums = append(copies, dst), append(sums, sum)
	}
	token := combineHashes(copies, sums)
	if token != l.token {
		return ingest.Fetched{}, ingest.Transientf("%s: file changed while being ingested; run it again as a new version", l.parts[0])
	}
	return ingest.Fetched{Path: filepath.Join(dir, filepath.Base(l.parts[0])), ContentHash: token}, nil
}
