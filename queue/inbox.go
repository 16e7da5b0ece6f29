package queue

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/internal/dirwalk"
)

// InboxOptions configure an inbox receiver.
type InboxOptions struct {
	// Poll is how often the directory is scanned. Zero means 500 ms.
	Poll time.Duration
	// Settle is how long a file's size and modification time must stay
	// the same before it is delivered: a file still being copied in,
	// even slowly and in pieces, is not taken while it grows. Zero means
	// the same on two scans in a row.
	Settle time.Duration
	// SetOf, when set, names the set a file belongs to ("" for none):
	// a file of a set is delivered only once every file of its set
	// present has settled (the parts of a shapefile).
	SetOf func(rel string) string
	// DeadLetterDir receives one reason file per dead-lettered message
	// (its path relative to the inbox, with ".reason" appended). Empty
	// means DIR/.dead-letter.
	DeadLetterDir string
}

// Inbox is a Receiver on a local directory: every regular file under it
// is a message whose body is its absolute path, except hidden files and
// directories and the names copy tools write to before they rename
// (InProgressName). A file becomes a message once its size and
// modification time have stayed the same for InboxOptions.Settle (so a
// file still being written is not taken), with every other file of its
// set (InboxOptions.SetOf), and again whenever it changes after that. The
// first scan
// delivers every file present, so a restart redelivers everything: the
// consumer's claim and write gates make that a cheap duplicate.
//
// There is no visibility timeout: a received message stays in flight
// until it is acked, nacked or dead-lettered; Extend does nothing. State is
// in memory only.
type Inbox struct {
	dir  string
	opts InboxOptions

	mu       sync.Mutex
	files    map[string]*inboxFile // by relative path
	ready    []*inboxFile          // waiting to be delivered, in order
	lastScan time.Time
	scanErr  error
	// unsettled holds the sets (SetOf) with a file not settled at the
	// last scan.
	unsettled map[string]bool
	closed    bool
	wake      chan struct{}
}

// inboxFile is the inbox's record of one file.
type inboxFile struct {
	rel      string
	seen     stamp     // size and mtime at the last scan
	since    time.Time // the scan that first saw seen
	stable   bool      // seen unchanged for the settle interval
	done     stamp     // the version acked or dead-lettered
	doneSet  bool
	inflight *inboxDelivery // the delivery in flight, if any
	queued   bool           // in ready
	notKey   stamp          // version whose delivery is queued or in flight
	count    int            // deliveries of notKey
	notAfter time.Time      // nacked: not before this time
}

type stamp struct {
	size  int64
	mtime time.Time
}

type inboxDelivery struct {
	f   *inboxFile
	ver stamp
}

// NewInbox returns a receiver on dir, which must exist.
func NewInbox(dir string, opts InboxOptions) (*Inbox, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("inbox: %s is not a directory", abs)
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.DeadLetterDir == "" {
		opts.DeadLetterDir = filepath.Join(abs, ".dead-letter")
	}
	return &Inbox{dir: abs, opts: opts, files: map[string]*inboxFile{}, wake: make(chan struct{}, 1)}, nil
}

// Dir returns the inbox directory (absolute).
func (b *Inbox) Dir() string { return b.dir }

// Receive returns up to max files ready for delivery, scanning the
// directory when a poll interval has passed. With nothing ready it waits
// about one poll interval and returns an empty slice. A scan error (the
// directory vanished) is returned wrapped.
func (b *Inbox) Receive(ctx context.Context, max int) ([]*Message, error) {
	max = ClampBatch(max)
	deadline := time.Now().Add(b.opts.Poll + b.opts.Poll/2)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, fmt.Errorf("inbox: closed")
		}
		if time.Since(b.lastScan) >= b.opts.Poll {
			b.scanErr = b.scanLocked()
			b.lastScan = time.Now()
		}
		if b.scanErr != nil {
			err := b.scanErr
			b.mu.Unlock()
			return nil, err
		}
		msgs := b.takeLocked(max)
		b.mu.Unlock()
		if len(msgs) > 0 {
			return msgs, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, nil
		}
		if wait > b.opts.Poll/5 {
			wait = b.opts.Poll / 5
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-b.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// inProgressSuffixes are the endings of the names that browsers and copy
// tools write a file under before they rename it to its own (Firefox and
// KDE .part, Chrome .crdownload, WinSCP .filepart, editors' and many
// tools' .tmp and trailing ~). rsync and many others write to a dotfile,
// which is hidden anyway.
var inProgressSuffixes = []string{".part", ".partial", ".crdownload", ".filepart", ".download", ".tmp", ".temp", "~"}

// InProgressName reports whether a file named name (a base name) is one
// that a copy is still being written to under a temporary name: a
// dotfile, or one of inProgressSuffixes (case-insensitive). The inbox
// never delivers it; the file it becomes when renamed is delivered.
func InProgressName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	lower := strings.ToLower(name)
	for _, s := range inProgressSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}

// scanLocked walks the directory, notes which files have settled, and
// queues those that are new or changed, settled, and whose set has
// settled.
func (b *Inbox) scanLocked() error {
	present := map[string]bool{}
	now := time.Now()
	// Files removed or unreadable mid-walk are passed over: the next
	// scan sees them as they are then.
	err := dirwalk.Walk(context.Background(), b.dir, true, func(file dirwalk.File) error {
		rel, info := file.Rel, file.Info
		if InProgressName(path.Base(rel)) {
			return nil
		}
		present[rel] = true
		st := stamp{size: info.Size(), mtime: info.ModTime()}
		f := b.files[rel]
		if f == nil {
			b.files[rel] = &inboxFile{rel: rel, seen: st, since: now}
			return nil
		}
		if f.seen != st {
			f.seen, f.since, f.stable = st, now, false
			return nil
		}
		if now.Sub(f.since) >= b.opts.Settle {
			f.stable = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("inbox scan: %w", err)
	}
	for rel, f := range b.files {
		if !present[rel] && f.inflight == nil && !f.queued {
			delete(b.files, rel)
		}
	}
	b.unsettled = map[string]bool{}
	for rel, f := range b.files {
		if set := b.setOf(rel); set != "" && !f.stable && present[rel] {
			b.unsettled[set] = true
		}
	}
	rels := make([]string, 0, len(b.files))
	for rel := range b.files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		b.considerLocked(b.files[rel])
	}
	return nil
}

// setOf is the set rel belongs to, "" for none.
func (b *Inbox) setOf(rel string) string {
	if b.opts.SetOf == nil {
		return ""
	}
	return b.opts.SetOf(rel)
}

// settledLocked reports whether f and every file of its set have settled.
func (b *Inbox) settledLocked(f *inboxFile) bool {
	return f.stable && !b.unsettled[b.setOf(f.rel)]
}

// Settling reports whether a file has been seen that has not settled yet:
// a message that is on its way (UntilIdle waits for it).
func (b *Inbox) Settling() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.files {
		if !f.stable {
			return true
		}
	}
	return false
}

// considerLocked queues f if its current version has not been acked and
// is neither queued nor in flight.
func (b *Inbox) considerLocked(f *inboxFile) {
	if !b.settledLocked(f) || f.inflight != nil || f.queued || (f.doneSet && f.done == f.seen) {
		return
	}
	if f.notKey != f.seen {
		f.notKey, f.count, f.notAfter = f.seen, 0, time.Time{}
	}
	f.queued = true
	b.ready = append(b.ready, f)
}

// takeLocked delivers up to max ready files whose backoff has passed.
func (b *Inbox) takeLocked(max int) []*Message {
	now := time.Now()
	var msgs []*Message
	rest := b.ready[:0]
	for _, f := range b.ready {
		if len(msgs) >= max || now.Before(f.notAfter) || !b.settledLocked(f) {
			// Not due yet, or changed (or a file of its set did)
			// since it was queued: it waits until all have settled.
			rest = append(rest, f)
			continue
		}
		if f.notKey != f.seen {
			f.notKey, f.count = f.seen, 0 // changed since queued: a new version
		}
		f.queued = false
		f.count++
		d := &inboxDelivery{f: f, ver: f.notKey}
		f.inflight = d
		abs := filepath.Join(b.dir, filepath.FromSlash(f.rel))
		msgs = append(msgs, &Message{
			ID: f.rel + "@" + f.notKey.mtime.UTC().Format(time.RFC3339Nano), Body: []byte(abs),
			ReceiveCount: f.count, SentAt: f.notKey.mtime,
			Attributes: map[string]string{"path": abs, "rel": f.rel}, Handle: d})
	}
	b.ready = rest
	sort.SliceStable(b.ready, func(i, j int) bool { return b.ready[i].notAfter.Before(b.ready[j].notAfter) })
	return msgs
}

// finishLocked ends delivery d; when done it records its version as
// handled. It reports false when d is not the delivery in flight (an old
// handle), which is not an error.
func (b *Inbox) finishLocked(m *Message) (*inboxDelivery, bool) {
	d, _ := m.Handle.(*inboxDelivery)
	if d == nil || d.f.inflight != d {
		return nil, false
	}
	d.f.inflight = nil
	return d, true
}

// Ack records the file's version as handled: it is delivered again only
// when it changes (or after a restart).
func (b *Inbox) Ack(ctx context.Context, m *Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d, ok := b.finishLocked(m); ok {
		d.f.done, d.f.doneSet = d.ver, true
		b.considerLocked(d.f) // changed while in flight: deliver the new version
	}
	return nil
}

// Nack delivers the file again after delay.
func (b *Inbox) Nack(ctx context.Context, m *Message, delay time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d, ok := b.finishLocked(m); ok {
		f := d.f
		if f.notKey == d.ver {
			f.notAfter = time.Now().Add(delay)
		}
		b.considerLocked(f)
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

// Extend does nothing: inbox deliveries have no visibility timeout.
func (b *Inbox) Extend(ctx context.Context, m *Message, d time.Duration) error { return nil }

// DeadLetter writes the reason to DeadLetterDir/REL.reason and records the
// file's version as handled. It returns the write's error, leaving the
// message in flight, if the reason cannot be written.
func (b *Inbox) DeadLetter(ctx context.Context, m *Message, reason string) error {
	rel := m.Attributes["rel"]
	p := filepath.Join(b.opts.DeadLetterDir, filepath.FromSlash(rel)+".reason")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("inbox dead-letter: %w", err)
	}
	if err := os.WriteFile(p, []byte(reason+"\n"), 0o644); err != nil {
		return fmt.Errorf("inbox dead-letter: %w", err)
	}
	return b.Ack(ctx, m)
}

// Close stops the inbox; Receive then fails.
func (b *Inbox) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
