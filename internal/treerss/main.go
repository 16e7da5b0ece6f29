// Command treerss runs a command and reports the peak resident memory of
// it and its descendants together (a geoingest worker and the GDAL
// reading child each job starts), polling /proc every few milliseconds:
// the peak of the sum, and the peaks of the command alone and of its
// descendants. Linux only.
//
//	go run ./internal/treerss [-i 5ms] -- CMD [ARG...]
//
// The command's output is passed through; the report goes to the file
// -o names (default stderr) as "tree_kb=N self_kb=N children_kb=N
// wall=DURATION", and the exit status is the command's.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	every := flag.Duration("i", 5*time.Millisecond, "polling interval")
	outPath := flag.String("o", "", "write the report to this file (default stderr)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: treerss [-i 5ms] [-o FILE] -- CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "treerss:", err)
		os.Exit(1)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	root := cmd.Process.Pid
	var tree, self, kids int64
	t := time.NewTicker(*every)
	defer t.Stop()
loop:
	for {
		s, k := sample(root)
		tree, self, kids = max(tree, s+k), max(self, s), max(kids, k)
		select {
		case <-done:
			break loop
		case <-t.C:
		}
	}
	var w io.Writer = os.Stderr
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err == nil {
			defer f.Close()
			w = f
		}
	}
	fmt.Fprintf(w, "tree_kb=%d self_kb=%d children_kb=%d wall=%s\n", tree, self, kids, time.Since(start).Round(time.Millisecond))
	os.Exit(cmd.ProcessState.ExitCode())
}

// sample is the resident kB of root and the sum over its descendants.
func sample(root int) (self, kids int64) {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
	}
	for pid := range parent {
		d := 0
		for q := pid; q > 1 && d < 64; q, d = parent[q], d+1 {
			if q == root {
				if pid == root {
					self = rss(pid)
				} else {
					kids += rss(pid)
				}
				break
			}
		}
	}
	return self, kids
}

func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
