// Command rssmap runs a command and says where its resident memory is at
// its peak: it polls the process's VmRSS, reads /proc/PID/smaps whenever
// the RSS reaches a new high, and prints that sample's resident memory by
// mapping (docs/benchmarks.md, "Memory"): the executable's text, read-only
// data and data, each shared library, and the anonymous memory by kind
// (glibc's malloc arenas, the Go heap, thread stacks, the rest: the Go
// runtime's own metadata among them). Linux only.
//
//	go run ./internal/tools/rssmap [-i 20ms] [-smaps FILE] -- CMD [ARG...]
//
// The command's standard output is discarded and its standard error
// passed through; the exit status is the command's.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	interval := flag.Duration("i", 20*time.Millisecond, "how often to read the process's RSS")
	keep := flag.String("smaps", "", "also write the peak's smaps to this file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: rssmap [-i 20ms] [-smaps FILE] -- CMD [ARG...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rssmap:", err)
		os.Exit(2)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak peakSample
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var err error
poll:
	for {
		peak.sample(pid)
		select {
		case err = <-done:
			break poll
		case <-tick.C:
		}
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "rssmap:", err)
		code = 2
	}
	if peak.smaps == "" {
		fmt.Fprintln(os.Stderr, "rssmap: the process ended before it could be sampled")
		os.Exit(2)
	}
	if *keep != "" {
		if err := os.WriteFile(*keep, []byte(peak.smaps), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "rssmap:", err)
		}
	}
	fmt.Printf("# %s (exit %d): VmHWM %.1f MB, peak sampled %.1f MB\n", filepath.Base(flag.Arg(0)), code, float64(peak.hwm)/1024, float64(peak.rssKB)/1024)
	report(os.Stdout, classify(parseSmaps(peak.smaps), peak.exe))
	os.Exit(code)
}

// peakSample keeps the smaps of the highest RSS seen.
type peakSample struct {
	rssKB, hwm int
	smaps, exe string
}

func (p *peakSample) sample(pid int) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	rss := statusKB(string(st), "VmRSS:")
	if h := statusKB(string(st), "VmHWM:"); h > p.hwm {
		p.hwm = h
	}
	if rss <= p.rssKB {
		return
	}
	sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return
	}
	total := 0
	for _, m := range parseSmaps(string(sm)) {
		total += m.rss
	}
	if total > p.rssKB {
		p.rssKB, p.smaps = total, string(sm)
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
			p.exe = exe
		}
	}
}

func statusKB(status, key string) int {
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, key) {
			f := strings.Fields(l[len(key):])
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// mapping is one entry of smaps; sizes in kB.
type mapping struct {
	start, end uint64
	perms      string
	path       string
	rss, anon  int
}

func parseSmaps(s string) []mapping {
	var out []mapping
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			a, b, _ := strings.Cut(f[0], "-")
			lo, err1 := strconv.ParseUint(a, 16, 64)
			hi, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				m := mapping{start: lo, end: hi, perms: f[1]}
				if len(f) >= 6 {
					m.path = strings.Join(f[5:], " ")
				}
				out = append(out, m)
				continue
			}
		}
		if len(out) == 0 || len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			out[len(out)-1].rss = n
		case "Anonymous:":
			out[len(out)-1].anon = n
		}
	}
	return out
}

// Classes of anonymous memory.
const (
	classMallocMain  = "anon: malloc, main arena ([heap])"
	classMallocArena = "anon: malloc, thread arenas"
	classGoHeap      = "anon: Go heap"
	classStacks      = "anon: thread stacks"
	classBSS         = "anon: executable's bss"
	classOtherAnon   = "anon: other mappings"
)

// classify sums resident kB by class. exe is the executable's path.
// The Go heap is told by its address: Go reserves its arenas below the
// region where the kernel places mmaps and shared libraries
// (0x7f..., on amd64); glibc's thread arenas are 64 MB-aligned
// reservations there; a thread stack is a writable mapping right above a
// one-page guard.
func classify(maps []mapping, exe string) map[string]int {
	out := map[string]int{}
	for i, m := range maps {
		var c string
		var prev *mapping
		if i > 0 {
			prev = &maps[i-1]
		}
		switch {
		case exe != "" && m.path == exe:
			switch m.perms {
			case "r-xp":
				c = "exe: text"
			case "rw-p":
				c = "exe: data"
			default:
				c = "exe: read-only data"
			}
		case strings.HasPrefix(m.path, "/"):
			base := filepath.Base(m.path)
			if i := strings.Index(base, ".so"); i > 0 {
				c = "lib: " + base[:i]
			} else {
				c = "file: " + base
			}
		case m.path == "[heap]":
			c = classMallocMain
		case strings.HasPrefix(m.path, "["):
			c = m.path
		case prev != nil && prev.path == exe && exe != "" && prev.end == m.start:
			c = classBSS
		case m.start < 0x7000_0000_0000:
			c = classGoHeap
		case prev != nil && prev.perms == "---p" && prev.path == "" && prev.end == m.start && prev.end-prev.start == 4096:
			c = classStacks
		case m.start%(64<<20) == 0 && m.end-m.start <= 64<<20:
			c = classMallocArena
		default:
			c = classOtherAnon
		}
		out[c] += m.rss
	}
	return out
}

func report(w io.Writer, by map[string]int) {
	type row struct {
		class string
		kb    int
	}
	var rows []row
	var total, exe, libs, anon, small int
	for c, kb := range by {
		total += kb
		switch {
		case strings.HasPrefix(c, "exe: "):
			exe += kb
		case strings.HasPrefix(c, "lib: "):
			libs += kb
		case strings.HasPrefix(c, "anon: "):
			anon += kb
		}
		if kb >= 300 || strings.HasPrefix(c, "exe: ") || strings.HasPrefix(c, "anon: ") {
			rows = append(rows, row{c, kb})
		} else {
			small += kb
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].kb != rows[j].kb {
			return rows[i].kb > rows[j].kb
		}
		return rows[i].class < rows[j].class
	})
	mb := func(kb int) string { return fmt.Sprintf("%6.1f MB", float64(kb)/1024) }
	for _, r := range rows {
		fmt.Fprintf(w, "%-44s %s\n", r.class, mb(r.kb))
	}
	fmt.Fprintf(w, "%-44s %s\n", "(each of the rest < 0.3 MB)", mb(small))
	fmt.Fprintf(w, "%-44s %s\n", "= the executable (text, read-only data, data)", mb(exe))
	fmt.Fprintf(w, "%-44s %s\n", "= shared libraries", mb(libs))
	fmt.Fprintf(w, "%-44s %s\n", "= anonymous", mb(anon))
	fmt.Fprintf(w, "%-44s %s\n", "= total", mb(total))
}
