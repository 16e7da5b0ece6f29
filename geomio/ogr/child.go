//go:build cgo && !geoingest_nogdal

package ogr

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"strconv"

	"github.com/geoingest/geoingest/geomio/pagetrim"
)

// childEnv marks a process started to read one dataset: the running
// binary (geoingest, or a test binary) executed again with it set. Its
// init runs the child and exits before main (the "reexec" pattern), so
// every binary that reads with GDAL is its own reader.
const childEnv = "GEOINGEST_READER_CHILD"

// childProbe is childEnv's value for a child started by Probe, which
// loads no GDAL; "1" is a reading child.
const childProbe = "probe"

func init() {
	mode := os.Getenv(childEnv)
	if mode != "1" && mode != childProbe {
		return
	}
	// Every GDAL call is made from this thread, which the sandbox
	// restricts (Landlock applies to the thread that asks and the
	// threads it starts).
	runtime.LockOSThread()
	os.Exit(childMain(mode == "1"))
}

// childMain reads one dataset for the parent, over fds 3 (frames in) and
// 4 (frames out). Its stdin is /dev/null (so /vsistdin/ reads nothing).
//
// A reading child (load) loads libgdal first, then waits for its job
// (msgOpen): the parent may start it ahead of the job (a spare,
// KeepSpares), so that a job does not wait for the load. Nothing of the
// job is known before msgOpen, and the sandbox, which names the job's
// folder, is applied after it, once, before the file is opened: a child
// reads one job's dataset and exits.
func childMain(load bool) int {
	in := bufio.NewReaderSize(os.NewFile(3, "geoingest-reader-in"), 16<<10)
	outf := os.NewFile(4, "geoingest-reader-out")
	out := bufio.NewWriterSize(outf, 64<<10)
	c := &childState{out: out}
	if load {
		_ = initGDAL() // its error is sent when the job comes
	}
	t, p, err := readFrame(in, nil, 16<<20)
	if err != nil || t != msgOpen {
		return 2
	}
	r := &rbuf{b: p}
	path, drivers, options := r.str(), r.strs(), r.strs()
	read, write := r.strs(), r.strs()
	cpu, mem, maxFeature := r.iv(), r.iv(), r.iv()
	if r.err != nil {
		return 2
	}
	c.maxFeature = maxFeature
	if path == "" {
		// A probe (Probe): the sandbox this kernel allows, without GDAL.
		c.w.reset()
		c.w.str("")
		c.w.str("")
		c.w.str(applySandbox(read, write))
		c.w.uv(0)
		_ = c.send(msgOpened)
		return 0
	}
	if err := initGDAL(); err != nil {
		c.sendError(1, err.Error())
		return 0
	}
	// The limits are set once libgdal and the libraries it needs are
	// mapped: the memory limit is what reading may add to that.
	setLimits(cpu, mem)
	// SQLite (GeoPackage): no temporary files; a view's or query's
	// memory bounded below the process's; no function that a view or
	// trigger in the file calls unless SQLite deems it harmless.
	pragma := "trusted_schema=OFF,temp_store=MEMORY"
	if mem > 0 {
		pragma += ",hard_heap_limit=" + strconv.FormatInt(mem/2, 10)
	}
	setConfig("OGR_SQLITE_PRAGMA", pragma)
	if len(write) > 0 {
		setConfig("CPL_TMPDIR", write[0])
	}
	// Kept open for a trim once the sandbox no longer lets it be opened.
	smaps, _ := os.Open("/proc/self/smaps")
	prot := applySandbox(read, write)
	ds, err := cOpen(path, drivers, options)
	if err != nil {
		c.sendError(0, err.Error())
		return 0
	}
	defer ds.Close()
	w := &c.w
	w.reset()
	w.str(ds.Driver)
	w.str(ds.OpenError)
	w.str(prot)
	n := ds.LayerCount()
	w.uv(uint64(n))
	layers := make([]*cLayer, n)
	for i := range layers {
		l := ds.Layer(i)
		layers[i] = l
		w.str(l.Name)
		w.uv(uint64(len(l.GeomFields)))
		for _, g := range l.GeomFields {
			w.str(g.Name)
			w.iv(int64(g.Type))
			w.str(g.CRS)
			w.bool(g.SwapXY)
		}
		w.strs(l.Fields)
		w.bool(l.UTF8)
	}
	if c.send(msgOpened) != nil {
		return 0
	}
	// The pages of code and read-only data that opening the file
	// touched (GDAL's drivers probing it, the layers' description, the
	// CRS's export) and that reading features does not use are given
	// back (geomio/pagetrim): 5–9 MB of the child's resident memory
	// while it reads (docs/benchmarks.md).
	if smaps != nil {
		_, _ = pagetrim.TrimWith(smaps)
		smaps.Close()
	}
	for {
		t, p, err := readFrame(in, p, 1<<20)
		if err != nil || t == msgClose {
			return 0 // the parent is gone, or done
		}
		if t != msgRead {
			return 2
		}
		r := &rbuf{b: p}
		li, field, swap := int(r.uv()), int(r.uv()), r.bool()
		if r.err != nil || li >= len(layers) {
			return 2
		}
		if err := c.stream(layers[li], field, swap); err != nil {
			return 0 // the parent stopped reading
		}
	}
}

type childState struct {
	out        *bufio.Writer
	w          wbuf
	maxFeature int64
}

func (c *childState) send(t byte) error {
	if err := writeFrame(c.out, t, c.w.b); err != nil {
		return err
	}
	return c.out.Flush()
}

// sendError sends msgError: code 1 when GDAL cannot be loaded, 0 for
// GDAL's error about the file.
func (c *childState) sendError(code byte, msg string) {
	c.w.reset()
	c.w.u8(code)
	c.w.str(msg)
	_ = c.send(msgError)
}

// stream sends every feature of l, then msgEnd, or msgError at the
// first feature GDAL cannot read. Frames are flushed as the buffer
// fills: the pipe's back-pressure holds the child to the parent's pace.
func (c *childState) stream(l *cLayer, field int, swap bool) error {
	l.Reset()
	defer l.free()
	w := &c.w
	for {
		ok, err := l.Next()
		if err != nil {
			c.sendError(0, err.Error())
			return nil
		}
		if !ok {
			w.reset()
			return c.send(msgEnd)
		}
		if err := c.feature(l, field, swap); err != nil {
			return err
		}
	}
}

var errOversize = errors.New("oversize")

// feature frames the current feature of l, or msgOversize when its
// geometry or its text passes maxFeature bytes (the parent fails it as
// over max-feature-bytes without the bytes crossing the pipe).
func (c *childState) feature(l *cLayer, field int, swap bool) error {
	w := &c.w
	w.reset()
	fid := l.FID()
	w.iv(fid)
	wkb, info, gerr := l.WKB(field, swap)
	size := int64(len(wkb))
	switch {
	case gerr != nil:
		w.u8(2)
		w.str(gerr.Error())
	case wkb == nil:
		w.u8(1)
	default:
		w.u8(0)
		w.bool(info.Curved)
		w.bool(info.DroppedZM)
		w.bytes(wkb)
	}
	err := error(nil)
	if c.maxFeature > 0 && size > c.maxFeature {
		err = errOversize
	}
	if err == nil {
		l.ReadFields()
		w.uv(uint64(len(l.Fields)))
		for i := range l.Fields {
			v := l.Field(i)
			w.u8(byte(v.Kind))
			switch v.Kind {
			case Integer, Boolean:
				w.iv(v.Int)
			case Real:
				w.f64(v.Real)
			case String:
				size += int64(len(v.Str))
				if c.maxFeature > 0 && size > c.maxFeature {
					err = errOversize
					break
				}
				w.bytes(v.Str)
			case Date, DateTime, Time:
				for _, n := range []int{v.Year, v.Month, v.Day, v.Hour, v.Minute, v.TZ} {
					w.iv(int64(n))
				}
				w.f64(v.Second)
			}
			if err != nil {
				break
			}
		}
	}
	if err == errOversize {
		w.reset()
		w.iv(fid)
		w.iv(size)
		return c.sendBuffered(msgOversize)
	}
	return c.sendBuffered(msgFeature)
}

// sendBuffered writes a frame without flushing.
func (c *childState) sendBuffered(t byte) error {
	return writeFrame(c.out, t, c.w.b)
}
