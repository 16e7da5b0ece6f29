package pagetrim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// smapsEntry is one mapping of a synthetic smaps.
func smapsEntry(header string, rss, anon, swap, locked int) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	b.WriteString("Size:               1024 kB\nKernelPageSize:        4 kB\n")
	b.WriteString("Rss:                " + strconv.Itoa(rss) + " kB\n")
	b.WriteString("Pss:                  10 kB\nShared_Clean:         10 kB\nPrivate_Dirty:         0 kB\n")
	b.WriteString("Anonymous:            " + strconv.Itoa(anon) + " kB\n")
	b.WriteString("Swap:                 " + strconv.Itoa(swap) + " kB\nSwapPss:               0 kB\n")
	b.WriteString("Locked:               " + strconv.Itoa(locked) + " kB\nTHPeligible:    0\n")
	b.WriteString("VmFlags: rd mr mw me sd \n")
	return b.String()
}

// TestCandidates: only a private, read-only, resident file mapping with
// no written, swapped or locked page qualifies.
func TestCandidates(t *testing.T) {
	in := smapsEntry("00400000-00c00000 r-xp 00000000 fd:01 1234  /usr/bin/geoingest", 800, 0, 0, 0) +
		smapsEntry("00c00000-01400000 r--p 00800000 fd:01 1234  /usr/bin/geoingest", 700, 0, 0, 0) +
		smapsEntry("01400000-01500000 rw-p 01000000 fd:01 1234  /usr/bin/geoingest", 90, 40, 0, 0) +
		smapsEntry("7f0000000000-7f0000100000 r--p 00000000 fd:01 99 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2", 0, 0, 0, 0) +
		smapsEntry("7f0000100000-7f0000200000 r-xp 00100000 fd:01 99 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2", 300, 0, 0, 0) +
		smapsEntry("7f0000200000-7f0000210000 r--p 00200000 fd:01 99 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2", 64, 64, 0, 0) +
		smapsEntry("7f0000210000-7f0000220000 r--p 00210000 fd:01 99 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2", 4, 0, 8, 0) +
		smapsEntry("7f0000220000-7f0000230000 r-xp 00000000 fd:01 98 /usr/lib/x86_64-linux-gnu/libgeos.so", 8, 0, 0, 8) +
		smapsEntry("7f0000230000-7f0000240000 r--s 00000000 fd:01 97 /usr/lib/locale/locale-archive", 8, 0, 0, 0) +
		smapsEntry("7f0000240000-7f0000250000 r--p 00000000 00:05 96 /dev/zero", 8, 0, 0, 0) +
		smapsEntry("7f0000250000-7f0000260000 r--p 00000000 00:00 0 ", 8, 0, 0, 0) +
		smapsEntry("7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]", 8, 0, 0, 0) +
		smapsEntry("7f0000260000-7f0000270000 ---p 00000000 fd:01 99 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2", 0, 0, 0, 0) +
		smapsEntry("7f0000270000-7f0000280000 r-xp 00000000 fd:01 95 /opt/a dir/with spaces/libx.so", 12, 0, 0, 0)
	got, err := candidates(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []span{
		{0x400000, 0xc00000},
		{0xc00000, 0x1400000},
		{0x7f0000100000, 0x7f0000200000},
		{0x7f0000270000, 0x7f0000280000},
	}, got)

	// A field the parser cannot read keeps the mapping out.
	bad := strings.Replace(smapsEntry("00400000-00c00000 r-xp 00000000 fd:01 1234 /usr/bin/x", 800, 0, 0, 0), "Anonymous:            0 kB", "Anonymous:            ? kB", 1)
	got, err = candidates(strings.NewReader(bad))
	require.NoError(t, err)
	require.Empty(t, got)

	// A path longer than the reader's buffer is judged by its start.
	long := smapsEntry("00400000-00c00000 r-xp 00000000 fd:01 1234 /"+strings.Repeat("x", 20000), 800, 0, 0, 0) +
		smapsEntry("7f0000200000-7f0000210000 r--p 00200000 fd:01 99 /usr/lib/libz.so", 64, 64, 0, 0)
	got, err = candidates(strings.NewReader(long))
	require.NoError(t, err)
	require.Equal(t, []span{{0x400000, 0xc00000}}, got)
}

// FuzzCandidates: any input parses without a panic, and every span is
// a well-formed range.
func FuzzCandidates(f *testing.F) {
	f.Add(smapsEntry("00400000-00c00000 r-xp 00000000 fd:01 1234  /usr/bin/geoingest", 800, 0, 0, 0))
	f.Add(smapsEntry("7f0000200000-7f0000210000 r--p 00200000 fd:01 99 /usr/lib/libz.so", 64, 64, 0, 0))
	f.Add("ffffffffffffffffff-0 r--p 0 0 0 /x\nRss: 4 kB\n")
	f.Add("1-2 r--p\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := candidates(strings.NewReader(s))
		require.NoError(t, err)
		for _, sp := range got {
			require.LessOrEqual(t, sp.start, sp.end)
		}
	})
}
