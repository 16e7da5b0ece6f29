// Package hatest gives integration tests a highly available PostGIS on
// this machine, with geoingest's schema: a pg_auto_failover formation of a
// monitor, a primary and a standby (synchronous by default), and
// optionally a read replica (an asynchronous standby that is never
// promoted), each in its own data directory and listening on its own port
// on 127.0.0.1 only. It can fail the primary over the way production
// does, so that a test can prove what geoingest does across a promotion:
//
//	c := hatest.Start(t, hatest.Options{})
//	url := c.URL() // host=127.0.0.1,127.0.0.1 port=p1,p2 target_session_attrs=read-write
//	... start writers on url ...
//	old, _ := c.KillPrimary(ctx)       // SIGKILL of the primary's postmaster
//	_, _ = c.WaitPrimary(ctx, old)     // the standby is promoted
//	_ = c.Failover(ctx)                // a planned switchover
//
// It needs Debian's postgresql-15-auto-failover and pg-auto-failover-cli
// (pg_autoctl) besides PostgreSQL and PostGIS; Start skips the test with
// what to install when pg_autoctl is missing. When run as root, every
// program runs as the "postgres" OS user, as pgcluster does.
package hatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/geoingest/geoingest/internal/testsupport/reaper"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// InstallHint says what to install when pg_auto_failover is missing.
const InstallHint = "install pg_auto_failover, e.g. on Debian: apt-get install postgresql-15-auto-failover pg-auto-failover-cli"

// Database is the name of geoingest's database on the formation.
const Database = "geoingest"

// Options configure Start.
type Options struct {
	// Async makes the standby asynchronous (neither candidate is in the
	// replication quorum, so it stays so across failovers): a commit is
	// acknowledged before the standby has it, so a failover can lose the
	// last commits. Default: synchronous.
	Async bool
	// ReadReplica adds a third node, an asynchronous standby with
	// candidate priority 0 (never promoted), for readers (ReadURL).
	ReadReplica bool
	// Settings are extra postgresql.conf settings for every data node
	// (name -> value).
	Settings map[string]string
}

// Node is one PostgreSQL server of the formation.
type Node struct {
	Name   string
	Port   int
	PGData string
	keeper *exec.Cmd
	done   chan struct{}
}

// Cluster is a running formation.
type Cluster struct {
	Dir     string
	Monitor *Node
	// Nodes are the data nodes: the two candidates first (node1 starts
	// as the primary), then the read replica if any.
	Nodes []*Node

	bin  string
	cred *syscall.Credential
	env  []string
	log  func(string, ...any)
	// hurried is when hurryBaseBackup last asked for a checkpoint.
	hurried time.Time
	// db is the database the URLs name (Database when "").
	db string
	// unwatch ends the reaper's watch of Dir (Stop stopped everything).
	unwatch func()
}

// startTimeout bounds a formation's start: a monitor, a primary and a
// standby's base backup. A loaded CI machine (load 30 on 2 cores) once
// took over 5 minutes to bring the standby to secondary.
const startTimeout = 12 * time.Minute

// Start starts a formation for the test and stops it (removing its
// directory) when the test ends. It skips the test when pg_autoctl is
// not installed, and fails it when the formation does not come up.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		t.Skip("hatest: pg_autoctl not found: " + InstallHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := StartCluster(ctx, o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// StartCluster starts a formation; the caller must Stop it. logf (may be
// nil) receives a line per step.
func StartCluster(ctx context.Context, o Options, logf func(string, ...any)) (*Cluster, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bin, err := pgcluster.BinDir()
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		return nil, fmt.Errorf("hatest: pg_autoctl not found: %s", InstallHint)
	}
	dir, err := os.MkdirTemp("", "geoingest-hatest-")
	if err != nil {
		return nil, err
	}
	// A test process that dies without Stop (a -timeout panic, a
	// SIGKILL) leaves no keeper or server running.
	c := &Cluster{Dir: dir, bin: bin, log: logf, unwatch: reaper.Watch(dir)}
	if err := c.setOwner(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// pg_autoctl reads PG* variables and searches PATH for pg_ctl: give
	// it none of the caller's, and the server's programs first.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env,
		"PATH="+bin+":/usr/local/bin:/usr/bin:/bin",
		"HOME="+dir,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"),
	)
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	c.Monitor = &Node{Name: "monitor", Port: ports[0], PGData: filepath.Join(dir, "monitor")}
	pgctl := filepath.Join(bin, "pg_ctl")
	// The monitor is created, told to listen on the loopback only (its
	// create command has no --listen), then run.
	if out, err := c.command(ctx, "create", "monitor", "--pgctl", pgctl, "--pgdata", c.Monitor.PGData, "--pgport", strconv.Itoa(c.Monitor.Port),
		"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"); err != nil {
		return nil, fmt.Errorf("hatest: create monitor: %w: %s", err, out)
	}
	if out, err := c.command(ctx, "config", "set", "--pgdata", c.Monitor.PGData, "postgresql.listen_addresses", "127.0.0.1"); err != nil {
		return nil, fmt.Errorf("hatest: monitor listen_addresses: %w: %s", err, out)
	}
	if err := c.run(c.Monitor, "run", "--pgdata", c.Monitor.PGData); err != nil {
		return nil, err
	}
	if err := c.waitConnect(ctx, c.Monitor, c.adminURL(c.Monitor, "pg_auto_failover")); err != nil {
		return nil, fmt.Errorf("hatest: monitor: %w (log: %s)", err, c.tail(c.Monitor))
	}
	if err := c.fastDetection(ctx); err != nil {
		return nil, err
	}
	logf("hatest: monitor on 127.0.0.1:%d", c.Monitor.Port)
	n := 2
	if o.ReadReplica {
		n = 3
	}
	for i := 0; i < n; i++ {
		node := &Node{Name: fmt.Sprintf("node%d", i+1), Port: ports[i+1], PGData: filepath.Join(dir, fmt.Sprintf("node%d", i+1))}
		args := []string{"create", "postgres", "--pgctl", pgctl, "--pgdata", node.PGData, "--pgport", strconv.Itoa(node.Port),
			"--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--name", node.Name, "--dbname", Database,
			"--monitor", c.monitorURI(), "--auth", "trust", "--no-ssl", "--pg-hba-lan"}
		switch {
		case i == 2: // the read replica: asynchronous, never promoted
			args = append(args, "--candidate-priority", "0", "--replication-quorum", "false")
		case o.Async:
			// Both candidates, so that the standby is asynchronous
			// whichever of them is the primary after a failover (the
			// setting is the node's, not the formation's).
			args = append(args, "--replication-quorum", "false")
		}
		if err := c.run(node, append(args, "--run")...); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
		want := "primary"
		if i == 0 {
			want = "single"
		}
		if err := c.waitStates(ctx, want); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := c.prepare(ctx, node, o.Settings); err != nil {
				return nil, err
			}
		}
		logf("hatest: %s on 127.0.0.1:%d", node.Name, node.Port)
	}
	ok = true
	return c, nil
}

// prepare installs PostGIS and geoingest's schema in the primary's
// database (the standbys replicate them) and applies settings.
func (c *Cluster) prepare(ctx context.Context, primary *Node, settings map[string]string) error {
	conn, err := pgx.Connect(ctx, c.adminURL(primary, Database))
	if err != nil {
		return fmt.Errorf("hatest: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis"); err != nil {
		return fmt.Errorf("hatest: postgis: %w", err)
	}
	for k, v := range settings {
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", pgx.Identifier{k}.Sanitize(), quoteLiteral(v))); err != nil {
			return fmt.Errorf("hatest: setting %s: %w", k, err)
		}
	}
	if len(settings) > 0 {
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return err
		}
	}
	if _, err := migrations.Up(c.adminURL(primary, Database)); err != nil {
		return fmt.Errorf("hatest: migrations: %w", err)
	}
	return nil
}

// fastDetection makes the monitor find a dead primary in seconds rather
// than the production defaults' 20-30 s (health checks every second, one
// retry, unhealthy after 5 s without a report), so that a test's failover
// after a crash takes about 5-10 s.
func (c *Cluster) fastDetection(ctx context.Context) error {
	conn, err := c.monitor(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, set := range []string{
		"ALTER SYSTEM SET pgautofailover.health_check_period = 1000",
		"ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000",
		"ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1",
		"ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500",
		"ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 5000",
		"ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 5000",
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, set); err != nil {
			return fmt.Errorf("hatest: monitor settings: %w", err)
		}
	}
	return nil
}

// MonitorURL is a connection string to the monitor's pg_auto_failover
// database (its settings, pgautofailover.*, are set there with ALTER
// SYSTEM).
func (c *Cluster) MonitorURL() string { return c.adminURL(c.Monitor, "pg_auto_failover") }

// monitor connects to the monitor's pg_auto_failover database; the caller
// closes the connection.
func (c *Cluster) monitor(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, c.MonitorURL())
	if err != nil {
		return nil, fmt.Errorf("hatest: the monitor: %w", err)
	}
	return conn, nil
}

// URL is the multi-host connection string of geoingest's database on the
// two candidates, with target_session_attrs=read-write: libpq and pgx try
// the hosts in turn and keep the one that accepts writes, so a client
// follows the primary across failovers by reconnecting.
func (c *Cluster) URL() string {
	hosts := []string{"127.0.0.1", "127.0.0.1"}
	ports := []string{strconv.Itoa(c.Nodes[0].Port), strconv.Itoa(c.Nodes[1].Port)}
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable target_session_attrs=read-write connect_timeout=5",
		strings.Join(hosts, ","), strings.Join(ports, ","), c.user(), c.database())
}

// database is the name of the database the URLs name.
func (c *Cluster) database() string {
	if c.db != "" {
		return c.db
	}
	return Database
}

// ReadURL is a connection string to the read replica (Options.ReadReplica),
// else to the node that is the standby now (the second, unless a failover
// made it the primary).
func (c *Cluster) ReadURL() string {
	n := c.Nodes[len(c.Nodes)-1]
	if len(c.Nodes) == 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if p, err := c.Primary(ctx); err == nil && p == n {
			n = c.Nodes[0]
		}
	}
	return c.NodeURL(n)
}

// NodeURL is a connection string to geoingest's database on one node.
func (c *Cluster) NodeURL(n *Node) string { return c.adminURL(n, c.database()) }

func (c *Cluster) adminURL(n *Node, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable connect_timeout=5", n.Port, c.user(), db)
}

func (c *Cluster) user() string {
	if c.cred != nil {
		return "postgres"
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "postgres"
}

func (c *Cluster) monitorURI() string {
	return fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", c.Monitor.Port)
}

// State is a node's state as the monitor sees it.
type State struct {
	Name     string
	Port     int
	Reported string // the state the node's keeper reported
	Goal     string // the state the monitor assigned it
}

// States asks the monitor for every data node's state.
func (c *Cluster) States(ctx context.Context) ([]State, error) {
	conn, err := c.monitor(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []State
	for rows.Next() {
		var s State
		if err := rows.Scan(&s.Name, &s.Port, &s.Reported, &s.Goal); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Events is the monitor's event log since a time, one line an event
// (time, node, reported and goal states, replication state, LSN, what
// happened): what a failed test shows of the formation's history, e.g.
// whether the primary was in wait_primary (commits not waiting for the
// standby) when it was killed.
func (c *Cluster) Events(ctx context.Context, since time.Time) (string, error) {
	conn, err := c.monitor(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT to_char(eventtime, 'HH24:MI:SS.MS') || ' ' || nodename || ' ' || reportedstate::text || ' -> ' || goalstate::text
			|| ' rep=' || coalesce(reportedrepstate::text, '') || ' lsn=' || coalesce(reportedlsn::text, '') || ': ' || coalesce(description, '')
		FROM pgautofailover.event WHERE eventtime >= $1 ORDER BY eventid`, since)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// waitStates waits until the monitor reports the formation settled: every
// node's reported state is its goal, the first one is want ("single" or
// "primary") and the others "secondary".
func (c *Cluster) waitStates(ctx context.Context, want string) error {
	var last []State
	for {
		st, err := c.States(ctx)
		if err == nil {
			last = st
			if settled(st, want) {
				return nil
			}
			c.hurryBaseBackup(ctx, st)
		}
		for _, n := range c.Nodes {
			select {
			case <-n.done:
				return fmt.Errorf("hatest: %s's pg_autoctl exited: %s", n.Name, c.tail(n))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hatest: formation did not reach %s: %v (%v)", want, last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// hurryBaseBackup asks the primary for an immediate checkpoint while a
// standby is being built: pg_basebackup (which pg_autoctl runs without
// --checkpoint=fast) otherwise waits for a spread checkpoint, minutes.
func (c *Cluster) hurryBaseBackup(ctx context.Context, st []State) {
	var primary *State
	building := false
	for i, s := range st {
		switch s.Reported {
		case "single", "wait_primary", "primary":
			primary = &st[i]
		case "wait_standby", "catchingup":
			building = true
		}
	}
	if primary == nil || !building || time.Since(c.hurried) < 2*time.Second {
		return
	}
	c.hurried = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable", primary.Port, c.user()))
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, _ = conn.Exec(cctx, "CHECKPOINT")
}

func settled(st []State, want string) bool {
	prim := 0
	for _, s := range st {
		if s.Reported != s.Goal {
			return false
		}
		switch s.Reported {
		case want:
			prim++
		case "secondary":
		default:
			return false
		}
	}
	return prim == 1
}

// WaitHealthy waits until the formation has one primary and every other
// node is a secondary again (after a failover, the old primary rejoins as
// a standby).
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	want := "primary"
	if len(c.Nodes) == 1 {
		want = "single"
	}
	return c.waitStates(ctx, want)
}

// Primary returns the node that accepts writes now (asked of each node:
// pg_is_in_recovery() false), or an error when none does.
func (c *Cluster) Primary(ctx context.Context) (*Node, error) {
	for _, n := range c.Nodes {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.adminURL(n, Database))
		if err != nil {
			cancel()
			continue
		}
		var standby bool
		var readOnly string
		err = conn.QueryRow(cctx, "SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only')").Scan(&standby, &readOnly)
		conn.Close(cctx)
		cancel()
		if err == nil && !standby && readOnly == "off" {
			return n, nil
		}
	}
	return nil, errors.New("hatest: no node accepts writes")
}

// WaitPrimary waits until a node other than old (nil: any) accepts writes
// and returns it.
func (c *Cluster) WaitPrimary(ctx context.Context, old *Node) (*Node, error) {
	for {
		n, err := c.Primary(ctx)
		if err == nil && n != old {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("hatest: no new primary: %v", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Failover performs a planned switchover (the primary is demoted, the
// standby promoted, the old primary rejoins as a standby) and returns the
// new primary once it accepts writes. It waits for the formation to be
// healthy first (a switchover needs a secondary), then asks the monitor
// directly (pgautofailover.perform_failover) rather than through
// `pg_autoctl perform failover --wait`: that command waits for the whole
// formation to settle, the old primary's rewind and catch-up included,
// and on a loaded machine that outlasted its wait (141 s, exit 12) after
// the new primary had long accepted writes. A caller that needs the old
// primary back as a standby calls WaitHealthy.
func (c *Cluster) Failover(ctx context.Context) (*Node, error) {
	if err := c.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	old, err := c.Primary(ctx)
	if err != nil {
		return nil, err
	}
	// The monitor's function takes the formation's locks while the
	// keepers report their state: it can lose a deadlock to them (SQLSTATE
	// 40P01, seen in CI), and is then asked again, as a client retries a
	// transaction a deadlock aborted.
	for attempt := 1; ; attempt++ {
		conn, err := c.monitor(ctx)
		if err != nil {
			return nil, err
		}
		_, err = conn.Exec(ctx, "SELECT pgautofailover.perform_failover('default', 0)")
		conn.Close(context.WithoutCancel(ctx))
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") && attempt < 5 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("hatest: perform failover: %w", err)
		}
		return c.WaitPrimary(ctx, old)
	}
}

// KillPrimary crashes the primary's machine: SIGKILL of its postmaster
// and of its keeper (pg_autoctl, which would otherwise restart it in
// place). The monitor then promotes the standby (WaitPrimary); Rejoin
// brings the killed node back as a standby. It returns the node killed.
func (c *Cluster) KillPrimary(ctx context.Context) (*Node, error) {
	n, err := c.Primary(ctx)
	if err != nil {
		return nil, err
	}
	if n.keeper != nil && n.keeper.Process != nil {
		_ = syscall.Kill(-n.keeper.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
	return n, c.KillPostmaster(n)
}

// Rejoin restarts n's keeper after KillPrimary (`pg_autoctl run`): it
// rewinds the old primary and follows the new one as a standby. It
// returns once the formation is healthy again.
func (c *Cluster) Rejoin(ctx context.Context, n *Node) error {
	select {
	case <-n.done:
	default:
		return fmt.Errorf("hatest: %s's keeper is running", n.Name)
	}
	if err := c.run(n, "run", "--pgdata", n.PGData); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}

// KillPostmaster sends SIGKILL to n's postmaster only: its keeper
// restarts it in place (crash recovery), with no failover unless that
// takes longer than the monitor's unhealthy timeout.
func (c *Cluster) KillPostmaster(n *Node) error {
	b, err := os.ReadFile(filepath.Join(n.PGData, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("hatest: %s: %w", n.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("hatest: %s: postmaster.pid: %w", n.Name, err)
	}
	c.log("hatest: SIGKILL %s's postmaster (pid %d)", n.Name, pid)
	return syscall.Kill(pid, syscall.SIGKILL)
}

// Stop stops every keeper (which stops its PostgreSQL) and removes the
// directory.
func (c *Cluster) Stop() {
	nodes := append([]*Node{}, c.Nodes...)
	for i := len(nodes) - 1; i >= 0; i-- {
		c.stopNode(nodes[i])
	}
	if c.Monitor != nil {
		c.stopNode(c.Monitor)
	}
	os.RemoveAll(c.Dir)
	if c.unwatch != nil {
		c.unwatch()
	}
}

func (c *Cluster) stopNode(n *Node) {
	if n.keeper == nil || n.keeper.Process == nil {
		return
	}
	_ = n.keeper.Process.Signal(syscall.SIGTERM) // a fast shutdown of its postgres too
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = n.keeper.Process.Kill()
		<-n.done
	}
	// Whatever postmaster survived its keeper.
	if b, err := os.ReadFile(filepath.Join(n.PGData, "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && pid > 0 {
			if syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGQUIT)
			}
		}
	}
}

// run starts `pg_autoctl args...` as n's keeper, logging to n's log file.
func (c *Cluster) run(n *Node, args ...string) error {
	logf, err := os.OpenFile(filepath.Join(c.Dir, n.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("pg_autoctl", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.Dir, c.env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("hatest: pg_autoctl %s: %w", args[0], err)
	}
	n.keeper, n.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(n.done) }()
	return nil
}

// command runs a pg_autoctl command to its end and returns its output.
func (c *Cluster) command(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "pg_autoctl", args...)
	var out bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.Dir, c.env, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	err := cmd.Run()
	return out.String(), err
}

// tail is the end of n's log, for errors.
func (c *Cluster) tail(n *Node) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, n.Name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Log returns n's keeper log.
func (c *Cluster) Log(n *Node) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, n.Name+".log"))
	return string(b)
}

// setOwner makes the directory the postgres OS user's when run as root.
func (c *Cluster) setOwner() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("hatest: running as root needs a postgres OS user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		return err
	}
	return os.Chown(c.Dir, uid, gid)
}

// freePorts returns n TCP ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitConnect waits until url answers, or n's keeper exits.
func (c *Cluster) waitConnect(ctx context.Context, n *Node, url string) error {
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-n.done:
			return errors.New("its pg_autoctl exited")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
