package main

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/internal/pgcluster"
)

func init() {
	register(&command{name: "db", summary: "manage the embedded PostGIS cluster: status, url, start, stop", run: runDB})
}

// runDB manages the embedded default cluster ($GEOINGEST_HOME/pgdata, or
// the platform default). "url" prints the connection string to use with
// psql; "stop" stops the server (data is kept).
func runDB(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("db", "status|url|start|stop")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	dir := pgcluster.DefaultDir()
	if h := m.Getenv("GEOINGEST_HOME"); h != "" {
		dir = h + "/pgdata"
	}
	switch fs.Arg(0) {
	case "start":
		c, err := pgcluster.Start(ctx, dir, func(msg string) { fmt.Fprintln(m.Stderr, "geoingest: "+msg) })
		if err != nil {
			return err
		}
		if err := pgcluster.EnsureDatabase(ctx, c.URL("postgres"), "geoingest"); err != nil {
			return err
		}
		fmt.Fprintln(m.Stdout, c.URL("geoingest"))
	case "url", "status":
		c, err := pgcluster.Open(dir)
		if err != nil {
			return err
		}
		running := c.Running(ctx)
		if fs.Arg(0) == "url" {
			fmt.Fprintln(m.Stdout, c.URL("geoingest"))
			return nil
		}
		state := "stopped"
		if running {
			state = "running"
		}
		fmt.Fprintf(m.Stdout, "embedded cluster %s: %s\nconnect: psql \"%s\"\n", dir, state, c.URL("geoingest"))
		if !running {
			return exitError(3)
		}
	case "stop":
		c, err := pgcluster.Open(dir)
		if err != nil {
			return err
		}
		return c.Stop(ctx)
	default:
		fs.Usage()
		return errUsage
	}
	return nil
}
