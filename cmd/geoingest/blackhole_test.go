package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blackhole drops every packet to and from TCP port port on the loopback
// (iptables), as a primary whose machine vanished does: no reset, no
// answer, nothing acknowledged. It returns the function that lifts it
// (also called when the test ends). The test is skipped where iptables
// cannot be changed (not root, no iptables).
func blackhole(t *testing.T, port int) (lift func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("blackholing a port needs root (iptables)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("blackholing a port needs iptables")
	}
	p := strconv.Itoa(port)
	rules := [][]string{
		{"INPUT", "-i", "lo", "-p", "tcp", "--dport", p, "-j", "DROP", "-m", "comment", "--comment", "geoingest-test-blackhole"},
		{"INPUT", "-i", "lo", "-p", "tcp", "--sport", p, "-j", "DROP", "-m", "comment", "--comment", "geoingest-test-blackhole"},
	}
	var added [][]string
	lift = func() {
		for _, r := range added {
			if out, err := exec.Command("iptables", append([]string{"-w", "-D"}, r...)...).CombinedOutput(); err != nil {
				t.Errorf("iptables -D %v: %v: %s", r, err, out)
			}
		}
		added = nil
	}
	t.Cleanup(lift)
	for _, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-w", "-I"}, r...)...).CombinedOutput(); err != nil {
			lift()
			t.Skipf("iptables cannot drop the port's packets here: %v: %s", err, out)
		}
		added = append(added, r)
	}
	return lift
}

// TestServeLeavesAVanishedPrimary: the database's machine vanishes
// without a reset while serve runs a job on it (every packet between
// them is dropped). Without TCP timeouts of geoingest's own (pgx sets
// none) the job's statement would wait for the kernel's retransmissions,
// about 15 minutes, or for ever for an answer that never comes. With the
// URL's libpq tcp_user_timeout and keepalives_* (here 3 s and 1 s probes:
// internal/pgdial), the connection is dropped, the job fails as transient
// within seconds, new connections give up after connect_timeout, and
// once a database answers again the job is retried and committed once.
func TestServeLeavesAVanishedPrimary(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "blackhole")
	proxy := newDBProxy(t, c.db)
	port := proxy.ln.Addr().(*net.TCPAddr).Port
	url := proxy.URL + " connect_timeout=2 tcp_user_timeout=3000 keepalives_idle=1 keepalives_interval=1 keepalives_count=2"
	w := c.serve(t, nil, "--database-url", url, "--metrics-addr", "127.0.0.1:0", "--workers", "1",
		"--visibility", "10s", "--backoff", "1s", "--backoff-max", "2s")
	addr := w.httpAddr(t)
	eventually(t, 60*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })

	o := upload(t, c.s3.Client, c.bucket, "parcels/big.geojson", "../../testdata/synthetic/parcels_10k.geojson", 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	eventually(t, 60*time.Second, "the job claimed", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED'`) == 1
	})
	lift := blackhole(t, port)
	at := time.Now()
	transient := func() float64 { return metricOf(t, addr, `geoingest_jobs_failed_total{kind="transient"}`) }
	eventually(t, 60*time.Second, "the job in flight fails as transient", func() bool { return transient() > 0 })
	moved := time.Since(at)
	t.Logf("the worker left the vanished database %.1fs after its packets stopped", moved.Seconds())
	require.Less(t, moved, 45*time.Second, "within a bound of the TCP settings, not the kernel's 15 minutes")
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM jobs`), "the job did not commit")

	// The vanished server is gone for good (its sessions end); a new one
	// answers on the same address.
	proxy.Cut()
	lift()
	proxy.Restore()
	eventually(t, 120*time.Second, "the job committed once", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == 1 && c.sqsEmpty(t)
	})
	require.EqualValues(t, 10000, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.Zero(t, metricOf(t, addr, `geoingest_jobs_failed_total{kind="permanent"}`))
	t.Logf("transient failures: %v", transient())
	out := w.stop(t)
	require.False(t, strings.Contains(out, "panic"), out)
	code, vout, verr := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, vout+verr)
}
