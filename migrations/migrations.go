// Package migrations holds geoingest's schema as SQL files embedded in the
// binary and applies them with golang-migrate (iofs source, pgx/v5 driver).
package migrations

import (
	"embed"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied to the database at
// databaseURL (a libpq URL or keyword/value string). It takes
// golang-migrate's advisory lock, so concurrent callers apply each
// migration once. It returns the schema version reached.
func Up(databaseURL string) (uint, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	driver, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	src, err := iofs.New(files, ".")
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer m.Close() // releases the driver's connection
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return 0, fmt.Errorf("migrate: %w", err)
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
