//go:build cgo && !geoingest_nogdal

package ogr

import (
	"os"
	"path/filepath"
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
