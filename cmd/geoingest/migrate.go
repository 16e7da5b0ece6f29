package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/geoingest/geoingest/migrations"
)

func init() {
	register(&command{name: "migrate", summary: "apply the database migrations; --force N repairs a dirty schema", run: runMigrate})
}

// runMigrate applies the embedded migrations, as the schema owner. With
// --force N it applies nothing: it marks a dirty schema (a migration that
// failed) clean at version N, so that the next `geoingest migrate` applies
// the migrations after N again (docs/operations.md, "A dirty migration").
func runMigrate(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("migrate", "[--database-url URL] [--force N]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	force := fs.String("force", "", "repair a dirty schema: set its version to N (0: none applied) and clear the dirty mark, running no migration; N is the version before the one that failed. Refused on a schema that is not dirty")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	var forceTo uint64
	if *force != "" {
		var err error
		if forceTo, err = strconv.ParseUint(*force, 10, 32); err != nil {
			return fmt.Errorf("--force %q: want a schema version, a whole number (0 to %d)", *force, migrations.Latest())
		}
	}
	url, err := m.resolveDatabaseURL(ctx, &d)
	if err != nil {
		return err
	}
	if *force != "" {
		was, err := migrations.Force(url, uint(forceTo))
		if err != nil {
			return ownerHint(err)
		}
		fmt.Fprintf(m.Stdout, "schema version %d (dirty) forced to %d, clean; no migration was run: run geoingest migrate to apply the migrations after %d\n",
			was, forceTo, forceTo)
		return nil
	}
	v, err := migrations.Up(url)
	if err != nil {
		return ownerHint(err)
	}
	fmt.Fprintf(m.Stdout, "schema at version %d\n", v)
	return nil
}

// ownerHint adds to a privilege error who may migrate.
func ownerHint(err error) error {
	if migrations.IsInsufficientPrivilege(err) {
		return fmt.Errorf("%w (migrations run as the schema owner, which needs CREATEROLE the first time unless the roles geoingest_writer and geoingest_analyst exist already; see docs/operations.md, \"Roles\")", err)
	}
	return err
}
