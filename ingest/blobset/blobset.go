// Package blobset turns one bucket event into a job source and a
// version-pinned fetch, for any object store that can say what the current
// version of a key is (Stat) and read one named version of it (Get). It
// holds the rules that every store shares: a multi-file set (a shapefile,
// a MapInfo table) is one version whose token covers every part present;
// a set missing a required part fails as ingest.ErrIncompleteShapefile;
// every part is hashed as it is downloaded; a download that stalls is
// abandoned as transient. ingest/gcs and ingest/azblob implement Store
// with their SDKs; this package imports none.
package blobset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
)

// ErrNotFound is wrapped by Stat and Get errors when the object (or the
// version asked for) does not exist.
var ErrNotFound = errors.New("no such object")

// Store is one bucket (GCS) or container (Azure) of an object store.
type Store interface {
	// Stat returns the version token of the current version of key, or
	// an error wrapping ErrNotFound when there is none. Other errors are
	// classified (ingest.Permanent or ingest.Transient).
	Stat(ctx context.Context, key string) (token string, err error)
	// Open reads exactly the version token of key. When that version
	// can no longer be read because a newer one replaced it, the error
	// wraps ingest.ErrObjectChanged; when the object is gone, ErrNotFound.
	// size is the length the store announces, -1 when unknown.
	Open(ctx context.Context, key, token string) (body io.ReadCloser, size int64, err error)
	// URL names key for messages, e.g. gs://bucket/key.
	URL(key string) string
}

// Options tune Resolve.
type Options struct {
	// Final makes an incomplete set a Permanent error.
	Final bool
	// IdleTimeout, when positive, abandons a download that received
	// nothing for this long (Transient).
	IdleTimeout time.Duration
}

// part is one object of a job's input.
type part struct {
	ext   string // ".shp", ".dbf", ... ("" for a single object)
	key   string
	token string
}

// Resolve describes the object version ev names (token is its version
// token, from the event) as a job source and returns its Fetcher. For the
// main file of a multi-file set it Stats every other part first (before
// any claim) and the source's token is the SHA-256 of one "EXT TOKEN" line
// per part present, in geomio.SetRules order, as ingest/s3 does.
func Resolve(ctx context.Context, st Store, ev ingest.Event, token string, opts Options) (ingest.Source, ingest.Fetcher, error) {
	if token == "" {
		return ingest.Source{}, nil, ingest.Permanentf("event for %s names no version", st.URL(ev.Key))
	}
	main := part{key: ev.Key, token: token}
	src := ingest.Source{Bucket: ev.Bucket, Key: ev.Key, VersionToken: token, Order: ev.Order(), Store: ev.Store}
	f := &fetcher{st: st, parts: []part{main}, final: opts.Final, idle: opts.IdleTimeout}
	rule, ok := geomio.SetRuleOf(ev.Key)
	if !ok {
		return src, f, nil
	}
	base, ext := ev.Key[:len(ev.Key)-len(rule.Main)], ev.Key[len(ev.Key)-len(rule.Main):]
	upper := ext == strings.ToUpper(rule.Main)
	main.ext = rule.Main
	f.parts = []part{main}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", rule.Main, main.token)
	for _, sx := range rule.Parts {
		k := base + sx
		if upper {
			k = base + strings.ToUpper(sx)
		}
		tok, err := st.Stat(ctx, k)
		if errors.Is(err, ErrNotFound) {
			if slices.Contains(rule.Required, sx) {
				f.missing = append(f.missing, sx)
			}
			continue
		}
		if err != nil {
			return ingest.Source{}, nil, err
		}
		f.parts = append(f.parts, part{ext: sx, key: k, token: tok})
		fmt.Fprintf(h, "%s %s\n", sx, tok)
	}
	src.VersionToken = hex.EncodeToString(h.Sum(nil))
	return src, f, nil
}

type fetcher struct {
	st      Store
	parts   []part
	missing []string
	final   bool
	idle    time.Duration
}

// Fetch downloads every part into dir, each at its version, hashing on
// the way (see ingest.Fetcher).
func (f *fetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	if len(f.missing) > 0 {
		err := fmt.Errorf("%w: %s has no %s beside it", ingest.ErrIncompleteShapefile, f.st.URL(f.parts[0].key),
			strings.Join(f.missing, " or "))
		if f.final {
			return ingest.Fetched{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("%w (gave up waiting)", err)}
		}
		return ingest.Fetched{}, &ingest.Error{Kind: ingest.Transient, Err: err}
	}
	var sums []string
	var size int64
	for i, p := range f.parts {
		sum, n, err := f.get(ctx, dir, p, i == 0)
		if err != nil {
			return ingest.Fetched{}, err
		}
		sums, size = append(sums, sum), size+n
	}
	out := ingest.Fetched{Path: filepath.Join(dir, LocalName(f.parts[0].key)), ContentHash: sums[0], Size: size}
	if len(f.parts) > 1 {
		h := sha256.New()
		for i, p := range f.parts {
			fmt.Fprintf(h, "%s %s\n", p.ext, sums[i])
		}
		out.ContentHash = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// LocalName is the file name a key is downloaded to.
func LocalName(key string) string {
	n := path.Base(key)
	if n == "." || n == "/" || n == "" || n == ".." {
		n = "object"
	}
	return strings.ReplaceAll(n, string(filepath.Separator), "_")
}

var (
	errStalled   = errors.New("download stalled")
	errShortBody = errors.New("download ended short of its length")
)

// get downloads part p into dir: its SHA-256 (hex) and size. named is the
// object the event names: only its change supersedes the job (a sidecar
// that changed or vanished makes the set incomplete for now).
func (f *fetcher) get(ctx context.Context, dir string, p part, named bool) (string, int64, error) {
	name := f.st.URL(p.key)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if f.idle > 0 {
		timer = time.AfterFunc(f.idle, func() { cancel(errStalled) })
		defer timer.Stop()
	}
	stalled := func(err error) error {
		if errors.Is(context.Cause(ctx), errStalled) {
			return ingest.Transientf("download %s: %w: nothing received for %s (the download timeout): %v", name, errStalled, f.idle, err)
		}
		return nil
	}
	body, announced, err := f.st.Open(ctx, p.key, p.token)
	if err != nil {
		if serr := stalled(err); serr != nil {
			return "", 0, serr
		}
		if !named && (errors.Is(err, ErrNotFound) || errors.Is(err, ingest.ErrObjectChanged)) {
			return "", 0, &ingest.Error{Kind: ingest.Transient, Err: fmt.Errorf("%w: %s changed or disappeared: %v", ingest.ErrIncompleteShapefile, name, err)}
		}
		if errors.Is(err, ingest.ErrObjectChanged) {
			return "", 0, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("get %s: %w", name, err)}
		}
		if errors.Is(err, ErrNotFound) {
			return "", 0, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("get %s: %w (the object or this version of it is gone)", name, err)}
		}
		return "", 0, err
	}
	defer body.Close()
	dst := filepath.Join(dir, LocalName(p.key))
	file, err := os.Create(dst)
	if err != nil {
		return "", 0, ingest.Transientf("%s: %w", dst, err)
	}
	var h hash.Hash = sha256.New()
	var r io.Reader = body
	if timer != nil {
		r = progressReader{r: r, progress: func() { timer.Reset(f.idle) }}
	}
	n, err := io.Copy(io.MultiWriter(file, h), ingest.HookReader(ctx, r, ingest.HookDuringDownload, ingest.HookWhere{}))
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	var local *fs.PathError
	if announced >= 0 && n != announced && !errors.Is(context.Cause(ctx), errStalled) && !errors.As(err, &local) {
		short := fmt.Errorf("%w: %d bytes received, the store announced %d", errShortBody, n, announced)
		if err != nil {
			short = fmt.Errorf("%w: %w", short, err)
		}
		err = short
	}
	if err != nil {
		_ = os.Remove(dst)
		if serr := stalled(err); serr != nil {
			return "", 0, serr
		}
		return "", 0, ingest.Transientf("download %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// progressReader calls progress after every read that returned bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	return n, err
}
