package main

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/migrations"
)

func init() {
	register(&command{name: "migrate", summary: "apply the database migrations", run: runMigrate})
}

func runMigrate(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("migrate", "[--database-url URL]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	if err := parse(fs, args); err != nil {
		return err
	}
	url, err := m.resolveDatabaseURL(ctx, &d)
	if err != nil {
		return err
	}
	v, err := migrations.Up(url)
	if migrations.IsInsufficientPrivilege(err) {
		return fmt.Errorf("%w (migrations run as the schema owner, which needs CREATEROLE the first time unless the roles geoingest_writer and geoingest_analyst exist already; see README, Least privilege)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "schema at version %d\n", v)
	return nil
}
