//go:build cgo && !geoingest_nogdal

package ogr

import "sync"

// Spare reading children: a job read with GDAL pays for starting its
// child (fork, exec, the Go runtime's start) and for loading libgdal and
// the seventy-odd libraries it needs, 60–300 ms. A spare is a child
// started ahead of the job that has done all of that and waits for its
// job's msgOpen; the job takes it and pays only for opening its file.
//
// A spare is contained exactly as a child started for the job: it has no
// job until msgOpen, which brings the job's folder, its limits and its
// path; it then applies its sandbox (Landlock names the job's folder,
// and cannot be widened once applied) and its rlimits, opens the file,
// and exits when the job is done. No child reads two jobs.
//
// A spare is started when a reading child ends (so a worker that reads
// no GDAL format never holds one, and a job's child and the spare that
// replaces it do not both read at once), up to the number KeepSpares
// sets; it holds the memory of a loaded libgdal (docs/benchmarks.md) until
// a job takes it, and dies with the parent (Pdeathsig).
var spares struct {
	mu       sync.Mutex
	want     int      // KeepSpares' n
	idle     []*child // started, waiting for a job
	starting int      // being started by refill
}

// KeepSpares keeps up to n reading children started ahead of the jobs
// that will read with GDAL (0, the default, none: each job starts its
// own). Spares are started as reading children end, not at once; a
// smaller n stops the spares over it.
func KeepSpares(n int) {
	spares.mu.Lock()
	spares.want = max(n, 0)
	var over []*child
	for len(spares.idle) > spares.want {
		over = append(over, spares.idle[len(spares.idle)-1])
		spares.idle = spares.idle[:len(spares.idle)-1]
	}
	spares.mu.Unlock()
	for _, ch := range over {
		ch.discard()
	}
}

// takeSpare returns a spare that is still alive, nil if there is none.
func takeSpare() *child {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for len(spares.idle) > 0 {
		ch := spares.idle[0]
		spares.idle = spares.idle[1:]
		select {
		case <-ch.done:
			go ch.discard() // died waiting (killed from outside)
		default:
			ch.spare = true
			return ch
		}
	}
	return nil
}

// refill starts spares, in the background, up to KeepSpares' number.
func refill() {
	spares.mu.Lock()
	n := spares.want - len(spares.idle) - spares.starting
	if n <= 0 {
		spares.mu.Unlock()
		return
	}
	spares.starting += n
	spares.mu.Unlock()
	go func() {
		for range n {
			ch, err := spawn("1")
			spares.mu.Lock()
			spares.starting--
			if err == nil && len(spares.idle) < spares.want {
				spares.idle = append(spares.idle, ch)
				ch = nil
			}
			spares.mu.Unlock()
			if ch != nil {
				ch.discard()
			}
		}
	}()
}

// discard ends a child that has no job: closing its pipes ends its wait
// for msgOpen.
func (ch *child) discard() {
	ch.in.Close()
	select {
	case <-ch.done:
	default:
		ch.kill(nil)
		<-ch.done
	}
	ch.out.Close()
}
