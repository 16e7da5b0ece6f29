package chaos

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
)

var (
	flagFailovers = flag.Int("chaos.failovers", -1, "primary failovers during the chaos, on a pg_auto_failover pair (postgistest/hatest) instead of the one PostgreSQL restart: planned ones (pg_autoctl perform failover) and crashes of the primary (SIGKILL of its postmaster and keeper), alternately (default 0; 12 with -chaos.long when pg_autoctl is installed)")
	flagAsync     = flag.Bool("chaos.async", false, "with -chaos.failovers: an asynchronous standby (a failover may lose the last commits: see docs/failover.md); default synchronous")
)

// failoverCount is the run's number of failovers.
func failoverCount() int {
	if *flagFailovers >= 0 {
		return *flagFailovers
	}
	if _, err := exec.LookPath("pg_autoctl"); *flagLong && err == nil {
		return 12
	}
	return 0
}

// failoverDB starts the formation of a run with failovers and returns
// its multi-host URL, which every serve, `geoingest compact` and the
// checks use.
func failoverDB(t *testing.T) (*hatest.Cluster, string) {
	c := hatest.Start(t, hatest.Options{Async: *flagAsync})
	return c, c.URL()
}

// failover is one failover of the run.
type failover struct {
	at, promoted, healthy time.Duration // since the start; to a writable primary; to a standby again
	planned               bool
	from, to              string
}

// failovers fails the primary over cfg.failovers times, evenly from 10 %
// to 90 % of the chaos, alternately a planned failover and a crash of the
// primary's machine (whose node then rejoins as the standby), each with
// jobs in flight (the chaos never stops). A steal never runs across one
// (pgMu).
func (r *run) failovers(ctx context.Context) {
	n := r.cfg.failovers
	for i := 0; i < n; i++ {
		select {
		case <-time.After(time.Until(r.at(0.1 + 0.8*float64(i)/float64(n)))):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			r.pgErr = fmt.Errorf("the chaos ended after %d of %d failovers", i, n)
			return
		}
		f, err := r.failOnce(context.WithoutCancel(ctx), i%2 == 0)
		r.fo = append(r.fo, f)
		if err != nil {
			r.pgErr = fmt.Errorf("failover %d: %w", i+1, err)
			return
		}
	}
}

func (r *run) failOnce(ctx context.Context, planned bool) (failover, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	r.pgMu.Lock()
	f := failover{at: time.Since(r.start), planned: planned}
	t0 := time.Now()
	old, err := r.ha.Primary(ctx)
	if err != nil {
		r.pgMu.Unlock()
		return f, err
	}
	f.from = old.Name
	var to *hatest.Node
	if planned {
		to, err = r.ha.Failover(ctx)
	} else if _, err = r.ha.KillPrimary(ctx); err == nil {
		to, err = r.ha.WaitPrimary(ctx, old)
	}
	f.promoted = time.Since(t0)
	r.pgMu.Unlock()
	if err != nil {
		return f, err
	}
	f.to = to.Name
	if planned {
		err = r.ha.WaitHealthy(ctx)
	} else {
		err = r.ha.Rejoin(ctx, old)
	}
	f.healthy = time.Since(t0)
	return f, err
}

// failoverReport is the report's line on the failovers.
func (r *run) failoverReport(p func(string, ...any)) {
	mode := "synchronous"
	if *flagAsync {
		mode = "asynchronous"
	}
	var planned, crashed int
	var worst, sum time.Duration
	var at []string
	for _, f := range r.fo {
		if f.planned {
			planned++
		} else {
			crashed++
		}
		worst, sum = max(worst, f.promoted), sum+f.promoted
		kind := "crash"
		if f.planned {
			kind = "planned"
		}
		at = append(at, fmt.Sprintf("%s %s %s→%s %.1fs", f.at.Round(time.Second), kind, f.from, f.to, f.promoted.Seconds()))
	}
	mean := time.Duration(0)
	if len(r.fo) > 0 {
		mean = sum / time.Duration(len(r.fo))
	}
	p("postgres:       %d failovers of a pg_auto_failover pair (%s standby): %d planned (pg_autoctl perform failover), %d crashes of the primary (SIGKILL of its postmaster and keeper, then rejoined); a writable primary again after %.1fs on average, %.1fs at worst",
		len(r.fo), mode, planned, crashed, mean.Seconds(), worst.Seconds())
	p("failovers:      %s", strings.Join(at, "; "))
}
