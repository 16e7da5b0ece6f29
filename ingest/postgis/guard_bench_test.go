package postgis

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// BenchmarkGuardCost measures what the guards add to the write of a
// large version (GEOINGEST_BENCH_N parcels, default 100000), against the
// write of the same version (Service.Run, a partition of its own). Each
// part is measured directly, by the CPU it takes, so that a loaded
// machine does not blur it:
//   - keys_s: the scan of every feature's property keys (ingest.KeysReader,
//     on the goroutine that reads the file, ahead of the prepare workers).
//     The file is read once, its features' properties gathered in chunks,
//     and each chunk replayed through a KeysReader alone, timed by the
//     thread's CPU clock; keys_ns is its cost per feature.
//   - bbox_s: the extent as the prepare workers measure it (the bounding
//     box of every feature's coordinates), timed the same way.
//   - gate_s: the guards' work in the gate (Store.guard: the stats
//     recorded, the current generation's read, the comparison), wall
//     time, as it runs alone in the write gate's transaction.
//
// guard_pct is their sum as a percentage of the write's wall time
// (write_s), as if nothing overlapped them; guard_cpu_pct as a
// percentage of the write's CPU (write_cpu_s: this process's user and
// system time, client_cpu_s, plus that of the database's backends,
// server_cpu_s, read from /proc: the benchmark's cluster is local). For
// comparison, server_extent_s is the aggregate over the version's rows
// that the gate ran before the workers measured the extent.
//
// With GEOINGEST_BENCH_REPLACE set, every version replaces the one before
// it (one source: a new version of the same features, a space more at
// the file's end), so that the guards compare it with a current
// generation; its write is then a diff write of unchanged rows (the
// cheapest write a version of that size has), and the first version's
// load is not counted.
//
//	go test ./ingest/postgis -run '^$' -bench GuardCost -benchtime 1x
func BenchmarkGuardCost(b *testing.B) {
	n := 100000
	if s := os.Getenv("GEOINGEST_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "parcels.geojson")
	writeBenchParcels(b, path, n, false)
	svc := setupBench(b)
	store := svc.Store.(*Store)
	store.OwnPartitionBytes = 1
	ctx := context.Background()
	var write, clientCPU, serverCPU, extent, keys, gate, bbox time.Duration
	replace := os.Getenv("GEOINGEST_BENCH_REPLACE") != ""
	if replace {
		p := ingest.DefaultParams("parcels")
		src, f, err := localfs.Files{}.Source(path)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, p, f)
		if err != nil {
			b.Fatal(err)
		}
		if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) {
			b.Fatalf("%s: %v", r.Outcome, r.Err)
		}
	}
	for i := 0; i < b.N; i++ {
		p := ingest.DefaultParams("parcels")
		p.PipelineVersion = "bench-" + strconv.Itoa(i)
		if replace {
			p.PipelineVersion = ingest.DefaultParams("parcels").PipelineVersion
			fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.WriteString(" "); err != nil {
				b.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				b.Fatal(err)
			}
		}
		src, f, err := localfs.Files{}.Source(path)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, p, f)
		if err != nil {
			b.Fatal(err)
		}
		g0 := store.guardNanos.Load()
		s0 := backendsCPU(b, store)
		c0 := processCPU(b)
		t0 := time.Now()
		if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) || r.Outcome != ingest.Written {
			b.Fatalf("%s: %v", r.Outcome, r.Err)
		}
		write += time.Since(t0)
		clientCPU += processCPU(b) - c0
		serverCPU += backendsCPU(b, store) - s0
		gate += time.Duration(store.guardNanos.Load() - g0)

		ref, err := store.q.JobRefOf(ctx, job.ID)
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if _, err := store.q.JobExtent(ctx, db.JobExtentParams{TargetTable: "parcels", JobRef: ref}); err != nil {
			b.Fatal(err)
		}
		extent += time.Since(t0)
		k, x := scanTimes(b, path, n)
		keys += k
		bbox += x
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(write), "write_s")
	b.ReportMetric(per(clientCPU+serverCPU), "write_cpu_s")
	b.ReportMetric(per(clientCPU), "client_cpu_s")
	b.ReportMetric(per(serverCPU), "server_cpu_s")
	b.ReportMetric(per(extent), "server_extent_s")
	b.ReportMetric(per(gate), "gate_s")
	b.ReportMetric(per(bbox), "bbox_s")
	b.ReportMetric(per(keys), "keys_s")
	b.ReportMetric(float64(keys.Nanoseconds())/float64(b.N)/float64(n), "keys_ns")
	b.ReportMetric(100*(gate+bbox+keys).Seconds()/write.Seconds(), "guard_pct")
	b.ReportMetric(100*(gate+bbox+keys).Seconds()/(clientCPU+serverCPU).Seconds(), "guard_cpu_pct")
}

// scanTimes returns the CPU time that the keys scan (ingest.KeysReader)
// and the bounding box of the coordinates (prepare's bbox.add) take over
// the features of the file at path (n of them), each alone: the file is
// read once, in chunks of features whose properties and coordinates are
// copied aside, and each chunk is then replayed through a KeysReader and
// boxed, timed by the thread's CPU clock (threadCPU), neither the parse
// nor another process counted.
func scanTimes(b *testing.B, path string, n int) (keys, box time.Duration) {
	r, err := geomio.Open(path, geomio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	lr := ingest.LogLayers(r)
	rp := &replayReader{LayerReader: lr}
	kr := ingest.NewKeysReader(rp)
	bb := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	var coords []float64
	seen := 0
	flush := func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rp.i = 0
		t0 := threadCPU(b)
		for kr.Next() {
		}
		t1 := threadCPU(b)
		for i := 0; i+1 < len(coords); i += 2 {
			x, y := coords[i], coords[i+1]
			bb[0], bb[1], bb[2], bb[3] = min(bb[0], x), min(bb[1], y), max(bb[2], x), max(bb[3], y)
		}
		t2 := threadCPU(b)
		keys += t1 - t0
		box += t2 - t1
		seen += len(rp.ends)
		rp.props, rp.ends, coords = rp.props[:0], rp.ends[:0], coords[:0]
	}
	for lr.Next() {
		f := lr.Feature()
		rp.props = append(rp.props, f.Properties...)
		rp.ends = append(rp.ends, len(rp.props))
		if f.Geom != nil {
			coords = append(coords, f.Geom.FlatCoords()...)
		}
		if len(rp.ends) == 4096 {
			flush()
		}
	}
	if err := lr.Err(); err != nil {
		b.Fatal(err)
	}
	flush()
	if seen != n || len(kr.Keys()) == 0 || bb[0] > bb[2] {
		b.Fatalf("scanned %d features of %d, %d keys, box %v", seen, n, len(kr.Keys()), bb)
	}
	return keys, box
}

// replayReader yields the features whose properties it holds (props, cut
// at ends), from i on, in the place of its LayerReader's.
type replayReader struct {
	ingest.LayerReader
	props []byte
	ends  []int
	i     int
	f     geomio.Feature
}

func (r *replayReader) Next() bool {
	if r.i >= len(r.ends) {
		return false
	}
	start := 0
	if r.i > 0 {
		start = r.ends[r.i-1]
	}
	r.f.Properties = r.props[start:r.ends[r.i]]
	r.i++
	return true
}

func (r *replayReader) Feature() geomio.Feature { return r.f }
func (r *replayReader) Err() error              { return nil }

// threadCPU is the CPU time of the calling thread (the goroutine must be
// locked to it).
func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// processCPU is the user and system CPU time of this process.
func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendsCPU is the user and system CPU time of the backends connected
// to the store's database now, read from /proc (the benchmark's cluster
// runs on this machine). A backend that ends between two calls is not
// counted: the pool's connections stay open through a write.
func backendsCPU(b *testing.B, s *Store) time.Duration {
	rows, err := s.pool.Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// The fields after the command's closing parenthesis: state is
		// the first, utime and stime the 12th and 13th.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
