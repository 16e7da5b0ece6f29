//go:build cgo && !geoingest_nogdal

package ogr

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Contain is how the child process that reads one dataset is bounded.
// The zero value bounds nothing but still reads in a sandboxed child.
type Contain struct {
	// Context, when done, kills the child (the read fails with its error).
	Context context.Context
	// Deadline, when not zero, kills the child at that time; the read
	// fails with a *LimitError naming Timeout (the flag's value).
	Deadline time.Time
	Timeout  time.Duration
	// CPU bounds the child's CPU time (RLIMIT_CPU, whole seconds).
	CPU time.Duration
	// Memory bounds the child's data segment (RLIMIT_DATA: its heap, the
	// C library's and Go's, and every private writable mapping).
	Memory int64
	// MaxFeatureBytes: a feature whose geometry's WKB, or whose text,
	// passes it is not sent (Layer.WKB returns an *OversizeError).
	MaxFeatureBytes int64
	// Read are the folders (or files) the child may read besides the
	// system's GDAL and PROJ data: the job's folder.
	Read []string
	// Write are the folders the child may write to.
	Write []string
}

// LimitError is a read stopped at one of Contain's limits.
type LimitError struct {
	// Limit is the flag that sets it: "read-timeout", "read-cpu",
	// "read-memory".
	Limit string
	Max   int64
	What  string // "the read took longer than 10m0s"
}

func (e *LimitError) Error() string { return e.What }

// OversizeError is a feature over Contain.MaxFeatureBytes.
type OversizeError struct{ Bytes int64 }

func (e *OversizeError) Error() string {
	return fmt.Sprintf("feature of more than %d bytes", e.Bytes)
}

// Dataset is an open OGR data source, read by a child process.
type Dataset struct {
	c      *child
	Driver string // the GDAL driver's short name ("GPKG", "OpenFileGDB", ...)
	// OpenError is the last error GDAL reported while opening the
	// dataset, though it did open it ("" if none): for GML, the XML error
	// its prescan of a file without a schema met.
	OpenError string
	// Protection says how the child was sandboxed ("seccomp landlock=7").
	Protection string
	layers     []*Layer
}

// Layer is one layer of a Dataset.
type Layer struct {
	ds         *Dataset
	index      int
	Name       string
	GeomFields []GeomField
	Fields     []string
	// UTF8 reports whether OGR gives the layer's strings in UTF-8
	// (OLCStringsAsUTF8).
	UTF8 bool

	fid      int64
	geom     []byte
	geomErr  error
	info     GeomInfo
	oversize int64
	values   []Value
}

// child is one reading process and its pipes.
type child struct {
	cmd    *exec.Cmd
	in     *os.File // frames to the child
	out    *os.File // frames from the child
	rd     *bufio.Reader
	buf    []byte
	w      wbuf
	max    int64
	done   chan struct{} // closed when the child has exited
	stderr tailBuffer

	mu     sync.Mutex
	reason error // why the parent killed it (deadline, context)
	cont   Contain

	probe     bool // started by Probe: no spare replaces it
	spare     bool // started ahead of its job (KeepSpares)
	streaming bool // a msgRead's features are still coming
	stop      chan struct{}
	stopOnce  sync.Once
}

var protectionOnce sync.Once

// Open opens path read-only as a vector dataset with one of drivers (GDAL
// short names), passing the open options ("NAME=VALUE"), in a child
// process contained by c. The error is GDAL's own message, a
// *LimitError, or c.Context's error.
func Open(path string, drivers, options []string, c Contain) (*Dataset, error) {
	if c.Context == nil {
		c.Context = context.Background()
	}
	if err := c.Context.Err(); err != nil {
		return nil, err
	}
	var open wbuf
	open.str(path)
	open.strs(drivers)
	open.strs(options)
	open.strs(c.Read)
	open.strs(c.Write)
	cpu := int64(0)
	if c.CPU > 0 {
		cpu = int64((c.CPU + time.Second - 1) / time.Second)
	}
	open.iv(cpu)
	open.iv(c.Memory)
	open.iv(c.MaxFeatureBytes)
	ch, err := start(c)
	if err != nil {
		return nil, err
	}
	if err := writeFrame(ch.in, msgOpen, open.b); err != nil {
		if !ch.spare || !errors.Is(err, syscall.EPIPE) {
			return nil, ch.close(ch.failure(err))
		}
		// A spare that died before its job came (killed from outside;
		// its end of the pipe closed) but is not reaped yet: the job
		// gets a child of its own.
		ch.discard()
		if ch, err = spawn("1"); err != nil {
			return nil, err
		}
		ch.bind(c)
		if err := writeFrame(ch.in, msgOpen, open.b); err != nil {
			return nil, ch.close(ch.failure(err))
		}
	}
	t, p, err := ch.read()
	if err != nil {
		return nil, ch.close(err)
	}
	r := &rbuf{b: p}
	switch t {
	case msgError:
		code, msg := r.u8(), r.str()
		if code == 1 {
			return nil, ch.close(fmt.Errorf("%w: %s", ErrNoGDAL, strings.TrimPrefix(msg, ErrNoGDAL.Error()+": ")))
		}
		return nil, ch.close(ch.gdalError(msg))
	case msgOpened:
	default:
		return nil, ch.close(ch.failure(fmt.Errorf("unexpected frame %d", t)))
	}
	ds := &Dataset{c: ch, Driver: r.str(), OpenError: r.str(), Protection: r.str()}
	n := r.uv()
	for i := 0; uint64(i) < n && r.err == nil; i++ {
		l := &Layer{ds: ds, index: i, Name: r.str()}
		ng := r.uv()
		for j := 0; uint64(j) < ng && r.err == nil; j++ {
			l.GeomFields = append(l.GeomFields, GeomField{Name: r.str(), Type: GeomType(r.iv()), CRS: r.str(), SwapXY: r.bool()})
		}
		l.Fields = r.strs()
		l.UTF8 = r.bool()
		ds.layers = append(ds.layers, l)
	}
	if r.err != nil {
		return nil, ch.close(ch.failure(r.err))
	}
	protectionOnce.Do(func() {
		if !Complete(ds.Protection) {
			slog.Warn("the GDAL reader runs without part of its sandbox: this kernel lacks it; files are still read in a child process with GDAL's options for untrusted input, rlimits and the deadline", "protection", ds.Protection)
		}
	})
	return ds, nil
}

// start gives the child that reads one job's dataset under c: a spare
// (KeepSpares), libgdal already loaded, or else one started now.
func start(c Contain) (*child, error) {
	ch := takeSpare()
	if ch == nil {
		var err error
		if ch, err = spawn("1"); err != nil {
			return nil, err
		}
	}
	ch.bind(c)
	return ch, nil
}

// spawn starts a child: this binary again (childEnv set to mode), with
// only the environment GDAL and PROJ need (no credential, no connection
// string), stdin and stdout /dev/null, in a process group of its own,
// killed if the parent dies. It knows nothing of a job until bind's
// caller sends msgOpen.
func spawn(mode string) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	ch := &child{in: inW, out: outR, rd: bufio.NewReaderSize(outR, 64<<10), done: make(chan struct{}), stop: make(chan struct{})}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"geoingest-reader"}
	cmd.Env = childEnviron(mode)
	cmd.Stderr = &ch.stderr
	cmd.ExtraFiles = []*os.File{inR, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	ch.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(ch.done)
	}()
	return ch, nil
}

// bind gives the child its job's containment: the frame size it may
// send, and the watch that kills it at the deadline or when the context
// is done.
func (ch *child) bind(c Contain) {
	ch.cont = c
	ch.max = 64 << 20
	if c.MaxFeatureBytes > 0 {
		ch.max = 2*c.MaxFeatureBytes + frameOverhead
	}
	go ch.watch()
}

// childEnviron is the child's whole environment: what marks it, what
// bounds its C library's memory, and where GDAL's and PROJ's data are.
func childEnviron(mode string) []string {
	env := []string{childEnv + "=" + mode, "MALLOC_ARENA_MAX=1", "GOMAXPROCS=1", "PROJ_NETWORK=OFF"}
	for _, k := range []string{"GDAL_DATA", "PROJ_DATA", "PROJ_LIB", "GOCOVERDIR", "GEOINGEST_READER_DEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// watch kills the child at the deadline or when the context is done.
func (ch *child) watch() {
	var deadline <-chan time.Time
	if !ch.cont.Deadline.IsZero() {
		t := time.NewTimer(time.Until(ch.cont.Deadline))
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-ch.done:
	case <-ch.stop:
	case <-deadline:
		ch.kill(&LimitError{Limit: "read-timeout", Max: int64(ch.cont.Timeout), What: fmt.Sprintf("the read took longer than %s", ch.cont.Timeout)})
	case <-ch.cont.Context.Done():
		ch.kill(ch.cont.Context.Err())
	}
}

// kill kills the child's process group, recording why.
func (ch *child) kill(reason error) {
	ch.mu.Lock()
	if ch.reason == nil {
		ch.reason = reason
	}
	ch.mu.Unlock()
	_ = syscall.Kill(-ch.cmd.Process.Pid, syscall.SIGKILL)
}

// read reads the child's next frame; a broken pipe is failure's error.
func (ch *child) read() (byte, []byte, error) {
	t, p, err := readFrame(ch.rd, ch.buf, ch.max)
	ch.buf = p
	if err != nil {
		return 0, nil, ch.failure(err)
	}
	return t, p, nil
}

// failure is why the child stopped answering (err: what reading it
// said): the reason the parent killed it, a limit it reached, or how
// it ended.
func (ch *child) failure(err error) error {
	select {
	case <-ch.done:
	case <-time.After(2 * time.Second):
		ch.kill(nil)
		<-ch.done
	}
	ch.mu.Lock()
	reason := ch.reason
	ch.mu.Unlock()
	if reason != nil {
		return reason
	}
	ps := ch.cmd.ProcessState
	var cpu time.Duration
	var maxRSS int64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		maxRSS = ru.Maxrss << 10
	}
	if c := ch.cont.CPU; c > 0 && cpu >= c-100*time.Millisecond {
		return ch.cpuError()
	}
	if ch.cont.Memory > 0 && (outOfMemory(ch.stderr.String()) || maxRSS >= ch.cont.Memory*9/10) {
		return ch.memoryError()
	}
	if ps.Success() {
		return fmt.Errorf("the GDAL reader ended early: %w", err)
	}
	return fmt.Errorf("the GDAL reader stopped (%s)", ps.String())
}

func (ch *child) cpuError() error {
	return &LimitError{Limit: "read-cpu", Max: int64(ch.cont.CPU), What: fmt.Sprintf("the read needed more than %s of CPU time", ch.cont.CPU)}
}

func (ch *child) memoryError() error {
	return &LimitError{Limit: "read-memory", Max: ch.cont.Memory, What: fmt.Sprintf("the read needed more than %d MB of memory", ch.cont.Memory/1e6)}
}

// gdalError is GDAL's message msg as an error: a *LimitError when it
// says memory ran out under the memory limit.
func (ch *child) gdalError(msg string) error {
	if ch.cont.Memory > 0 && outOfMemory(msg) {
		return ch.memoryError()
	}
	return errors.New(msg)
}

// outOfMemory reports whether a message (GDAL's, SQLite's, the C++ or
// Go runtime's) says an allocation failed.
func outOfMemory(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "out of memory") || strings.Contains(s, "bad_alloc") || strings.Contains(s, "cannot allocate memory")
}

// close ends the child and returns err; a spare is started in its place
// (KeepSpares).
func (ch *child) close(err error) error {
	if !ch.probe {
		defer refill()
	}
	ch.stopOnce.Do(func() { close(ch.stop) })
	select {
	case <-ch.done:
	default:
		if !ch.streaming {
			ch.w.reset()
			_ = writeFrame(ch.in, msgClose, nil)
			ch.in.Close()
			select {
			case <-ch.done:
			case <-time.After(time.Second):
			}
		}
		ch.kill(nil)
		<-ch.done
	}
	ch.in.Close()
	ch.out.Close()
	return err
}

// Close ends the child; the dataset's Layers must not be used after.
func (d *Dataset) Close() {
	if d.c != nil {
		_ = d.c.close(nil)
		d.c = nil
	}
}

// LayerCount is the number of layers (tables) in the dataset.
func (d *Dataset) LayerCount() int { return len(d.layers) }

// Layer returns layer i (0 <= i < LayerCount).
func (d *Dataset) Layer(i int) *Layer { return d.layers[i] }

// Start (re)starts reading the layer from its first feature, giving
// geometry field field, easting first when swap. Only one layer of a
// dataset is read at a time.
func (l *Layer) Start(field int, swap bool) error {
	ch := l.ds.c
	if ch.streaming {
		// A layer left half read: skip what the child still sends.
		for ch.streaming {
			t, _, err := ch.read()
			if err != nil {
				return err
			}
			ch.streaming = t == msgFeature || t == msgOversize
		}
	}
	ch.w.reset()
	ch.w.uv(uint64(l.index))
	ch.w.uv(uint64(field))
	ch.w.bool(swap)
	if err := writeFrame(ch.in, msgRead, ch.w.b); err != nil {
		return ch.failure(err)
	}
	ch.streaming = true
	return nil
}

// Next reads the next feature. It returns false at the end of the
// layer, or with an error (GDAL's message, a *LimitError) when it could
// not be read.
func (l *Layer) Next() (bool, error) {
	ch := l.ds.c
	if !ch.streaming {
		return false, nil
	}
	t, p, err := ch.read()
	if err != nil {
		ch.streaming = false
		return false, err
	}
	r := &rbuf{b: p}
	switch t {
	case msgEnd:
		ch.streaming = false
		return false, nil
	case msgError:
		ch.streaming = false
		r.u8()
		return false, ch.gdalError(r.str())
	case msgOversize:
		l.fid, l.oversize, l.geom, l.geomErr = r.iv(), r.iv(), nil, nil
		return true, r.err
	case msgFeature:
	default:
		ch.streaming = false
		return false, ch.failure(fmt.Errorf("unexpected frame %d", t))
	}
	l.oversize = 0
	l.fid = r.iv()
	l.geom, l.geomErr, l.info = nil, nil, GeomInfo{}
	switch r.u8() {
	case 0:
		l.info.Curved, l.info.DroppedZM = r.bool(), r.bool()
		l.geom = r.bytes()
	case 2:
		l.geomErr = ch.gdalError(r.str())
	}
	n := r.uv()
	if n != uint64(len(l.Fields)) {
		return false, ch.failure(fmt.Errorf("feature with %d fields, not %d", n, len(l.Fields)))
	}
	if l.values == nil {
		l.values = make([]Value, len(l.Fields))
	}
	for i := range l.values {
		v := Value{Kind: Kind(r.u8())}
		switch v.Kind {
		case Integer, Boolean:
			v.Int = r.iv()
		case Real:
			v.Real = r.f64()
		case String:
			v.Str = r.bytes()
		case Date, DateTime, Time:
			v.Year, v.Month, v.Day, v.Hour, v.Minute, v.TZ = int(r.iv()), int(r.iv()), int(r.iv()), int(r.iv()), int(r.iv()), int(r.iv())
			v.Second = r.f64()
		}
		l.values[i] = v
	}
	if r.err != nil {
		return false, ch.failure(r.err)
	}
	return true, nil
}

// FID is the current feature's id in its layer (-1 if it has none).
func (l *Layer) FID() int64 { return l.fid }

// WKB returns the current feature's geometry (the field Start named) as
// 2D ISO WKB (little-endian), nil for a null or empty geometry, and what
// was changed of it. The bytes are valid until the next Next. A feature
// over Contain.MaxFeatureBytes is an *OversizeError.
func (l *Layer) WKB() ([]byte, GeomInfo, error) {
	if l.oversize > 0 {
		return nil, GeomInfo{}, &OversizeError{Bytes: l.oversize}
	}
	return l.geom, l.info, l.geomErr
}

// Field returns attribute i of the current feature; a String's bytes
// are valid until the next Next.
func (l *Layer) Field(i int) Value { return l.values[i] }

// Version is the GDAL release the binary runs with ("3.6.2"), "" if
// libgdal cannot be loaded. It loads GDAL in this process: for tests and
// diagnostics, not the reading path.
func Version() string { return cVersion() }

// tailBuffer keeps the last 8 KiB written to it (the child's stderr:
// what a runtime says as it dies).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = bytes.Clone(t.b[len(t.b)-8<<10:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Probe starts a reading child that loads no GDAL and opens nothing, and
// returns the sandbox it could apply ("seccomp landlock=7"), for a
// command to log at start-up; "" with the error when no child starts.
func Probe() (string, error) {
	ch, err := spawn(childProbe)
	if err != nil {
		return "", err
	}
	ch.probe = true
	ch.bind(Contain{Context: context.Background()})
	ch.w.reset()
	ch.w.str("") // no path: a probe
	for range 4 {
		ch.w.uv(0)
	}
	ch.w.iv(0)
	ch.w.iv(0)
	ch.w.iv(0)
	if err := writeFrame(ch.in, msgOpen, ch.w.b); err != nil {
		return "", ch.close(ch.failure(err))
	}
	t, p, err := ch.read()
	if err != nil {
		return "", ch.close(err)
	}
	if t != msgOpened {
		return "", ch.close(fmt.Errorf("unexpected frame %d", t))
	}
	r := &rbuf{b: p}
	r.str()
	r.str()
	prot := r.str()
	_ = ch.close(nil)
	return prot, r.err
}

// Complete reports whether a protection Probe or Open reported is the
// whole sandbox: seccomp and Landlock.
func Complete(protection string) bool {
	return strings.Contains(protection, "seccomp") && strings.Contains(protection, "landlock=")
}

// ErrStart is (wrapped in) the error of Open when the reading child
// cannot be started: the machine's fault, not the file's.
var ErrStart = errors.New("the GDAL reader could not be started")
