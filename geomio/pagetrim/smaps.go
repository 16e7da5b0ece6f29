package pagetrim

import (
	"bufio"
	"bytes"
	"io"
)

// span is an address range [start, end).
type span struct{ start, end uint64 }

// candidates reads a process's smaps (proc(5)) and returns, in ascending
// order, the mappings whose resident pages are all the file's own:
// file-backed (a path, not under /dev), private, readable and not
// writable, resident, not locked, with no anonymous page (a private copy
// made by a write) and nothing swapped out (a private copy, written and
// then swapped). It allocates nothing per line: it runs in the process
// whose memory it is about to give back.
func candidates(r io.Reader) ([]span, error) {
	var out []span
	var cur struct {
		span
		eligible, seen bool
		rss, bad       int64 // bad: Anonymous + Swap + Locked
	}
	flush := func() {
		if cur.seen && cur.eligible && cur.rss > 0 && cur.bad == 0 {
			out = append(out, cur.span)
		}
		cur.seen = false
	}
	br := bufio.NewReaderSize(r, 8<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if s, eligible, ok := parseHeader(line); ok {
				flush()
				cur.span, cur.eligible, cur.seen, cur.rss, cur.bad = s, eligible, true, 0, 0
			} else if cur.seen {
				switch {
				case bytes.HasPrefix(line, []byte("Rss:")):
					cur.rss = parseKB(line[4:])
				case bytes.HasPrefix(line, []byte("Anonymous:")):
					cur.bad += parseKB(line[10:])
				case bytes.HasPrefix(line, []byte("Swap:")):
					cur.bad += parseKB(line[5:])
				case bytes.HasPrefix(line, []byte("Locked:")):
					cur.bad += parseKB(line[7:])
				}
			}
		}
		for err == bufio.ErrBufferFull {
			// A line longer than the buffer (a long path): it was judged
			// by its start; the rest is skipped.
			_, err = br.ReadSlice('\n')
		}
		if err == io.EOF {
			flush()
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseHeader parses a mapping's first line,
// "START-END PERMS OFFSET DEV INODE [PATH]" (field lines begin with a
// capitalised key instead). eligible: a private, readable, not writable
// mapping of a file.
func parseHeader(line []byte) (s span, eligible, ok bool) {
	if len(line) == 0 || hexVal(line[0]) < 0 {
		return span{}, false, false
	}
	i := 0
	if s.start, i, ok = parseHex(line, i); !ok || i >= len(line) || line[i] != '-' {
		return span{}, false, false
	}
	if s.end, i, ok = parseHex(line, i+1); !ok || i+5 > len(line) || line[i] != ' ' || s.end < s.start {
		return span{}, false, false
	}
	perms := line[i+1 : i+5]
	// The path is the sixth field; the fields before it have no spaces.
	rest := line[i+5:]
	for f := 0; f < 3; f++ {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			rest = nil
			break
		}
		rest = rest[j:]
	}
	path := bytes.TrimSpace(rest)
	eligible = perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' &&
		len(path) > 0 && path[0] == '/' && !bytes.HasPrefix(path, []byte("/dev/"))
	return s, eligible, true
}

func parseHex(b []byte, i int) (uint64, int, bool) {
	var v uint64
	start := i
	for ; i < len(b) && hexVal(b[i]) >= 0; i++ {
		if i-start >= 16 {
			return 0, i, false
		}
		v = v<<4 | uint64(hexVal(b[i]))
	}
	return v, i, i > start
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// parseKB parses "   N kB"; a value it cannot read counts as large, so
// that a field it does not understand never makes a mapping eligible.
func parseKB(b []byte) int64 {
	b = bytes.TrimLeft(b, " \t")
	var v int64
	n := 0
	for ; n < len(b) && '0' <= b[n] && b[n] <= '9'; n++ {
		if n >= 18 {
			return 1 << 62
		}
		v = v*10 + int64(b[n]-'0')
	}
	if n == 0 {
		return 1 << 62
	}
	return v
}
