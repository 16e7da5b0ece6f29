//go:build cgo && !geoingest_nogdal

package ogr

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchCSV is a small CSV of one polygon: the cost measured is the
// open, not the read.
func benchCSV(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "a.csv")
	if err := os.WriteFile(p, []byte("id,WKT\n1,\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkOpenContained is one job's GDAL read of a one-feature file in
// a contained child process (fork, exec, dlopen of libgdal, sandbox,
// open, read, close): the per-job cost of the containment, against
// BenchmarkOpenInProcess.
func BenchmarkOpenContained(b *testing.B) {
	if err := initGDAL(); err != nil {
		b.Skip(err)
	}
	p := benchCSV(b)
	c := Contain{Read: []string{filepath.Dir(p)}, Deadline: time.Now().Add(time.Hour), Timeout: time.Hour, CPU: time.Minute, Memory: 96 << 20}
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
	for b.Loop() {
		ds, err := Open(p, []string{"CSV"}, nil, c)
		if err != nil {
			b.Fatal(err)
		}
		l := ds.Layer(0)
		if err := l.Start(0, false); err != nil {
			b.Fatal(err)
		}
		for {
			ok, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
		ds.Close()
	}
}

// BenchmarkOpenInProcess is the same read in this process, libgdal
// already loaded: what a job cost before the containment.
func BenchmarkOpenInProcess(b *testing.B) {
	if err := initGDAL(); err != nil {
		b.Skip(err)
	}
	p := benchCSV(b)
	for b.Loop() {
		ds, err := cOpen(p, []string{"CSV"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		l := ds.Layer(0)
		l.Reset()
		for {
			ok, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
		l.Close()
		ds.Close()
	}
}

// BenchmarkOpenContainedSpare is BenchmarkOpenContained with a spare
// child (KeepSpares), started and loaded between jobs as in a worker
// between two jobs (not timed): what a job then pays for its child.
func BenchmarkOpenContainedSpare(b *testing.B) {
	if err := initGDAL(); err != nil {
		b.Skip(err)
	}
	p := benchCSV(b)
	c := Contain{Read: []string{filepath.Dir(p)}, Deadline: time.Now().Add(time.Hour), Timeout: time.Hour, CPU: time.Minute, Memory: 96 << 20}
	KeepSpares(1)
	defer KeepSpares(0)
	refill()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if waitSpare(b, 10*time.Second) == 0 {
			b.Fatal("no spare")
		}
		b.StartTimer()
		ds, err := Open(p, []string{"CSV"}, nil, c)
		if err != nil {
			b.Fatal(err)
		}
		l := ds.Layer(0)
		if err := l.Start(0, false); err != nil {
			b.Fatal(err)
		}
		for {
			ok, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
		ds.Close()
	}
}

// benchCSVMany is a CSV of n parcels: a polygon of 9 vertices and four
// attributes each.
func benchCSVMany(b *testing.B, n int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "many.csv")
	var sb strings.Builder
	sb.WriteString("id,name,area,owner,WKT\n")
	for i := range n {
		x, y := float64(i%1000)*10, float64(i/1000)*10
		fmt.Fprintf(&sb, "%d,parcel %d,%.2f,owner %d,\"POLYGON((%g %g,%g %g,%g %g,%g %g,%g %g,%g %g,%g %g,%g %g,%g %g))\"\n",
			i, i, 100.5+float64(i), i%97, x, y, x+5, y, x+9, y, x+9, y+5, x+9, y+9, x+5, y+9, x, y+9, x, y+5, x, y)
	}
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkReadContained reads 20,000 features in a contained child
// (spare-less: its start included), each feature's geometry and fields
// framed over the pipe and decoded: against BenchmarkReadInProcess, the
// containment's cost per feature. b.N is features.
func BenchmarkReadContained(b *testing.B) {
	if err := initGDAL(); err != nil {
		b.Skip(err)
	}
	const n = 20000
	p := benchCSVMany(b, n)
	c := Contain{Read: []string{filepath.Dir(p)}, Deadline: time.Now().Add(time.Hour), Timeout: time.Hour}
	cpu0 := cpuTime()
	for b.Loop() {
		ds, err := Open(p, []string{"CSV"}, nil, c)
		if err != nil {
			b.Fatal(err)
		}
		l := ds.Layer(0)
		if err := l.Start(0, false); err != nil {
			b.Fatal(err)
		}
		for {
			ok, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			wkb, _, _ := l.WKB()
			_ = wkb
			for i := range l.Fields {
				_ = l.Field(i)
			}
		}
		ds.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/feature")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/feature")
}

// BenchmarkReadInProcess is BenchmarkReadContained's read in this
// process, as before the containment.
func BenchmarkReadInProcess(b *testing.B) {
	if err := initGDAL(); err != nil {
		b.Skip(err)
	}
	const n = 20000
	p := benchCSVMany(b, n)
	cpu0 := cpuTime()
	for b.Loop() {
		ds, err := cOpen(p, []string{"CSV"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		l := ds.Layer(0)
		l.Reset()
		for {
			ok, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			wkb, _, _ := l.WKB(0, false)
			_ = wkb
			l.ReadFields()
			for i := range l.Fields {
				_ = l.Field(i)
			}
		}
		l.Close()
		ds.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/feature")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/feature")
}

// cpuTime is the CPU time of this process and of its children that
// ended (the reading children, reaped at Close).
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	t := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return t(self) + t(kids)
}
