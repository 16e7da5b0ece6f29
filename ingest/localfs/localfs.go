// Package localfs is the local file system as a store of uploads: the
// inbox, a local backfill, `geoingest ingest FILE`. It implements
// ingest.FileSource (a file, or a shapefile set, pinned by the SHA-256 of
// its bytes, copied into a job's directory, ordered by modification time)
// and lists a directory for a backfill.
//
// A file is hashed once, by Source, for its version token. The fetch
// proves its copy is that version without hashing it again when it can:
// Source records each part's identity from fstat (device, inode, size,
// modification and change times in nanoseconds) before hashing it, and
// the fetch copies the part only if fstat gives the same identity before
// and after the copy. Any write moves the change time, which no user can
// set back, to the current time; so a file whose times were at least
// racyWindow (2 s) older than Source's look is proven unchanged by an
// equal identity. A racy file (touched within that window: a write in the
// same timestamp tick would not move its times), a changed identity, or a
// system with no fstat identity is hashed again as it is copied, and a
// copy whose hash is not the token is refused (Transient). Either way a
// file changed after Source is never ingested under the old token.
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
	paths, err := localParts(abs)
	if err != nil {
		return ingest.Source{}, nil, err
	}
	parts, token, err := hashParts(paths)
	if err != nil {
		return ingest.Source{}, nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return ingest.Source{}, nil, ingest.Permanentf("%s: %w", path, err)
	}
	src := ingest.Source{Bucket: ingest.LocalBucket, Key: abs, VersionToken: token, Order: ingest.OrderFromTime(st.ModTime())}
	return src, &localFetcher{parts: parts, token: token, rehashed: make([]bool, len(parts))}, nil
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
	parts []part
	token string
	// rehashed[i]: the last Fetch hashed part i again (its identity could
	// not vouch for it); for tests.
	rehashed []bool
}

// Fetch copies the file (or shapefile set, its parts at once) into dir and
// fails with a Transient error if it changed since its key was made: a
// settled part whose fstat identity is unchanged before and after its
// copy is that version; any other part is hashed on the way (the package
// doc).
func (l *localFetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	copies := make([]string, len(l.parts))
	sums := make([]string, len(l.parts))
	sizes := make([]int64, len(l.parts))
	err := eachPart(len(l.parts), func(i int) error {
		p := l.parts[i]
		dst := filepath.Join(dir, filepath.Base(p.path))
		copies[i] = dst
		f, err := os.Open(p.path)
		if err != nil {
			return ingest.Permanentf("%s: %w", p.path, err)
		}
		defer f.Close()
		out, err := os.Create(dst)
		if err != nil {
			return ingest.Transientf("%s: %w", dst, err)
		}
		sums[i], sizes[i], l.rehashed[i], err = copyPart(f, out, p)
		if cerr := out.Close(); err == nil && cerr != nil {
			err = ingest.Transientf("%s: %w", dst, cerr)
		}
		return err
	})
	if err != nil {
		return ingest.Fetched{}, err
	}
	token := combineHashes(copies, sums)
	if token != l.token {
		return ingest.Fetched{}, changedErr(l.parts[0].path)
	}
	var size int64
	for _, n := range sizes {
		size += n
	}
	return ingest.Fetched{Path: filepath.Join(dir, filepath.Base(l.parts[0].path)), ContentHash: token, Size: size}, nil
}

func changedErr(path string) error {
	return ingest.Transientf("%s: file changed while being ingested; run it again as a new version", path)
}

// copyPart copies f (part p, open) to out and returns the SHA-256 of what
// it copied: Source's, when p is settled and f's identity is p's before
// and after a plain copy (which the kernel may do without the bytes
// passing through this process); else the hash of the bytes as they
// were copied (rehashed).
func copyPart(f, out *os.File, p part) (sum string, size int64, rehashed bool, _ error) {
	if p.settled {
		if id, ok, err := statID(f); err == nil && ok && id == p.id {
			n, err := io.Copy(out, f)
			if err != nil {
				return "", n, false, ingest.Transientf("%s: %w", p.path, err)
			}
			after, ok, err := statID(f)
			if err != nil || !ok || after != p.id || n != p.id.size {
				return "", n, false, changedErr(p.path)
			}
			return p.sum, n, false, nil
		}
	}
	cw := &countingWriter{w: out}
	sum, err := hashOpen(f, p.path, cw)
	return sum, cw.n, true, err
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
