package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio"
)

// LocalSource describes a local file as a job source: bucket LocalBucket,
// key the cleaned absolute path, version token the SHA-256 of its bytes
// (for a .shp, of every part of the set in a fixed order), order its
// modification time. It also returns the Fetcher that copies the file (or
// set) into the job's directory and checks it has not changed since.
func LocalSource(path string) (Source, Fetcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Source{}, nil, Permanentf("%s: %w", path, err)
	}
	abs = filepath.Clean(abs)
	parts, err := localParts(abs)
	if err != nil {
		return Source{}, nil, err
	}
	token, err := hashFiles(parts)
	if err != nil {
		return Source{}, nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Source{}, nil, Permanentf("%s: %w", path, err)
	}
	src := Source{Bucket: LocalBucket, Key: abs, VersionToken: token, Order: OrderFromTime(st.ModTime())}
	return src, &localFetcher{parts: parts, token: token}, nil
}

// LocalFiles is the FileSource of the local file system.
type LocalFiles struct{}

// Size implements FileSource.
func (LocalFiles) Size(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Missing implements FileSource.
func (LocalFiles) Missing(path string) []string {
	if !geomio.IsShapefile(path) {
		return nil
	}
	set, _ := geomio.FindShapefileSet(path)
	return set.Missing()
}

// Source implements FileSource: LocalSource.
func (LocalFiles) Source(path string) (Source, Fetcher, error) { return LocalSource(path) }

// localParts returns the files that make up path: the file itself, or for a
// .shp, the parts of its set present beside it (geomio.FindShapefileSet),
// in geomio.ShapefileParts order.
func localParts(abs string) ([]string, error) {
	if _, err := os.Stat(abs); err != nil {
		return nil, Permanentf("%s: %w", abs, err)
	}
	if !geomio.IsShapefile(abs) {
		return []string{abs}, nil
	}
	set, err := geomio.FindShapefileSet(abs)
	if err != nil {
		return nil, Transientf("%s: %w", filepath.Dir(abs), err)
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
		return "", Permanentf("%s: %w", path, err)
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
		return "", Transientf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type localFetcher struct {
	parts []string
	token string
}

// Fetch copies the file (or shapefile set) into dir, hashing it on the way,
// and fails with a Transient error if it changed since its key was made.
func (l *localFetcher) Fetch(ctx context.Context, dir string) (Fetched, error) {
	// The token is computed from the bytes as they were copied: what the
	// copy holds is what was hashed, so reading the copies again to hash
	// them would add a pass over the data and no assurance.
	var copies, sums []string
	for _, p := range l.parts {
		dst := filepath.Join(dir, filepath.Base(p))
		out, err := os.Create(dst)
		if err != nil {
			return Fetched{}, Transientf("%s: %w", dst, err)
		}
		sum, err := hashFile(p, out)
		if cerr := out.Close(); err == nil && cerr != nil {
			err = Transientf("%s: %w", dst, cerr)
		}
		if err != nil {
			return Fetched{}, err
		}
		copies, sums = append(copies, dst), append(sums, sum)
	}
	token := combineHashes(copies, sums)
	if token != l.token {
		return Fetched{}, Transientf("%s: file changed while being ingested; run it again as a new version", l.parts[0])
	}
	return Fetched{Path: filepath.Join(dir, filepath.Base(l.parts[0])), ContentHash: token}, nil
}

// Order tokens order the versions of one source. A token has a time part,
// a sequencer part, or both: "t<UTC time, fixed width>" then
// "s<S3 sequencer, upper-case hex left-padded to 64 digits>". See
// CompareOrder for how two tokens compare.

// OrderFromTime is an order token for a version known by its time only (a
// local file's modification time, an object listed by a backfill).
func OrderFromTime(t time.Time) string {
	return "t" + t.UTC().Format(orderTimeLayout)
}

const orderTimeLayout = "20060102T150405.000000000"

// OrderFromSequencer is an order token for an S3 event sequencer alone.
func OrderFromSequencer(seq string) string {
	return "s" + padSequencer(seq)
}

// OrderFromEvent is the order token of a bucket event: its time, and its
// sequencer when it has one.
func OrderFromEvent(t time.Time, seq string) string {
	o := OrderFromTime(t)
	if seq != "" {
		o += "s" + padSequencer(seq)
	}
	return o
}

func padSequencer(seq string) string {
	seq = strings.ToUpper(seq)
	if len(seq) < 64 {
		seq = strings.Repeat("0", 64-len(seq)) + seq
	}
	return seq
}

// splitOrder returns a token's time and sequencer parts ("" when absent).
func splitOrder(o string) (tm, seq string) {
	if rest, ok := strings.CutPrefix(o, "t"); ok {
		tm, o = rest, ""
		if i := strings.IndexByte(rest, 's'); i >= 0 {
			tm, o = rest[:i], rest[i:]
		}
	}
	if rest, ok := strings.CutPrefix(o, "s"); ok {
		seq = rest
	}
	return tm, seq
}

// CompareOrder returns -1, 0 or +1 as version a is older than, as old as,
// or newer than version b of the same source. Two tokens with sequencers
// compare by sequencer (S3's own order for one key, as DESIGN.md asks);
// otherwise by time, so that a version listed by a backfill (time only)
// and one announced by an event (time and sequencer) can be ordered. A
// token with neither part ("", from a source never written) is older than
// any other.
func CompareOrder(a, b string) int {
	if a == b {
		return 0
	}
	if a == "" || b == "" {
		if a == "" {
			return -1
		}
		return 1
	}
	at, as := splitOrder(a)
	bt, bs := splitOrder(b)
	if as != "" && bs != "" {
		return strings.Compare(as, bs)
	}
	return strings.Compare(at, bt)
}
