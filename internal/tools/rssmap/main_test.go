package main

import (
	"strings"
	"testing"
)

// A cut-down smaps of a cgo Go process: its executable, the bss after it,
// a Go heap arena, a library, glibc's main and thread arenas, a thread
// stack above its guard page, and the vDSO.
const sampleSmaps = `00400000-00403000 r--p 00000000 fe:00 1 /opt/gi
Rss:                  12 kB
Anonymous:             0 kB
00403000-0133b000 r-xp 00003000 fe:00 1 /opt/gi
Rss:               10000 kB
0133b000-02376000 r--p 00f3b000 fe:00 1 /opt/gi
Rss:                9000 kB
02377000-0251e000 rw-p 01f76000 fe:00 1 /opt/gi
Rss:                 600 kB
Anonymous:           100 kB
0251e000-0456d000 rw-p 00000000 00:00 0 
Rss:                 128 kB
Anonymous:           128 kB
ae0f000-b400000 rw-p 00000000 00:00 0                                  [heap]
Rss:                6000 kB
31e25bc00000-31e25c400000 rw-p 00000000 00:00 0 
Rss:                6100 kB
7f89c1ffc000-7f89c1ffd000 ---p 00000000 00:00 0 
Rss:                   0 kB
7f89c1ffd000-7f89c27fd000 rw-p 00000000 00:00 0 
Rss:                   8 kB
7f89c4000000-7f89c4023000 rw-p 00000000 00:00 0 
Rss:                 140 kB
7f89c4023000-7f89c8000000 ---p 00000000 00:00 0 
Rss:                   0 kB
7f89c9b60000-7f89c9d00000 rw-p 00000000 00:00 0 
Rss:                 220 kB
7f8a10000000-7f8a10100000 r-xp 00000000 fe:00 2 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2
Rss:                8000 kB
7f8a126e9000-7f8a126eb000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
`

func TestClassify(t *testing.T) {
	maps := parseSmaps(sampleSmaps)
	if len(maps) != 14 {
		t.Fatalf("parsed %d mappings, want 14", len(maps))
	}
	got := classify(maps, "/opt/gi")
	want := map[string]int{
		"exe: read-only data": 9012,
		"exe: text":           10000,
		"exe: data":           600,
		classBSS:              128,
		classMallocMain:       6000,
		classGoHeap:           6100,
		classStacks:           8,
		classMallocArena:      140,
		classOtherAnon:        220,
		"lib: libgdal":        8000,
		"[vdso]":              8,
	}
	for c, kb := range want {
		if got[c] != kb {
			t.Errorf("%s: %d kB, want %d", c, got[c], kb)
		}
	}
	for c := range got {
		if _, ok := want[c]; !ok && got[c] != 0 {
			t.Errorf("unexpected class %q: %d kB", c, got[c])
		}
	}
	var b strings.Builder
	report(&b, got)
	if !strings.Contains(b.String(), "= the executable (text, read-only data, data)   19.2 MB") {
		t.Errorf("report:\n%s", b.String())
	}
}
