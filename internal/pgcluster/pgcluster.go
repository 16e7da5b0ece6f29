// Package pgcluster starts and stops a private PostgreSQL + PostGIS cluster
// in a directory of its own, using the machine's PostgreSQL binaries, the
// way an embedded database works. It serves geoingest's embedded default
// (no DATABASE_URL) and its tests.
//
// The cluster listens only on a Unix socket inside its data directory, so
// several clusters never compete for a TCP port. When run as root, the
// PostgreSQL programs run as the "postgres" OS user (PostgreSQL refuses to
// run as root) and the data directory is owned by that user.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// InstallHint says what to install when PostgreSQL or PostGIS is missing.
const InstallHint = "install PostgreSQL and PostGIS, e.g. on Debian/Ubuntu: apt-get install postgresql-15-postgis-3 " +
	"(or point geoingest at a database with --database-url / DATABASE_URL)"

// Cluster is a private PostgreSQL cluster.
type Cluster struct {
	// Dir is the data directory; the Unix socket lives in it too.
	Dir    string
	binDir string
	cred   *syscall.Credential
}

// BinDir finds the PostgreSQL server programs: the directory of initdb on
// PATH, else the newest /usr/lib/postgresql/*/bin. It also checks that the
// PostGIS extension is installed for that server. Errors say what to
// install.
func BinDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) > versionOf(found[j]) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err != nil {
			continue
		}
		if !hasPostGIS(d) {
			return "", fmt.Errorf("postgresql found in %s but the postgis extension is not installed: %s", d, InstallHint)
		}
		return d, nil
	}
	return "", fmt.Errorf("postgresql server programs (initdb, pg_ctl) not found: %s", InstallHint)
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// pgConfig returns what the pg_config of the server in binDir prints for
// flag (a directory: "--sharedir", "--pkglibdir"), or "" if it cannot.
func pgConfig(binDir, flag string) string {
	out, err := exec.Command(filepath.Join(binDir, "pg_config"), flag).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// hasPostGIS reports whether postgis.control is in the share directory of
// the server in binDir.
func hasPostGIS(binDir string) bool {
	candidates := []string{filepath.Join(filepath.Dir(binDir), "share", "extension", "postgis.control")}
	if v := versionOf(binDir); v > 0 {
		candidates = append(candidates, fmt.Sprintf("/usr/share/postgresql/%d/extension/postgis.control", v))
	}
	if dir := pgConfig(binDir, "--sharedir"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "extension", "postgis.control"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return true
		}
	}
	return false
}

// DefaultDir is where the embedded default keeps its cluster:
// $GEOINGEST_HOME/pgdata, else /var/lib/geoingest/pgdata for root, else
// $XDG_DATA_HOME/geoingest/pgdata (~/.local/share/geoingest/pgdata).
func DefaultDir() string {
	if h := os.Getenv("GEOINGEST_HOME"); h != "" {
		return filepath.Join(h, "pgdata")
	}
	if os.Geteuid() == 0 {
		return "/var/lib/geoingest/pgdata"
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "geoingest", "pgdata")
}

// postgisLibrary returns the name of PostGIS's library for
// shared_preload_libraries ("postgis-3"), or "" when the server's library
// directory has none by that name.
func (c *Cluster) postgisLibrary() string {
	dir := pgConfig(c.binDir, "--pkglibdir")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(c.binDir), "lib")
	}
	const lib = "postgis-3"
	if _, err := os.Stat(filepath.Join(dir, lib+".so")); err != nil {
		return ""
	}
	return lib
}

// Start initialises the cluster in dir if it has none, and starts it unless
// it is running already. Concurrent callers (threads or processes) are
// serialised with a lock file beside dir; all of them get the same running
// cluster. progress, if not nil, is told what is happening.
func Start(ctx context.Context, dir string, progress func(string)) (*Cluster, error) {
	if progress == nil {
		progress = func(string) {}
	}
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, binDir: binDir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres OS user to run the cluster: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		if err := reachable(dir, u); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()

	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		progress("initialising a private PostgreSQL cluster in " + dir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if c.cred != nil {
			if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return nil, err
			}
		}
		if out, err := c.run(ctx, "initdb", "-D", dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
			return nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
	}
	if c.running(ctx) {
		return c, nil
	}
	progress("starting PostgreSQL (" + dir + ")")
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=on -c max_connections=200", dir)
	if lib := c.postgisLibrary(); lib != "" {
		// Every connection that touches a geometry would otherwise load
		// PostGIS itself, some 16 ms each; the postmaster loads it once.
		opts += " -c shared_preload_libraries=" + lib
	}
	if out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", dir, "-l", filepath.Join(dir, "server.log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, tail(string(log), 2000))
	}
	return c, nil
}

// Open returns the cluster in dir if it exists, without starting it.
func Open(dir string) (*Cluster, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, binDir: binDir}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("postgres"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
	}
	return c, nil
}

// Running reports whether the cluster's server is up.
func (c *Cluster) Running(ctx context.Context) bool { return c.running(ctx) }

func (c *Cluster) running(ctx context.Context) bool {
	_, err := c.run(ctx, "pg_ctl", "status", "-D", c.Dir)
	return err == nil
}

// Stop stops the server (fast shutdown). The data directory stays.
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.running(ctx) {
		return nil
	}
	if out, err := c.run(ctx, "pg_ctl", "stop", "-w", "-m", "fast", "-D", c.Dir); err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// URL returns a connection string for database dbname as the superuser.
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("host=%s port=5432 user=postgres dbname=%s sslmode=disable", c.Dir, dbname)
}

func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, prog), args...)
	cmd.Dir = "/"
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// A server started by pg_ctl must outlive us: put it in its own
	// process group so that a Ctrl-C on our terminal does not reach it.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// EnsureDatabase creates database name on the server at adminURL if it does
// not exist. name is quoted as an identifier.
func EnsureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created concurrently
		return nil
	}
	return err
}
