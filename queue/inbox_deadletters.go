package queue

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

var _ DeadLetterBox = (*Inbox)(nil)

// An inbox's dead letters are its reason files (DeadLetter): the dead
// letter of the file REL is DeadLetterDir/REL.reason, and its id is REL.
// Re-driving one removes the reason file and delivers the file again, in
// this process (the inbox's state is in memory: only the serve that owns
// the inbox can re-drive); deleting one removes the reason file, and the
// file stays in the inbox, handled until the next restart delivers it
// again (remove the file itself to be rid of it).

// DeadLetters implements DeadLetterBox: the reason files, oldest first.
func (b *Inbox) DeadLetters(ctx context.Context, max int) ([]DeadLetter, error) {
	max = ClampDeadLetters(max)
	var dls []DeadLetter
	err := filepath.WalkDir(b.opts.DeadLetterDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".reason") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		rel, err := filepath.Rel(b.opts.DeadLetterDir, strings.TrimSuffix(p, ".reason"))
		if err != nil {
			return nil
		}
		reason, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		dls = append(dls, DeadLetter{ID: rel, SourceID: rel, Body: filepath.Join(b.dir, filepath.FromSlash(rel)),
			Reason: strings.TrimSuffix(string(reason), "\n"), SentAt: info.ModTime(), Attributes: map[string]string{"rel": rel}})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inbox dead letters: %w", err)
	}
	SortDeadLetters(dls)
	if len(dls) > max {
		dls = dls[:max]
	}
	return dls, nil
}

// reasonPath is the reason file of the dead letter id, or
// ErrNoSuchDeadLetter when id names none.
func (b *Inbox) reasonPath(id string) (string, error) {
	clean := path0(id)
	if clean == "" {
		return "", fmt.Errorf("inbox dead letter %q: %w", id, ErrNoSuchDeadLetter)
	}
	p := filepath.Join(b.opts.DeadLetterDir, filepath.FromSlash(clean)+".reason")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("inbox dead letter %q: %w", id, ErrNoSuchDeadLetter)
	}
	return p, nil
}

// path0 is id as a relative slash path inside the inbox, "" when it
// would leave it.
func path0(id string) string {
	c := filepath.ToSlash(filepath.Clean(filepath.FromSlash(id)))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || filepath.IsAbs(filepath.FromSlash(id)) {
		return ""
	}
	return c
}

// RedriveDeadLetter implements DeadLetterBox: the file is delivered again
// (its handled version forgotten), then the reason file removed.
func (b *Inbox) RedriveDeadLetter(ctx context.Context, id string) error {
	p, err := b.reasonPath(id)
	if err != nil {
		return err
	}
	rel := path0(id)
	b.mu.Lock()
	f := b.files[rel]
	if f == nil {
		b.mu.Unlock()
		return fmt.Errorf("inbox dead letter %q: the file is no longer in the inbox", id)
	}
	f.doneSet = false
	b.considerLocked(f)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("inbox dead letter %q: %w", id, err)
	}
	return nil
}

// DeleteDeadLetter implements DeadLetterBox: the reason file is removed.
func (b *Inbox) DeleteDeadLetter(ctx context.Context, id string) error {
	p, err := b.reasonPath(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("inbox dead letter %q: %w", id, ErrNoSuchDeadLetter)
		}
		return fmt.Errorf("inbox dead letter %q: %w", id, err)
	}
	return nil
}
