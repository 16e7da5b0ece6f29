// Package migrations holds geoingest's schema as SQL files embedded in the
// binary and applies them with golang-migrate (iofs source, pgx/v5 driver).
package migrations

import (
	"embed"
	"errors"
	"fmt"
	"strings"

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
		return 0, fmt.Errorf("migrate: %w", plain(err))
	}
	v, dirty, err := m.Version()
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if dirty {
		return v, fmt.Errorf("migrate: schema version %d is dirty (a migration failed half-way); fix it by hand", v)
	}
	return v, nil
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
// the schema owner".
func Ensure(databaseURL string) (uint, error) {
	want := Latest()
	v, dirty, verr := Version(databaseURL)
	if verr == nil && !dirty && v == want {
		return v, nil
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
