package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fleet runs several `geoingest serve` processes (the built binary), each
// in a slot that a supervisor goroutine keeps filled: when the process in
// a slot dies (SIGKILLed by the suite, or exiting by itself, e.g. when it
// cannot reach the database at start) the slot starts a new one. Every
// process writes its log (JSON) to a file of its own.
type fleet struct {
	t      *testing.T
	args   []string // serve's flags, without --metrics-addr
	env    []string // added to the suite's environment
	logDir string

	mu       sync.Mutex
	slots    []*slot
	stopping bool
	metrics  map[string]float64 // summed over the processes' last scrapes
	logs     []string
	kills    int
	restarts int
	selfExit int // exits the suite did not cause
	exitMsgs []string
	wg       sync.WaitGroup
}

// slot is one place in the fleet.
type slot struct {
	idx       int
	cmd       *exec.Cmd // the running process; nil between processes
	metrics   string    // its /metrics URL
	killed    bool      // the suite SIGKILLed the current process
	protected bool      // not to be killed (the stealer's victim)
	log       string    // the current process's log file
	exited    chan struct{}
}

func newFleet(t *testing.T, n int, logDir string, env, args []string) *fleet {
	f := &fleet{t: t, args: args, env: env, logDir: logDir, metrics: map[string]float64{}}
	for i := 0; i < n; i++ {
		s := &slot{idx: i}
		f.slots = append(f.slots, s)
		f.wg.Add(1)
		go f.supervise(s)
	}
	t.Cleanup(f.kill)
	return f
}

// supervise keeps slot s filled until the fleet stops.
func (f *fleet) supervise(s *slot) {
	defer f.wg.Done()
	for gen := 0; ; gen++ {
		f.mu.Lock()
		if f.stopping {
			f.mu.Unlock()
			return
		}
		cmd, err := f.start(s, gen)
		if err != nil {
			f.exitMsgs = append(f.exitMsgs, err.Error())
			f.mu.Unlock()
			time.Sleep(time.Second)
			continue
		}
		if gen > 0 {
			f.restarts++
		}
		exited := s.exited
		f.mu.Unlock()

		err = cmd.Wait()
		f.mu.Lock()
		killed := s.killed
		s.cmd, s.killed = nil, false
		close(exited)
		stopping := f.stopping
		if !killed && !stopping {
			f.selfExit++
			f.exitMsgs = append(f.exitMsgs, fmt.Sprintf("serve %d (pid %d) exited by itself: %v", s.idx, cmd.Process.Pid, err))
		}
		f.mu.Unlock()
		if stopping {
			return
		}
		// A killed worker is replaced after a moment, as a supervisor
		// (systemd, Kubernetes) would; one that failed on its own after a
		// second.
		if killed {
			time.Sleep(time.Duration(200+rand.IntN(800)) * time.Millisecond)
		} else {
			time.Sleep(time.Second)
		}
	}
}

// start starts a serve process in slot s. Called with f.mu held.
func (f *fleet) start(s *slot, gen int) (*exec.Cmd, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(f.logDir, fmt.Sprintf("serve-%d-%03d.log", s.idx, gen))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(binary, append([]string{"serve", "--metrics-addr", addr}, f.args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), f.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start serve: %w", err)
	}
	s.cmd, s.metrics, s.exited, s.log = cmd, "http://"+addr+"/metrics", make(chan struct{}), logPath
	f.logs = append(f.logs, logPath)
	return cmd, nil
}

// killRandom scrapes the metrics of a random running, unprotected serve
// and SIGKILLs it. It returns false when there was none to kill.
func (f *fleet) killRandom(rng *rand.Rand) bool {
	f.mu.Lock()
	var live []*slot
	for _, s := range f.slots {
		if s.cmd != nil && !s.killed && !s.protected {
			live = append(live, s)
		}
	}
	if len(live) == 0 || f.stopping {
		f.mu.Unlock()
		return false
	}
	s := live[rng.IntN(len(live))]
	url := s.metrics
	f.mu.Unlock()
	m := scrape(url) // before the kill: what it did dies with it
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.cmd == nil || s.killed || s.protected || url != s.metrics {
		return false
	}
	s.killed = true
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	f.kills++
	for k, v := range m {
		f.metrics[k] += v
	}
	return true
}

// protectPID keeps the running process with pid from being killed until
// unprotect, and returns its slot and log file; nil when no running
// process has pid.
func (f *fleet) protectPID(pid int) (*slot, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.slots {
		if s.cmd != nil && !s.killed && s.cmd.Process.Pid == pid {
			s.protected = true
			return s, s.log
		}
	}
	return nil, ""
}

func (f *fleet) unprotect(s *slot) {
	f.mu.Lock()
	s.protected = false
	f.mu.Unlock()
}

// alive reports whether slot s still runs the process with pid.
func (f *fleet) alive(s *slot, pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.cmd != nil && !s.killed && s.cmd.Process.Pid == pid
}

// logged reports whether the log file at path has a line containing every
// one of words.
func logged(path string, words ...string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// ready waits until every slot runs a serve whose /readyz answers 200.
func (f *fleet) ready(ctx context.Context) error {
	for {
		n := 0
		f.mu.Lock()
		var urls []string
		for _, s := range f.slots {
			if s.cmd != nil && !s.killed {
				urls = append(urls, strings.TrimSuffix(s.metrics, "/metrics")+"/readyz")
			}
		}
		f.mu.Unlock()
		for _, u := range urls {
			if get(u) == http.StatusOK {
				n++
			}
		}
		if n == len(f.slots) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d serves ready: %w", n, len(f.slots), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop scrapes every serve's metrics and stops them all with SIGTERM (a
// graceful shutdown), then waits for the supervisors.
func (f *fleet) stop() {
	f.mu.Lock()
	f.stopping = true
	var procs []*slot
	for _, s := range f.slots {
		if s.cmd != nil {
			procs = append(procs, s)
		}
	}
	f.mu.Unlock()
	var exits []chan struct{}
	for _, s := range procs {
		m := scrape(s.metrics)
		f.mu.Lock()
		for k, v := range m {
			f.metrics[k] += v
		}
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
		exits = append(exits, s.exited)
		f.mu.Unlock()
	}
	for i, exited := range exits {
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			f.t.Errorf("serve %d did not stop within 30 s of SIGTERM", procs[i].idx)
			f.kill()
		}
	}
	f.wg.Wait()
}

// kill SIGKILLs whatever still runs (cleanup).
func (f *fleet) kill() {
	f.mu.Lock()
	f.stopping = true
	for _, s := range f.slots {
		if s.cmd != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	f.mu.Unlock()
}

// logLines calls fn with every JSON log record of every serve process the
// fleet ran, in start order.
func (f *fleet) logLines(fn func(rec map[string]any, line string)) error {
	f.mu.Lock()
	logs := append([]string(nil), f.logs...)
	f.mu.Unlock()
	for _, p := range logs {
		file, err := os.Open(p)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				rec = map[string]any{"msg": sc.Text()} // stdout's summary line
			}
			fn(rec, sc.Text())
		}
		file.Close()
	}
	return nil
}

// lineCounts counts the log lines that contain each of texts.
func (f *fleet) lineCounts(texts ...string) map[string]int {
	counts := map[string]int{}
	_ = f.logLines(func(_ map[string]any, line string) {
		for _, t := range texts {
			if strings.Contains(line, t) {
				counts[t]++
			}
		}
	})
	return counts
}

// logCounts counts the log records by level and message.
func (f *fleet) logCounts() map[string]int {
	counts := map[string]int{}
	_ = f.logLines(func(rec map[string]any, _ string) {
		lvl, _ := rec["level"].(string)
		msg, _ := rec["msg"].(string)
		if strings.HasPrefix(msg, "serve: ") {
			msg = "serve: (summary)"
		}
		if len(msg) > 110 {
			msg = msg[:110] + "..."
		}
		counts[fmt.Sprintf("%-5s %s", lvl, msg)]++
	})
	return counts
}

// scrape reads the geoingest_ samples of a /metrics page (histogram
// buckets left out). A serve that does not answer gives nothing.
func scrape(url string) map[string]float64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "geoingest_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		name := line[:i]
		if strings.Contains(name, "_bucket{") || strings.HasSuffix(name, "_sum") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func get(url string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
