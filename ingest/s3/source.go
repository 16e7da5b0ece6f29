package s3

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

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/awserr"
)

// Options tune NewSource.
type Options struct {
	// FinalAttempt makes an incomplete shapefile set a Permanent error
	// (recorded FAILED with the reason) instead of a Transient one: the
	// caller sets it when its patience is exhausted (e.g. the message's
	// receive count reached the limit).
	FinalAttempt bool
	// IdleTimeout, when positive, bounds how long a download may go
	// without receiving a byte: from the request to the first byte of the
	// body (the AWS SDK's retries of the request included), then between
	// two reads. A stalled stream is then abandoned as a Transient
	// failure. It is not a bound on the whole download, which may take
	// long for a big object.
	IdleTimeout time.Duration
}

// s3Part is one object of a job's input.
type s3Part struct {
	ext       string // ".shp", ".dbf", ... ("" for a single object)
	key       string
	etag      string // without quotes
	versionID string
}

// token is what names the part's bytes.
func (p s3Part) token() string {
	if p.versionID != "" {
		return p.versionID
	}
	return p.etag
}

// NewSource describes the object an event names as a job source, and
// returns the Fetcher that downloads it. The version token is the event's
// versionId, else its ETag. For a .shp it looks up (HeadObject) the
// .shx, .dbf, .prj and .cpg beside it (for the main file of another
// multi-file format, a MapInfo .tab or .mif, the parts of its
// geomio.SetRules entry), before any claim, and the token is the SHA-256
// of one "EXT TOKEN" line per part present, in that order, so that a late
// or changed sidecar makes a new job. A set missing its .shx
// or .dbf still gets a source (its key covers the parts present), but its
// Fetch fails with ingest.ErrIncompleteShapefile: Transient, or Permanent when
// opts.FinalAttempt. Returns a Permanent error when the event names no
// version (neither versionId nor eTag), a Transient one when a lookup
// fails for any other reason than absence.
func NewSource(ctx context.Context, client *awss3.Client, ev ingest.Event, opts Options) (ingest.Source, ingest.Fetcher, error) {
	main := s3Part{key: ev.Key, etag: ev.ETag, versionID: ev.VersionID}
	if main.token() == "" {
		return ingest.Source{}, nil, ingest.Permanentf("event for s3://%s/%s has neither versionId nor eTag", ev.Bucket, ev.Key)
	}
	src := ingest.Source{Bucket: ev.Bucket, Key: ev.Key, VersionToken: main.token(), Order: ev.Order()}
	f := &s3Fetcher{client: client, bucket: ev.Bucket, parts: []s3Part{main}, final: opts.FinalAttempt, idle: opts.IdleTimeout}
	rule, ok := geomio.SetRuleOf(ev.Key)
	if !ok {
		return src, f, nil
	}
	base, ext := ev.Key[:len(ev.Key)-len(rule.Main)], ev.Key[len(ev.Key)-len(rule.Main):]
	upper := ext == strings.ToUpper(rule.Main)
	main.ext = rule.Main
	f.parts = []s3Part{main}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", rule.Main, main.token())
	for _, sx := range rule.Parts {
		k := base + sx
		if upper {
			k = base + strings.ToUpper(sx)
		}
		out, err := client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &ev.Bucket, Key: &k})
		if err != nil {
			if notFound(err) {
				if slices.Contains(rule.Required, sx) {
					f.missing = append(f.missing, sx)
				}
				continue
			}
			return ingest.Source{}, nil, classifyS3(err, "head s3://%s/%s", ev.Bucket, k)
		}
		p := s3Part{ext: sx, key: k, etag: strings.Trim(deref(out.ETag), `"`), versionID: deref(out.VersionId)}
		f.parts = append(f.parts, p)
		fmt.Fprintf(h, "%s %s\n", sx, p.token())
	}
	src.VersionToken = hex.EncodeToString(h.Sum(nil))
	return src, f, nil
}

type s3Fetcher struct {
	client  *awss3.Client
	bucket  string
	parts   []s3Part
	missing []string
	final   bool
	idle    time.Duration
}

// Fetch downloads every part into dir, hashing on the way. Each GetObject
// names the part's version (VersionId) when it has one, else sends
// If-Match with its ETag, and the response's ETag and version are checked
// too: an object that changed since the event is an error wrapping
// ErrObjectChanged (the new version's own event ingests it; the job is
// recorded superseded), not silent drift. A part that is
// gone is Permanent, except a shapefile sidecar, which is
// ingest.ErrIncompleteShapefile. Server errors, throttling and network failures
// are Transient, and so is a download that ends short of the length S3
// announced (a reset or a truncated body) or stalls for the idle timeout;
// the partial file is removed.
func (f *s3Fetcher) Fetch(ctx context.Context, dir string) (ingest.Fetched, error) {
	if len(f.missing) > 0 {
		err := fmt.Errorf("%w: s3://%s/%s has no %s beside it", ingest.ErrIncompleteShapefile, f.bucket, f.parts[0].key,
			strings.Join(f.missing, " or "))
		if f.final {
			return ingest.Fetched{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("%w (gave up waiting)", err)}
		}
		return ingest.Fetched{}, &ingest.Error{Kind: ingest.Transient, Err: err}
	}
	var sums []string
	var size int64
	for _, p := range f.parts {
		sum, n, err := f.get(ctx, dir, p)
		if err != nil {
			return ingest.Fetched{}, err
		}
		sums, size = append(sums, sum), size+n
	}
	out := ingest.Fetched{Path: filepath.Join(dir, localName(f.parts[0].key)), ContentHash: sums[0], Size: size}
	if len(f.parts) > 1 {
		h := sha256.New()
		for i, p := range f.parts {
			fmt.Fprintf(h, "%s %s\n", p.ext, sums[i])
		}
		out.ContentHash = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// localName is the file name a key is downloaded to.
func localName(key string) string {
	n := path.Base(key)
	if n == "." || n == "/" || n == "" || n == ".." {
		n = "object"
	}
	return strings.ReplaceAll(n, string(filepath.Separator), "_")
}

// get downloads part p into dir: its SHA-256 (hex) and size in bytes.
func (f *s3Fetcher) get(ctx context.Context, dir string, p s3Part) (string, int64, error) {
	in := &awss3.GetObjectInput{Bucket: &f.bucket, Key: &p.key}
	if p.versionID != "" {
		in.VersionId = &p.versionID
	} else if p.etag != "" {
		quoted := `"` + p.etag + `"`
		in.IfMatch = &quoted
	}
	name := fmt.Sprintf("s3://%s/%s", f.bucket, p.key)
	// Only the object the event names (not a sidecar, whose change no
	// event of its own announces) is superseded by a change.
	named := p == f.parts[0]
	// The idle timer cancels the request (its answer's headers, the SDK's
	// retries, then the body) when no byte has come for f.idle.
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
	resp, err := f.client.GetObject(ctx, in)
	if err != nil {
		if serr := stalled(err); serr != nil {
			return "", 0, serr
		}
		if notFound(err) && !named {
			return "", 0, &ingest.Error{Kind: ingest.Transient, Err: fmt.Errorf("%w: %s disappeared", ingest.ErrIncompleteShapefile, name)}
		}
		if named && p.versionID == "" && preconditionFailed(err) {
			return "", 0, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("get %s: %w (If-Match ETag %s: 412): this version is superseded",
				name, ingest.ErrObjectChanged, p.etag)}
		}
		return "", 0, classifyS3(err, "get %s", name)
	}
	defer resp.Body.Close()
	if p.versionID != "" && resp.VersionId != nil && *resp.VersionId != p.versionID {
		return "", 0, ingest.Permanentf("get %s: server returned version %s, not %s", name, *resp.VersionId, p.versionID)
	}
	if p.versionID == "" && p.etag != "" && resp.ETag != nil && strings.Trim(*resp.ETag, `"`) != p.etag {
		err := fmt.Errorf("get %s: object changed since the event (ETag %s, event says %s): the new version is a new job",
			name, strings.Trim(*resp.ETag, `"`), p.etag)
		if named {
			err = fmt.Errorf("get %s: %w (ETag %s, event says %s): this version is superseded",
				name, ingest.ErrObjectChanged, strings.Trim(*resp.ETag, `"`), p.etag)
		}
		return "", 0, &ingest.Error{Kind: ingest.Permanent, Err: err}
	}
	dst := filepath.Join(dir, localName(p.key))
	file, err := os.Create(dst)
	if err != nil {
		return "", 0, ingest.Transientf("%s: %w", dst, err)
	}
	var h hash.Hash = sha256.New()
	var body io.Reader = resp.Body
	if timer != nil {
		body = progressReader{r: body, progress: func() { timer.Reset(f.idle) }}
	}
	n, err := io.Copy(io.MultiWriter(file, h), ingest.HookReader(ctx, body, ingest.HookDuringDownload, ingest.HookWhere{}))
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	// Short of the announced length, and not because the local file
	// refused a write (a disk full is its own failure) or the stream
	// stalled: a reset or a truncated answer.
	var local *fs.PathError
	if cl := resp.ContentLength; cl != nil && *cl >= 0 && n != *cl && !errors.Is(context.Cause(ctx), errStalled) && !errors.As(err, &local) {
		short := fmt.Errorf("%w: %d bytes received, S3 announced %d", errShortBody, n, *cl)
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

var (
	// errStalled: a download received nothing for the idle timeout.
	errStalled = errors.New("download stalled")
	// errShortBody: a download ended before the length S3 announced (a
	// reset or a truncated answer).
	errShortBody = errors.New("download ended short of its length")
)

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

// notFound reports whether err is S3's "no such key/version" (or
// bucket).
func notFound(err error) bool { return awserr.Classify(err) == awserr.NotFound }

// preconditionFailed reports whether err is S3's 412 PreconditionFailed.
func preconditionFailed(err error) bool { return awserr.Classify(err) == awserr.Changed }

// classifyS3 wraps an S3 error: the object or version gone (404), changed
// (412) or a request S3 refused as malformed (400) is Permanent;
// everything else (no answer: the network, 5xx, throttling, S3's
// RequestTimeout; and 403 or refused credentials while permissions or a
// token are being fixed) is Transient. awserr.Classify reads the error.
func classifyS3(err error, format string, args ...any) error {
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	switch awserr.Classify(err) {
	case awserr.NotFound:
		return &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("%w (the object or this version of it is gone)", wrapped)}
	case awserr.Changed:
		return &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("%w (the object changed since the event: the new version is a new job)", wrapped)}
	case awserr.Refused:
		if awserr.Status(err) == 400 {
			return &ingest.Error{Kind: ingest.Permanent, Err: wrapped}
		}
	}
	return &ingest.Error{Kind: ingest.Transient, Err: wrapped}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
