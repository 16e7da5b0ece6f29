//go:build linux && cgo

package pagetrim

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// mappingRSS sums the resident kB of this process's mappings that match.
func mappingRSS(t *testing.T, match func(perms, path string) bool) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	total, on := 0, false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if s, _, ok := parseHeader([]byte(l + "\n")); ok && s.end > s.start {
			path := ""
			if len(f) >= 6 {
				path = strings.Join(f[5:], " ")
			}
			on = match(f[1], path)
			continue
		}
		if on && len(f) >= 2 && f[0] == "Rss:" {
			total += int(parseKB([]byte(f[1])))
		}
	}
	return total
}

func exeReadOnly(t *testing.T) func(perms, path string) bool {
	exe, err := os.Executable()
	require.NoError(t, err)
	return func(perms, path string) bool { return path == exe && !strings.Contains(perms, "w") }
}

// work is code and read-only data used after a trim: a hash whose
// constants live in the executable's read-only data, goroutines, and a
// collection (which reads the executable's tables of stack maps).
func work(t *testing.T) {
	sum := sha256.Sum256([]byte("abc"))
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", hex.EncodeToString(sum[:]))
	done := make(chan int)
	for i := 0; i < 8; i++ {
		go func(i int) { done <- len(strings.Repeat("x", i*1000)) }(i)
	}
	n := 0
	for i := 0; i < 8; i++ {
		n += <-done
	}
	require.Equal(t, 28000, n)
	runtime.GC()
}

// TestTrimGivesBackExecutablePages: the executable's resident read-only
// pages drop, and the process goes on working (Go code, cgo calls: Trim
// itself is one, into libc).
//
// It runs in a copy of the test binary, written page by page as a
// package installs a binary: the page cache may hold a file that the
// linker has just written in large folios, and a fault in one then maps
// the whole folio (up to 2 MB), so the pages that reading smaps uses
// would come back by the megabyte.
func TestTrimGivesBackExecutablePages(t *testing.T) {
	if os.Getenv("PAGETRIM_TEST_CHILD") == "" {
		self, err := os.Executable()
		require.NoError(t, err)
		b, err := os.ReadFile(self)
		require.NoError(t, err)
		cp := filepath.Join(t.TempDir(), "pagetrim.test")
		f, err := os.OpenFile(cp, os.O_CREATE|os.O_WRONLY, 0o755)
		require.NoError(t, err)
		for len(b) > 0 {
			n, err := f.Write(b[:min(len(b), 64<<10)])
			require.NoError(t, err)
			b = b[n:]
		}
		require.NoError(t, f.Close())
		cmd := exec.Command(cp, "-test.run", "^TestTrimGivesBackExecutablePages$", "-test.v")
		cmd.Env = append(os.Environ(), "PAGETRIM_TEST_CHILD=1")
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		require.NoError(t, err)
		require.Contains(t, string(out), "--- PASS")
		return
	}
	work(t)
	before := mappingRSS(t, exeReadOnly(t))
	res, err := Trim()
	require.NoError(t, err)
	require.True(t, res.Supported)
	after := mappingRSS(t, exeReadOnly(t))
	t.Logf("executable's read-only mappings: %d kB resident before the trim, %d kB after; %d ranges, %d kB given back", before, after, res.Ranges, res.Bytes>>10)
	require.Greater(t, res.Ranges, 0)
	require.Less(t, after, before*3/4, "the trim gave back less than a quarter of the executable's resident read-only pages")
	work(t)
	_, err = Trim()
	require.NoError(t, err)
	work(t)
}

// The page of read-only data that TestTrimKeepsWrittenPages writes to.
const marker = "pagetrim marker: read-only data of the executable, written to by a test"

// TestTrimKeepsWrittenPages: a page of a read-only segment that was
// written (made writable for a moment, as a debugger does) holds a
// private copy, and the trim must not revert it to the file's bytes.
func TestTrimKeepsWrittenPages(t *testing.T) {
	p := unsafe.StringData(marker)
	ps := uintptr(os.Getpagesize())
	off := uintptr(unsafe.Pointer(p)) % ps
	page := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), -int(off))), ps)
	write := func(c byte) {
		require.NoError(t, syscall.Mprotect(page, syscall.PROT_READ|syscall.PROT_WRITE))
		page[off] = c
		require.NoError(t, syscall.Mprotect(page, syscall.PROT_READ))
	}
	write('P')
	defer write('p')
	_, err := Trim()
	require.NoError(t, err)
	require.Equal(t, byte('P'), page[off], "the written page was given back: its private copy is lost")
}

// TestTrimLeavesDataFiles: a file mapped as data is no segment of a
// loaded object, and its pages stay resident.
func TestTrimLeavesDataFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(path, make([]byte, 256<<10), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 256<<10, syscall.PROT_READ, syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(m)
	sum := 0
	for i := 0; i < len(m); i += 4096 {
		sum += int(m[i])
	}
	require.Zero(t, sum)
	isData := func(_, p string) bool { return p == path }
	before := mappingRSS(t, isData)
	require.Equal(t, 256, before)
	_, err = Trim()
	require.NoError(t, err)
	require.Equal(t, before, mappingRSS(t, isData))
}
