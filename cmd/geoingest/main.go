// Command geoingest ingests vector uploads (shapefiles, zipped shapefiles,
// GeoJSON) into PostGIS exactly once in effect. main only wires: the
// commands live one per file, each registered in commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/geoingest/geoingest/internal/pgdial"
	"github.com/geoingest/geoingest/internal/testhook"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A build with the tag geoingest_testhooks crashes or pauses where the
	// environment says (the crash tests); a release build is left alone.
	ctx = testhook.Arm(ctx)
	m := NewMain()
	os.Exit(m.Run(ctx, os.Args[1:]))
}

// command is one geoingest subcommand.
type command struct {
	name    string
	summary string
	// run executes the command. It returns an exitError for a specific
	// exit status, errUsage for a usage error (exit 2), any other error
	// for exit 1.
	run func(ctx context.Context, m *Main, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage means the arguments were wrong; the flag package has already
// said how.
var errUsage = errors.New("usage")

// badFormat reports a --format value that command cmd does not print:
// a usage error (exit 2), as for any other flag value it cannot take.
func (m *Main) badFormat(cmd, format, want string) error {
	fmt.Fprintf(m.Stderr, "geoingest %s: --format %q: want %s\n", cmd, format, want)
	return errUsage
}

// badParams says why the job parameters the flags give are refused
// (ingest.Params.Validate: a --key with an empty field, a --duplicate-keys
// or --invalid policy it does not know, ...) and returns errUsage: a bad
// flag value, exit 2, as a bad --format is.
func (m *Main) badParams(cmd string, err error) error {
	fmt.Fprintf(m.Stderr, "geoingest %s: %v\n", cmd, err)
	return errUsage
}

// exitError asks for a specific exit status without printing anything more.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Main is the program: its I/O and environment, so that tests can drive it
// end to end in-process.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Log is set up by setupLog from --log-format/--log-level.
	Log *slog.Logger

	envErrs []error // environment values that did not parse (envError)
}

// NewMain returns a Main on the process's standard streams and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// Run runs the command named by args[0] and returns the exit status.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		m.usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "geoingest: unknown command %q\n\n", args[0])
		m.usage()
		return 2
	}
	err := c.run(ctx, m, args[1:])
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ee):
		return int(ee)
	default:
		fmt.Fprintf(m.Stderr, "geoingest %s: %v\n", c.name, err)
		return 1
	}
}

func (m *Main) usage() {
	fmt.Fprintln(m.Stderr, "geoingest: ingest vector uploads into PostGIS exactly once in effect.")
	fmt.Fprintln(m.Stderr, "\nUsage: geoingest COMMAND [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(m.Stderr, "\nRun 'geoingest COMMAND -h' for a command's flags.")
}

// flagSet returns a FlagSet for a command that writes its usage to
// m.Stderr.
func (m *Main) flagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("geoingest "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "Usage: geoingest %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// envDefault returns the environment variable's value, or def.
func (m *Main) envDefault(name, def string) string {
	if v := m.Getenv(name); v != "" {
		return v
	}
	return def
}

// dbFlags are the flags of every command that uses the database.
type dbFlags struct {
	databaseURL string
	logFormat   string
	logLevel    string
	// workers is how many jobs may run at once on the pool (default 1).
	// Each running job holds one connection for its write-gate transaction
	// and may need a second meanwhile (heartbeat, SRID and CRS lookups), so
	// the pool gets at least 2*workers+2 connections.
	workers int
	// readDatabaseURL is a replica for the commands' reads that need not
	// see their own writes (addReadFlag); "" reads the primary.
	readDatabaseURL string
}

// addReadFlag adds --read-database-url to a command whose reads may go to
// a replica: reports, the console and its read-only API, the jobs
// listing. What must read its own writes (the claim and write gates,
// replay, backfill, verify, the compactor, prune, the report refresh)
// always uses --database-url.
func (m *Main) addReadFlag(fs *flag.FlagSet, d *dbFlags) {
	fs.StringVar(&d.readDatabaseURL, "read-database-url", m.Getenv("GEOINGEST_READ_DATABASE_URL"),
		"a read replica for reports, the console and the read-only API (env GEOINGEST_READ_DATABASE_URL; default: the primary, --database-url)")
}

func (m *Main) addDBFlags(fs *flag.FlagSet, d *dbFlags) {
	m.addDBFlagsLevel(fs, d, "warn")
}

// addDBFlagsLevel is addDBFlags with another default log level.
func (m *Main) addDBFlagsLevel(fs *flag.FlagSet, d *dbFlags, level string) {
	fs.StringVar(&d.databaseURL, "database-url", "",
		"PostgreSQL connection string, libpq URL or keyword form (default $DATABASE_URL; when neither is set, a private local PostGIS cluster started on demand)")
	fs.StringVar(&d.logFormat, "log-format", m.envDefault("GEOINGEST_LOG_FORMAT", "text"), "log format: text or json (env GEOINGEST_LOG_FORMAT)")
	fs.StringVar(&d.logLevel, "log-level", m.envDefault("GEOINGEST_LOG_LEVEL", level), "log level: debug, info, warn, error, none (env GEOINGEST_LOG_LEVEL)")
}

// setupLog makes m.Log from the flags. Logs go to stderr. A level or
// format it does not know is a usage error (exit 2), as a bad flag is.
func (m *Main) setupLog(d *dbFlags) error {
	var level slog.Level
	if d.logLevel == "none" {
		level = slog.LevelError + 100
	} else if err := level.UnmarshalText([]byte(d.logLevel)); err != nil {
		fmt.Fprintf(m.Stderr, "geoingest: --log-level %q: want debug, info, warn, error or none (or env GEOINGEST_LOG_LEVEL)\n", d.logLevel)
		return errUsage
	}
	opts := &slog.HandlerOptions{Level: level}
	switch d.logFormat {
	case "text":
		m.Log = slog.New(slog.NewTextHandler(m.Stderr, opts))
	case "json":
		m.Log = slog.New(slog.NewJSONHandler(m.Stderr, opts))
	default:
		fmt.Fprintf(m.Stderr, "geoingest: --log-format %q: want text or json (or env GEOINGEST_LOG_FORMAT)\n", d.logFormat)
		return errUsage
	}
	return nil
}

// resolveDatabaseURL returns the database to use: the flag, else
// $DATABASE_URL, else the embedded default cluster (started if needed).
func (m *Main) resolveDatabaseURL(ctx context.Context, d *dbFlags) (string, error) {
	if d.databaseURL != "" {
		return d.databaseURL, nil
	}
	if u := m.Getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	dir := pgcluster.DefaultDir()
	if h := m.Getenv("GEOINGEST_HOME"); h != "" {
		dir = h + "/pgdata"
	}
	c, err := pgcluster.Start(ctx, dir, func(msg string) { fmt.Fprintln(m.Stderr, "geoingest: "+msg) })
	if err != nil {
		return "", fmt.Errorf("embedded database: %w", err)
	}
	if err := pgcluster.EnsureDatabase(ctx, c.URL("postgres"), "geoingest"); err != nil {
		return "", fmt.Errorf("embedded database: %w", err)
	}
	return c.URL("geoingest"), nil
}

// openDB resolves the database, makes sure its schema is current and
// returns a pool. A current schema is only read (migrations.Ensure), so
// the runtime and analyst roles of migration 0003 can run the commands; a
// schema behind is migrated (under golang-migrate's lock) when the role
// may, else openDB fails with "schema is at version N, need M: run
// geoingest migrate as the schema owner".
func (m *Main) openDB(ctx context.Context, d *dbFlags) (*pgxpool.Pool, error) {
	url, err := m.resolveDatabaseURL(ctx, d)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if _, err := pgdial.Apply(&cfg.ConnConfig.Config); err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	// The schema is checked on a connection of its own while the pool
	// connects; its verdict comes first.
	ensured := make(chan error, 1)
	go func() {
		_, err := migrations.Ensure(url)
		ensured <- err
	}()
	cfg.ConnConfig.RuntimeParams["application_name"] = "geoingest"
	if want := int32(2*max(d.workers, 1) + 2); cfg.MaxConns < want {
		cfg.MaxConns = want
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(pctx, cfg)
	if err == nil {
		err = pool.Ping(pctx)
	}
	if eerr := <-ensured; eerr != nil {
		err = eerr
	} else if err != nil {
		err = fmt.Errorf("connect: %w", err)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, err
	}
	return pool, nil
}

// openReadDB opens the pool of --read-database-url: a replica (or any
// database with geoingest's schema) for reads only. Its schema is not
// migrated (a replica cannot be written): it follows the primary's.
func (m *Main) openReadDB(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("read database url: %w", err)
	}
	if _, err := pgdial.Apply(&cfg.ConnConfig.Config); err != nil {
		return nil, fmt.Errorf("read database url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "geoingest-reader"
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(pctx, cfg)
	if err == nil {
		err = pool.Ping(pctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("read database: connect: %w", err)
	}
	return pool, nil
}

// paramFlags are the processing parameters of a job (see ingest.Params).
type paramFlags struct {
	target, pipelineVersion, invalid, nullGeom, wrongType, encoding string
	sourceSRID                                                      int
	layers                                                          layerList
	geometryField                                                   string
	key, duplicateKeys                                              string
	matchIoU                                                        float64
	schemaFile, mapping                                             string
	schema                                                          *ingest.Schema
	schemaErr                                                       error // loading schemaFile
}

// layerList is the repeatable --layer flag (each value may also be a
// comma-separated list).
type layerList []string

func (l *layerList) String() string { return strings.Join(*l, ",") }

func (l *layerList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (m *Main) addParamFlags(fs *flag.FlagSet, p *paramFlags) {
	fs.StringVar(&p.target, "target", "parcels", "target table: "+strings.Join(ingest.Targets, " or "))
	fs.StringVar(&p.pipelineVersion, "pipeline-version", m.envDefault("GEOINGEST_PIPELINE_VERSION", ingest.DefaultPipelineVersion),
		"pipeline version; a new version makes every job key new (the new-key backfill)")
	fs.IntVar(&p.sourceSRID, "source-srid", 0, "EPSG code of the input's CRS, overriding the file's (needed when the file names none)")
	fs.StringVar(&p.invalid, "invalid", ingest.PolicyRepair, "invalid polygons: repair (ST_MakeValid) or fail")
	fs.StringVar(&p.nullGeom, "null-geometry", ingest.PolicySkip, "null or empty geometries: skip (counted) or fail")
	fs.StringVar(&p.wrongType, "wrong-type", ingest.PolicySkip, "non-polygonal geometries: skip (counted) or fail")
	fs.StringVar(&p.encoding, "encoding", "", "DBF text encoding when the file names none (default UTF-8)")
	fs.Var(&p.layers, "layer", "read only this layer of a multi-layer file (GeoPackage, File Geodatabase, KML, GML); repeatable (default: every polygon layer)")
	fs.StringVar(&p.geometryField, "geometry-field", "", "the geometry field to read from layers with several (GML; default: the first polygonal one)")
	fs.StringVar(&p.schemaFile, "schema", m.Getenv("GEOINGEST_SCHEMA"), "the typed schema file (YAML or JSON; env GEOINGEST_SCHEMA; docs/schema.md)")
	fs.StringVar(&p.mapping, "mapping", "", "the typed schema's mapping the attributes go through (a mapping of --schema)")
}

// addMatchFlags adds the feature-matching parameters (docs/changes.md)
// to the commands that write jobs, and to inspect (which then checks the
// key in the file).
func (m *Main) addMatchFlags(fs *flag.FlagSet, p *paramFlags) {
	fs.StringVar(&p.key, "key", "", "the source's key: the field (or STATE|APN for a composite key) that identifies a feature from one version to the next")
	fs.Var(matchIoUFlag{&p.matchIoU}, "match-iou", "intersection over union at or above which an unmatched feature matches an old one as changed, in (0, 1] (default 0.9)")
	fs.StringVar(&p.duplicateKeys, "duplicate-keys", "", "a version whose key is not unique: report (matched by content and overlap, counted) or fail")
}

func (p *paramFlags) params() ingest.Params {
	ps := ingest.DefaultParams(p.target)
	ps.PipelineVersion = p.pipelineVersion
	ps.SourceSRID = p.sourceSRID
	ps.Invalid, ps.NullGeometry, ps.WrongType = p.invalid, p.nullGeom, p.wrongType
	ps.DefaultEncoding = p.encoding
	ps.Layers = p.layers
	ps.GeometryField = p.geometryField
	var err error
	if ps.Key, err = ingest.ParseKey(p.key); err != nil || (p.key != "" && len(ps.Key) == 0) {
		ps.Key = strings.Split(p.key, "|") // its empty or padded field is refused by Validate, named
	}
	ps.MatchIoU, ps.DuplicateKeys = p.matchIoU, p.duplicateKeys
	if p.schemaFile != "" && p.schema == nil && p.schemaErr == nil {
		p.schema, p.schemaErr = ingest.LoadSchema(p.schemaFile)
	}
	ps.Schema, ps.Mapping = p.schema, p.mapping
	return ps
}

// policyFlags choose what a re-run does with jobs committed already
// (docs/design.md, "Backfills and repairs"): skip (default), new-key (a new
// --pipeline-version), or replace (--if-match JOB_ID for ingest; for a
// backfill, the generation current when each object is processed).
type policyFlags struct {
	policy, ifMatch string
}

func (m *Main) addPolicyFlags(fs *flag.FlagSet, pf *policyFlags, ifMatch bool) {
	fs.StringVar(&pf.policy, "policy", ingest.BackfillSkip, "re-run policy: skip (committed jobs do nothing), new-key (results beside the old ones under a new --pipeline-version), replace (a new generation only while the current one is the expected one)")
	if ifMatch {
		fs.StringVar(&pf.ifMatch, "if-match", "", "with --policy replace: the job id that must still be the source's current generation")
	}
}

// apply checks the policy against the other flags and sets what it implies
// on params. Returns errUsage-worthy errors as plain errors.
func (pf *policyFlags) apply(fs *flag.FlagSet, params *ingest.Params, needIfMatch bool) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch pf.policy {
	case ingest.BackfillSkip:
		if pf.ifMatch != "" {
			return fmt.Errorf("--if-match goes with --policy replace")
		}
	case ingest.BackfillNewKey:
		if !set["pipeline-version"] {
			return fmt.Errorf("--policy new-key needs --pipeline-version V, a version not used before: every key is then new and the results land beside the old ones")
		}
	case ingest.BackfillReplace:
		if needIfMatch {
			if len(pf.ifMatch) != 64 {
				return fmt.Errorf("--policy replace needs --if-match JOB_ID (the 64-hex job id of the generation to replace; see geoingest jobs)")
			}
			params.Replaces = pf.ifMatch
		}
	default:
		return fmt.Errorf("--policy %q: want skip, new-key or replace", pf.policy)
	}
	return nil
}
