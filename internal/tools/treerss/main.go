//go:build linux

// Command treerss runs a command and reports the peak resident memory of
// it and its descendants together (a geoingest worker and the GDAL
// reading child each job starts), polling /proc every few milliseconds:
// the peak of the sum, and the peaks of the command alone and of its
// descendants. Linux only.
//
//	go run ./internal/tools/treerss [-i 5ms] [-pss] -- CMD [ARG...]
//
// The command's output is passed through; the report goes to the file
// -o names (default stderr) as "tree_kb=N self_kb=N children_kb=N
// wall=DURATION" (with -pss, then "tree_pss_kb=N"), and the exit status
// is the command's.
//
// The sum of resident sets counts twice every page the processes share:
// the pages of the executable both map, of the C library, of PROJ and
// GEOS (the worker links them too). -pss also reports the peak of the
// sum of their proportional set sizes (Pss, smaps_rollup: a page shared
// by n processes counts 1/n in each), which counts a page the worker and
// its child share once (and a page shared with processes outside the
// tree, a fraction of it). A child between fork and exec shares its
// parent's memory (Go starts processes with vfork) and is not counted.
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

	"golang.org/x/sys/unix"
)

func main() {
	every := flag.Duration("i", 5*time.Millisecond, "polling interval")
	outPath := flag.String("o", "", "write the report to this file (default stderr)")
	withPSS := flag.Bool("pss", false, "also report the peak of the sum of Pss")
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
	var tree, self, kids, pss int64
	t := time.NewTicker(*every)
	defer t.Stop()
loop:
	for {
		s, k, p := sample(root, *withPSS)
		tree, self, kids, pss = max(tree, s+k), max(self, s), max(kids, k), max(pss, p)
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
	fmt.Fprintf(w, "tree_kb=%d self_kb=%d children_kb=%d wall=%s", tree, self, kids, time.Since(start).Round(time.Millisecond))
	if *withPSS {
		fmt.Fprintf(w, " tree_pss_kb=%d", pss)
	}
	fmt.Fprintln(w)
	os.Exit(cmd.ProcessState.ExitCode())
}

// sample is the resident kB of root and the sum over its descendants,
// and (withPSS) the sum of the Pss of them all.
func sample(root int, withPSS bool) (self, kids, pss int64) {
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
					self = status(pid, "VmRSS:")
				} else if !sharesMemory(pid, parent[pid]) {
					kids += status(pid, "VmRSS:")
				} else {
					break
				}
				if withPSS {
					pss += rollup(pid, "Pss:")
				}
				break
			}
		}
	}
	return self, kids, pss
}

// sharesMemory reports whether pid shares its address space with ppid
// (kcmp KCMP_VM): a child between vfork and exec.
func sharesMemory(pid, ppid int) bool {
	const kcmpVM = 1
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(ppid), kcmpVM, 0, 0, 0)
	return e == 0 && r == 0
}

func status(pid int, key string) int64 { return field("/proc/"+strconv.Itoa(pid)+"/status", key) }

func rollup(pid int, key string) int64 {
	return field("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", key)
}

// field is the kB value of the line of file that starts with key.
func field(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
