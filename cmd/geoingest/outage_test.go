package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// dbProxy is a TCP proxy in front of a test database that can make the
// database unreachable: Cut closes every proxied connection (the server
// aborts their transactions, the clients see their connections die) and
// refuses new ones until Restore, which is what a worker sees when
// PostgreSQL restarts or its network goes away. It works whatever server
// pgtest gave (private cluster, container or TEST_DATABASE_URL).
type dbProxy struct {
	// URL is the database's connection string through the proxy.
	URL string

	ln      net.Listener
	network string // of the server
	addr    string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newDBProxy(t *testing.T, db string) *dbProxy {
	t.Helper()
	cfg, err := pgx.ParseConfig(db)
	require.NoError(t, err)
	p := &dbProxy{network: "tcp", addr: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), conns: map[net.Conn]bool{}}
	if filepath.IsAbs(cfg.Host) {
		p.network, p.addr = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	p.ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := p.ln.Addr().(*net.TCPAddr).Port
	p.URL = fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable",
		port, quote(cfg.User), quote(cfg.Password), quote(cfg.Database))
	go p.serve()
	t.Cleanup(func() { p.ln.Close(); p.Cut() })
	return p
}

func quote(s string) string { return "'" + s + "'" }

func (p *dbProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close() // as if nothing listened: the client's startup fails
			continue
		}
		s, err := net.Dial(p.network, p.addr)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *dbProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut makes the database unreachable until Restore.
func (p *dbProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore makes the database reachable again.
func (p *dbProxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// readyz returns serve's /readyz status code (0 when it does not answer)
// and body.
func readyzBody(addr string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func readyz(addr string) int {
	code, _ := readyzBody(addr)
	return code
}

// outageDuration is how long TestServeDatabaseOutage keeps the database
// away: GEOINGEST_TEST_OUTAGE (a Go duration, e.g. 30s), default 6s.
func outageDuration(t *testing.T) time.Duration {
	if v := os.Getenv("GEOINGEST_TEST_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		return d
	}
	return 6 * time.Second
}

// TestServeDatabaseOutage: the database becomes unreachable while a serve
// subprocess runs jobs, for GEOINGEST_TEST_OUTAGE (default 6s; the issue
// asks for 30s: GEOINGEST_TEST_OUTAGE=30s). Jobs in flight fail as
// transient (never permanent), their claims are released or expire,
// /readyz reports the outage while it lasts, the pool reconnects and the
// messages come back: every job ends committed exactly once and nothing is
// dead-lettered.
func TestServeDatabaseOutage(t *testing.T) {
	t.Parallel()
	outage := outageDuration(t)
	c := newCrashEnv(t, "outage")
	proxy := newDBProxy(t, c.db)
	big := "../../testdata/synthetic/parcels_10k.geojson"
	var objs []object
	for i := 0; i < 3; i++ {
		objs = append(objs, upload(t, c.s3.Client, c.bucket, fmt.Sprintf("parcels/big%d.geojson", i), big, i+1))
	}
	for i := 0; i < 3; i++ {
		objs = append(objs, upload(t, c.s3.Client, c.bucket, fmt.Sprintf("parcels/small%d.geojson", i), squaresFile(t, 10+i), 10+i))
	}
	w := c.serve(t, nil, "--database-url", proxy.URL, "--metrics-addr", "127.0.0.1:0", "--workers", "3",
		"--lease", "5s", "--visibility", "3s", "--backoff", "1s", "--backoff-max", "4s")
	addr := w.httpAddr(t)
	eventually(t, 60*time.Second, "serve ready", func() bool { return readyz(addr) == http.StatusOK })
	for _, o := range objs[:3] {
		sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	}
	eventually(t, 60*time.Second, "jobs in flight", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`) > 0
	})
	inFlight := queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`)
	committedBefore := queryInt(t, c.db, `SELECT count(*) FROM jobs`)

	proxy.Cut()
	cutAt := time.Now()
	t.Logf("database cut with %d jobs in flight and %d committed; outage %s", inFlight, committedBefore, outage)
	for _, o := range objs[3:] { // deliveries during the outage fail at the claim gate
		sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	}
	eventually(t, outage, "/readyz to report the outage", func() bool { return readyz(addr) == http.StatusServiceUnavailable })
	notReadyAfter := time.Since(cutAt)
	time.Sleep(time.Until(cutAt.Add(outage)))
	code, body := readyzBody(addr)
	require.Equal(t, http.StatusServiceUnavailable, code, "still not ready at the end of the outage")
	require.Contains(t, body, "database unavailable")
	proxy.Restore()
	restoredAt := time.Now()

	eventually(t, 20*time.Second, "/readyz after the outage", func() bool { return readyz(addr) == http.StatusOK })
	eventually(t, 120*time.Second, "every job committed and the queue drained", func() bool {
		return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) == int64(len(objs)) && c.sqsEmpty(t)
	})
	t.Logf("/readyz said 503 %.1fs after the cut; everything committed %.1fs after the database came back",
		notReadyAfter.Seconds(), time.Since(restoredAt).Seconds())
	transient := metricOf(t, addr, `geoingest_jobs_failed_total{kind="transient"}`)
	require.Zero(t, metricOf(t, addr, `geoingest_jobs_failed_total{kind="permanent"}`), "a database outage is never a permanent failure")
	require.Zero(t, metricOf(t, addr, "geoingest_messages_dead_lettered_total"))
	require.Positive(t, transient, "jobs in flight and deliveries during the outage failed as transient")
	t.Logf("transient failures %v, held claims %v", transient, metricOf(t, addr, `geoingest_claims_total{result="held"}`))
	out := w.stop(t)
	t.Logf("%s", out)

	require.EqualValues(t, len(objs), queryInt(t, c.db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, len(objs), queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'COMMITTED'`))
	require.EqualValues(t, 3*10000+10+11+12, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM (SELECT 1 FROM parcels GROUP BY job_ref, feature_index HAVING count(*) > 1) d`))
	code, vout, verr := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, vout+verr)
	require.Zero(t, sqsDepth(t, c.sqs.Client, c.dlqURL), "nothing dead-lettered")
}

// metricOf reads one sample from serve's /metrics at addr.
func metricOf(t *testing.T, addr, sample string) float64 {
	t.Helper()
	return (&serving{metrics: "http://" + addr + "/metrics"}).metric(t, sample)
}
