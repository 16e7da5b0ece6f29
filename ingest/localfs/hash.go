package localfs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/geoingest/geoingest/ingest"
)

// part is one file of a source as Source read it: its SHA-256, and its
// fileID from before the hashing, with whether that ID can vouch for the
// bytes at fetch (settled: not racy, and given by fstat at all).
type part struct {
	path    string
	sum     string
	id      fileID
	settled bool
}

// hashParts hashes the files (the parts at once: a shapefile's .shp and
// .dbf are both large) and returns them with the version token: the
// SHA-256 of the file's bytes; for several files, of each file's
// extension and hash in turn, so that the token covers every part.
func hashParts(paths []string) ([]part, string, error) {
	parts := make([]part, len(paths))
	err := eachPart(len(paths), func(i int) error {
		var err error
		parts[i], err = hashPart(paths[i])
		return err
	})
	if err != nil {
		return nil, "", err
	}
	sums := make([]string, len(parts))
	for i, p := range parts {
		sums[i] = p.sum
	}
	return parts, combineHashes(paths, sums), nil
}

// hashPart hashes one file, its fileID read first (and the clock before
// that): a write during the hashing or after it moves the ctime from the
// one recorded, unless the file is racy, which then is not settled.
func hashPart(path string) (part, error) {
	f, err := os.Open(path)
	if err != nil {
		return part{}, ingest.Permanentf("%s: %w", path, err)
	}
	defer f.Close()
	t0 := now()
	id, ok, err := statID(f)
	if err != nil {
		return part{}, ingest.Transientf("%s: %w", path, err)
	}
	sum, err := hashOpen(f, path, nil)
	if err != nil {
		return part{}, err
	}
	return part{path: path, sum: sum, id: id, settled: ok && id.settled(t0)}, nil
}

// combineHashes is hashParts's token from each part's own SHA-256.
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

// eachPart calls fn(0) ... fn(n-1), up to GOMAXPROCS of them at once, and
// returns the error of the lowest index that failed.
func eachPart(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// hashChunk is the size of hashOpen's reads; hashChunks of them are in
// flight at most.
const (
	hashChunk  = 256 << 10
	hashChunks = 4
)

// hashOpen hashes the open file f (named path) from where it is, copying
// it to w on the way when w is not nil. The reads, the hashing and the
// writes run on goroutines of their own over a few rotating buffers, so
// that a copy costs about the longest of the three rather than their sum.
func hashOpen(f *os.File, path string, w io.Writer) (string, error) {
	free := make(chan []byte, hashChunks)
	for range hashChunks {
		free <- make([]byte, hashChunk)
	}
	read := make(chan []byte, hashChunks)
	var readErr error
	go func() { // the reader: fills free buffers in file order
		defer close(read)
		for {
			buf := <-free
			n, err := io.ReadFull(f, buf)
			if n > 0 {
				read <- buf[:n]
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()

	var writeErr error
	var written chan []byte
	var wg sync.WaitGroup
	if w != nil {
		written = make(chan []byte, hashChunks)
		wg.Add(1)
		go func() { // the writer: in the same order, after the hash
			defer wg.Done()
			for buf := range written {
				if writeErr == nil {
					_, writeErr = w.Write(buf)
				}
				free <- buf[:cap(buf)]
			}
		}()
	}
	h := sha256.New()
	for buf := range read {
		h.Write(buf)
		if written != nil {
			written <- buf
		} else {
			free <- buf[:cap(buf)]
		}
	}
	if written != nil {
		close(written)
		wg.Wait()
	}
	if readErr != nil {
		return "", ingest.Transientf("%s: %w", path, readErr)
	}
	if writeErr != nil {
		return "", ingest.Transientf("%s: %w", path, writeErr)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
