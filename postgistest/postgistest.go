// Package postgistest gives integration tests a PostGIS database with
// geoingest's schema, so that code which reads or writes geoingest's
// tables (jobs, parcels, admin_units, the report functions) can be tested
// against the real thing in a few lines:
//
//	var srv *postgistest.Server
//
//	func TestMain(m *testing.M) {
//		var err error
//		srv, err = postgistest.Start(context.Background(), postgistest.Options{})
//		if err != nil {
//			log.Fatal(err)
//		}
//		code := m.Run()
//		srv.Close()
//		os.Exit(code)
//	}
//
//	func TestMyReport(t *testing.T) {
//		url := srv.NewDB(t) // a fresh database, migrated, dropped after the test
//		...
//	}
//
// The server is, in order of preference:
//
//   - Options.URL, else TEST_DATABASE_URL: an existing server on which the
//     user may CREATE DATABASE (and that has PostGIS installed);
//   - a PostGIS container started with testcontainers-go, when a Docker API
//     answers: Docker, or podman's (`podman system service`) through
//     DOCKER_HOST;
//   - a private throwaway cluster started with the machine's initdb and
//     pg_ctl and PostGIS, listening on a Unix socket only (the way
//     geoingest's embedded database runs).
//
// Options.Mode (or GEOINGEST_TEST_POSTGIS=container|cluster) insists on one
// of the last two: a test run that must prove the container path fails,
// rather than quietly falling back, when no Docker API answers.
//
// Start applies geoingest's migrations once, to a template database, and
// NewDB clones it: each test gets its own database in milliseconds.
package postgistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/geoingest/geoingest/internal/testsupport/reaper"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Mode chooses where the server comes from when no URL is given.
type Mode string

const (
	// ModeAuto: a container when a Docker API answers, else a private
	// cluster.
	ModeAuto Mode = "auto"
	// ModeContainer: a container, or an error.
	ModeContainer Mode = "container"
	// ModeCluster: a private cluster, or an error.
	ModeCluster Mode = "cluster"
)

// DefaultImage is the PostGIS image Start runs when Options.Image and
// GEOINGEST_POSTGIS_IMAGE are empty. Any image with the postgis/postgis
// image's interface works (POSTGRES_PASSWORD, port 5432, PostGIS
// installed); scripts/images.sh builds one from Debian's packages,
// localhost/geoingest/postgis:15-3.
const DefaultImage = "docker.io/postgis/postgis:15-3.4"

// Options configure Start. The zero value takes everything from the
// environment.
type Options struct {
	// URL of an existing server (a superuser, or a user who may create
	// databases). Default: TEST_DATABASE_URL. When set, Mode and Image are
	// not used.
	URL string
	// Mode: ModeAuto, ModeContainer or ModeCluster. Default: GEOINGEST_TEST_POSTGIS,
	// else Auto.
	Mode Mode
	// Image of the container. Default: GEOINGEST_POSTGIS_IMAGE, else
	// DefaultImage.
	Image string
	// Logf, when set, receives a line about the server that was started
	// (for example t.Logf, or log.Printf in TestMain).
	Logf func(format string, args ...any)
}

// Server is a PostGIS server for tests, with geoingest's migrations applied
// to a template database.
type Server struct {
	adminURL string
	desc     string
	template string
	counter  atomic.Int64
	stop     func()
}

// Start starts (or, with a URL, connects to) a PostGIS server and applies
// geoingest's migrations to a fresh template database on it. The caller
// must Close the server. Errors say what is missing: no Docker API for
// Mode Container, no PostgreSQL or PostGIS for Mode Cluster.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = opts.WithDefaults()
	s := &Server{stop: func() {}}
	switch {
	case opts.URL != "":
		s.adminURL, s.desc = opts.URL, "the server at TEST_DATABASE_URL"
	case opts.WantsContainer():
		c, err := StartContainer(ctx, opts.Image)
		if err != nil {
			return nil, err
		}
		s.adminURL, s.desc, s.stop = c.URL, c.String(), func() { _ = c.Terminate(context.Background()) }
	case opts.Mode == ModeCluster || opts.Mode == ModeAuto:
		url, desc, stop, err := startCluster(ctx)
		if err != nil {
			return nil, err
		}
		s.adminURL, s.desc, s.stop = url, desc, stop
	default:
		return nil, fmt.Errorf("postgistest: unknown mode %q (auto, container or cluster)", opts.Mode)
	}
	s.template = fmt.Sprintf("geoingest_template_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if err := pgcluster.EnsureDatabase(ctx, s.adminURL, s.template); err != nil {
		s.stop()
		return nil, fmt.Errorf("postgistest: create template on %s: %w", s.desc, err)
	}
	v, err := migrations.Up(WithDatabase(s.adminURL, s.template))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("postgistest: %s: %w", s.desc, err)
	}
	if opts.Logf != nil {
		opts.Logf("postgistest: %s, geoingest schema version %d", s.desc, v)
	}
	return s, nil
}

// WithDefaults returns opts with its empty fields taken from the
// environment, as Start does.
func (o Options) WithDefaults() Options {
	if o.URL == "" {
		o.URL = os.Getenv("TEST_DATABASE_URL")
	}
	if o.Mode == "" {
		o.Mode = Mode(os.Getenv("GEOINGEST_TEST_POSTGIS"))
	}
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Image == "" {
		o.Image = os.Getenv("GEOINGEST_POSTGIS_IMAGE")
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	return o
}

// WantsContainer reports whether Start, given opts (after WithDefaults),
// starts a container: no URL, and ModeContainer, or ModeAuto with a Docker
// API answering.
func (o Options) WantsContainer() bool {
	return o.URL == "" && (o.Mode == ModeContainer || o.Mode == ModeAuto && DockerAnswers())
}

// AdminURL is a connection string to the server's "postgres" database as
// the user that creates the test databases.
func (s *Server) AdminURL() string { return s.adminURL }

// String describes the server: the container's image and id, the
// cluster's directory, or the URL's origin.
func (s *Server) String() string { return s.desc }

// NewDB creates a database with geoingest's schema (a clone of the
// template) and returns its connection string. The database is dropped
// when the test ends. It fails the test if the database cannot be made.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	url, err := s.CreateDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropDB(context.Background(), url) })
	return url
}

// CreateDB creates a database with geoingest's schema and returns its
// connection string; DropDB drops it.
func (s *Server) CreateDB(ctx context.Context) (string, error) {
	name := fmt.Sprintf("geoingest_test_%d_%d", os.Getpid(), s.counter.Add(1))
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return "", fmt.Errorf("postgistest: %w", err)
	}
	defer conn.Close(ctx)
	// The server may still be closing the migration's connection to the
	// template (SQLSTATE 55006): retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{s.template}.Sanitize()))
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("postgistest: create database: %w", err)
	}
	return WithDatabase(s.adminURL, name), nil
}

// DropDB drops a database made by CreateDB, closing its connections.
func (s *Server) DropDB(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	return s.drop(ctx, cfg.Database)
}

func (s *Server) drop(ctx context.Context, name string) error {
	c, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// Close drops the template and stops the server Start started (a server
// given by URL is left running).
func (s *Server) Close() error {
	err := s.drop(context.Background(), s.template)
	s.stop()
	return err
}

// WithDatabase returns the connection string url with its database
// replaced by name (keyword/value form).
func WithDatabase(url, name string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		quote(cfg.Host), cfg.Port, quote(cfg.User), quote(cfg.Password), quote(name))
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// startCluster starts a private cluster in a temporary directory.
func startCluster(ctx context.Context) (url, desc string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "geoingest-pgtest-")
	if err != nil {
		return "", "", nil, err
	}
	// The server may run as another OS user: let it reach its directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	// A test process that dies without stop (a -timeout panic, a
	// SIGKILL) leaves no server running.
	unwatch := reaper.Watch(dir)
	c, err := pgcluster.Start(ctx, dir+"/pgdata", nil)
	if err != nil {
		os.RemoveAll(dir)
		unwatch()
		return "", "", nil, fmt.Errorf("postgistest: private cluster: %w", err)
	}
	return c.URL("postgres"), "a private cluster in " + c.Dir, func() {
		_ = c.Stop(context.Background())
		os.RemoveAll(dir)
		unwatch()
	}, nil
}
