// Package migrations holds geoingest's schema as SQL files embedded in the
// binary and applies them with golang-migrate (iofs source, pgx/v5 driver).
package migrations

import (
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/geoingest/geoingest/internal/pgdial"
	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied to the database at
// databaseURL (a libpq URL or keyword/value string). It takes
// golang-migrate's advisory lock, so concurrent callers apply each
// migration once. It returns the schema version reached.
func Up(databaseURL string) (uint, error) {
	m, err := open(databaseURL)
	if err != nil {
		return 0, err
	}
	defer m.Close() // releases the driver's connection
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		var de migrate.ErrDirty
		if errors.As(err, &de) && de.Version >= 0 {
			return uint(de.Version), &DirtyError{Version: uint(de.Version)}
		}
		if v, dirty, verr := m.Version(); verr == nil && dirty {
			// The migration of version v failed: say so, and what to run.
			return v, &DirtyError{Version: v, Cause: plain(err)}
		}
		return 0, fmt.Errorf("migrate: %w", plain(err))
	}
	v, dirty, err := m.Version()
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if dirty {
		return v, &DirtyError{Version: v}
	}
	return v, nil
}

// DirtyError is the error of Up and Ensure on a dirty schema: golang-migrate
// marks a version dirty while it applies that migration and clears the mark
// when the migration succeeds, so a dirty version is a migration that
// failed (or was interrupted). Each migration file runs as one transaction
// (one multi-statement query), so a failed one normally left none of its
// changes behind. Nothing migrates a dirty schema until an operator has
// fixed the cause and run `geoingest migrate --force N` (Force) with N the
// version before the failed one.
type DirtyError struct {
	Version uint  // the version whose migration failed
	Cause   error // the migration's own error, when this run made the schema dirty
}

func (e *DirtyError) Error() string {
	const what = "fix what made it fail, then, as the schema owner, run `geoingest migrate --force %d` to mark version %d clean and `geoingest migrate` to apply migration %d again (docs/operations.md, \"A dirty migration\")"
	if e.Cause != nil {
		return fmt.Sprintf("migrate: migration %d failed and was rolled back: %v; the schema is now marked dirty at version %d: "+what,
			e.Version, e.Cause, e.Version, e.Before(), e.Before(), e.Version)
	}
	return fmt.Sprintf("schema version %d is dirty: migration %d failed or was interrupted, and its transaction was rolled back; "+what,
		e.Version, e.Version, e.Before(), e.Before(), e.Version)
}

// Unwrap returns the migration's own error, if any.
func (e *DirtyError) Unwrap() error { return e.Cause }

// Before is the version to force a dirty schema back to: the migration
// before the one that failed (0 when the first one failed).
func (e *DirtyError) Before() uint { return previous(e.Version) }

// previous returns the embedded migration before v, or 0 when v is the
// first (or not an embedded version).
func previous(v uint) uint {
	src, err := iofs.New(files, ".")
	if err != nil {
		panic(err) // the embedded files are checked by every test
	}
	defer src.Close()
	p, err := src.Prev(v)
	if err != nil {
		return 0
	}
	return p
}

// Force sets the schema version of the database at databaseURL to v and
// clears the dirty mark, under golang-migrate's lock, without running any
// migration: v = 0 means that no migration is applied. It is the repair of
// a dirty schema (see DirtyError) and refuses a schema that is not dirty,
// where forcing a version would only make migrate skip or re-run
// migrations. v must be 0 or a version this binary embeds. It returns the
// version the schema had.
func Force(databaseURL string, v uint) (was uint, err error) {
	if v != 0 && !embedded(v) {
		return 0, fmt.Errorf("migrate --force %d: no migration %d in this binary (its migrations are 1 to %d)", v, v, Latest())
	}
	m, err := open(databaseURL)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	cur, dirty, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
		return 0, fmt.Errorf("migrate --force %d: no migration was ever applied to this database: nothing to force; run geoingest migrate", v)
	case err != nil:
		return 0, fmt.Errorf("migrate: %w", plain(err))
	case !dirty:
		return cur, fmt.Errorf("migrate --force %d: schema version %d is not dirty: nothing to force (--force only repairs a failed migration; run geoingest migrate)", v, cur)
	}
	target := int(v)
	if v == 0 {
		target = database.NilVersion
	}
	if err := m.Force(target); err != nil {
		return cur, fmt.Errorf("migrate --force %d: %w", v, plain(err))
	}
	return cur, nil
}

// embedded reports whether v is the version of an embedded migration.
func embedded(v uint) bool {
	src, err := iofs.New(files, ".")
	if err != nil {
		panic(err)
	}
	defer src.Close()
	for x, err := src.First(); err == nil; x, err = src.Next(x) {
		if x == v {
			return true
		}
	}
	return false
}

// open returns a migrate instance on the embedded files and the database.
// Opening only reads the schema version when golang-migrate's version
// table exists already and is visible (SELECT on it), so it needs no DDL
// rights then.
func open(databaseURL string) (*migrate.Migrate, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if _, err := pgdial.Apply(&cfg.Config); err != nil {
		return nil, fmt.Errorf("migrate: database url: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	driver, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("migrate: %w", plain(err))
	}
	src, err := iofs.New(files, ".")
	if err != nil {
		driver.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		driver.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return m, nil
}

// Latest is the version of the newest embedded migration: the version
// this binary needs.
func Latest() uint {
	src, err := iofs.New(files, ".")
	if err != nil {
		panic(err) // the embedded files are checked by every test
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		panic(err)
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v
		}
		v = next
	}
}

// Version reads the schema version of the database at databaseURL (0 when
// no migration was applied) and whether it is dirty. It reads only: a role
// with SELECT on schema_migrations is enough (migration 0003 grants it to
// geoingest_writer and geoingest_analyst).
func Version(databaseURL string) (v uint, dirty bool, err error) {
	m, err := open(databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	v, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("migrate: %w", plain(err))
	}
	return v, dirty, nil
}

// Ensure makes sure the database at databaseURL has the schema this
// binary needs, for commands that only use it. When the schema is at
// Latest() already it only reads the version, so a role without DDL
// rights (geoingest_writer, geoingest_analyst) can run them. When it is
// behind, Ensure migrates it like Up; if the role may not, it returns an
// error saying "schema is at version N, need M: run geoingest migrate as
// the schema owner". A schema newer than Latest() is refused: this binary
// does not know what its migrations changed.
func Ensure(databaseURL string) (uint, error) {
	want := Latest()
	v, dirty, verr := Version(databaseURL)
	if verr == nil && !dirty && v == want {
		return v, nil
	}
	if verr == nil && !dirty && v > want {
		return v, fmt.Errorf("schema is at version %d, newer than this binary's %d: run the geoingest release that migrated it, or a newer one", v, want)
	}
	got, err := Up(databaseURL)
	if err != nil && IsInsufficientPrivilege(err) {
		have := fmt.Sprintf("at version %d", v)
		if verr != nil {
			have = "not readable by this role"
		}
		return got, fmt.Errorf("schema is %s, need %d: run geoingest migrate as the schema owner (%w)", have, want, err)
	}
	return got, err
}

// IsInsufficientPrivilege reports whether err, from Up, Version or
// Ensure, is PostgreSQL's insufficient_privilege (SQLSTATE 42501):
// permission denied, or must be owner.
func IsInsufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// plain turns golang-migrate's database.Error, which prints the SQL it ran
// (a whole migration file when one fails) and does not unwrap, into an
// error that says what failed and unwraps to PostgreSQL's error. Other
// errors are returned as they are.
func plain(err error) error {
	var dv database.Error
	var dp *database.Error
	switch {
	case errors.As(err, &dp):
		dv = *dp
	case errors.As(err, &dv):
	default:
		return err
	}
	if dv.OrigErr == nil {
		return err
	}
	msg := dv.Err
	switch {
	case strings.HasPrefix(msg, "migration failed"):
		msg = "migration failed"
	case msg == "":
		msg = "query failed"
	}
	if dv.Line > 0 {
		msg = fmt.Sprintf("%s at line %d", msg, dv.Line)
	}
	return &queryError{msg: msg, err: dv.OrigErr}
}

type queryError struct {
	msg string
	err error
}

func (e *queryError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// To migrates the database at databaseURL up or down to version v: for
// tests of a migration's upgrade in place and of its down migration.
func To(databaseURL string, v uint) error {
	m, err := open(databaseURL)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Migrate(v); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate to %d: %w", v, plain(err))
	}
	return nil
}
