package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/internal/console"
	"github.com/geoingest/geoingest/queue"
)

func init() {
	register(&command{name: "console", summary: "serve the read-only operator's console (pages and JSON API) from the database alone", run: runConsole})
}

// newConsole is the console on a's database: its jobs, sources and claims,
// its pending versions, and the map of its area report. token is the
// read-only token, opToken the operator's (empty: the console only
// reads). recv is serve's queue (nil for none): the console shows its
// dead-letter queue's depth where known, and lists, re-drives and deletes
// its dead letters, and retries failed jobs, where the queue can
// (queue.DeadLetterBox). The pending versions are read and decided on the
// primary.
func newConsole(a *app, token, opToken string, recv queue.Receiver, log *slog.Logger) http.Handler {
	o := console.Options{Reader: postgis.NewConsole(a.readsPool()), Reports: a.reads(),
		Token: token, OperatorToken: opToken, Pending: a.store, Decider: a.svc, Log: log}
	o.DeadLetters, _ = recv.(queue.DeadLetterDepther)
	o.DeadLetterBox, o.NoDeadLetters = deadLetterBox(recv)
	if q, ok := a.store.(ingest.Quarantine); ok {
		o.Quarantine = q
	}
	if a.readPool != nil {
		o.Replica = postgis.NewConsole(a.readPool)
	}
	// The change feed reads the primary: its cursor holds records back
	// while the primary's older transactions run.
	if cl, ok := a.store.(ingest.ChangeLog); ok {
		o.Changes = cl
	}
	return console.New(o)
}

// deadLetterBox is recv's dead-letter queue where it can be read, else
// nil and why not.
func deadLetterBox(recv queue.Receiver) (queue.DeadLetterBox, string) {
	if recv == nil {
		return nil, ""
	}
	box, ok := recv.(queue.DeadLetterBox)
	if !ok {
		return nil, "this queue's dead letters cannot be read by geoingest (a Pub/Sub dead-letter topic has no subscription of geoingest's): read them with a subscription of your own, and publish a message again to its topic to retry it"
	}
	if d, ok := recv.(queue.DeadLetterDepther); ok {
		// A driver says it has none before it asks the network: a
		// cancelled context asks nothing.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := d.DeadLetterDepth(ctx); errors.Is(err, queue.ErrNoDeadLetterQueue) {
			return nil, "serve has no dead-letter queue (--dlq-url): a permanent failure's message was deleted, and the job is retried by delivering its event again"
		}
	}
	return box, ""
}

// envBool is envInt for a boolean (true, false, 1, 0, ...).
func (m *Main) envBool(name string, def bool) bool {
	raw := m.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		m.envErrs = append(m.envErrs, fmt.Errorf("environment variable %s=%q: want true or false", name, raw))
		return def
	}
	return v
}

// runConsole is `geoingest console [--addr ADDR] [--console-token T]`:
// the pages and API that serve shows beside /metrics, without a queue,
// against the database alone (the embedded one, or --database-url; a
// geoingest_analyst login is enough). It prints the console's URL on
// stdout and serves until ctx is cancelled (SIGTERM, SIGINT).
func runConsole(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("console", "[--addr HOST:PORT] [--console-token TOKEN] [flags]")
	var d dbFlags
	m.addDBFlagsLevel(fs, &d, "warn")
	m.addReadFlag(fs, &d)
	addr := fs.String("addr", m.envDefault("GEOINGEST_CONSOLE_ADDR", "127.0.0.1:9465"), "address to serve the console on; loopback unless you mean otherwise (env GEOINGEST_CONSOLE_ADDR)")
	token := fs.String("console-token", m.Getenv("GEOINGEST_CONSOLE_TOKEN"), "when set, every page and API call requires this bearer token (or it as the basic-auth password) (env GEOINGEST_CONSOLE_TOKEN)")
	opToken := fs.String("console-operator-token", m.Getenv("GEOINGEST_CONSOLE_OPERATOR_TOKEN"), "when set, the bearer of this token may also act: approve or reject pending versions (needs a login that may write) (env GEOINGEST_CONSOLE_OPERATOR_TOKEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := m.envError(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	srv := &http.Server{Handler: newConsole(a, *token, *opToken, nil, m.Log), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(m.Stdout, "geoingest console: http://%s/\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
