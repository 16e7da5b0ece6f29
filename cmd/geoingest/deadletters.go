package main

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/queue"
	"github.com/geoingest/geoingest/queue/azqueue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
)

func init() {
	register(&command{name: "deadletters", summary: "list, re-drive or delete dead-lettered messages; retry a failed job by re-driving its dead letters", run: runDeadLetters})
}

// runDeadLetters is `geoingest deadletters list | redrive ID | delete ID |
// retry JOB_ID` on serve's queue and dead-letter queue (--queue-url,
// --dlq-url: SQS or azqueue://; Pub/Sub's dead-letter topic cannot be
// read). retry also reads the job's state from the database. Exit status
// 1 when the dead letter or the job is not there or not failed.
func runDeadLetters(ctx context.Context, m *Main, args []string) error {
	subs := []string{"list", "redrive", "delete", "retry"}
	fs := m.flagSet("deadletters", "list | redrive ID | delete ID | retry JOB_ID  --queue-url URL --dlq-url URL [--format table|json] [flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	var awsf awsFlags
	m.addAWSFlags(fs, &awsf)
	queueURL := fs.String("queue-url", m.Getenv("GEOINGEST_QUEUE_URL"), "serve's queue, where a re-driven message goes (env GEOINGEST_QUEUE_URL): an SQS queue URL or azqueue://ACCOUNT/QUEUE")
	dlqURL := fs.String("dlq-url", m.Getenv("GEOINGEST_DLQ_URL"), "serve's dead-letter queue (env GEOINGEST_DLQ_URL)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	sub, rest := "", fs.Args()
	if len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	want := map[string]int{"list": 0, "redrive": 1, "delete": 1, "retry": 1}
	if n, ok := want[sub]; !ok || len(rest) != n {
		fmt.Fprintf(m.Stderr, "geoingest deadletters: want one of %s\n", strings.Join(subs, ", "))
		fs.Usage()
		return errUsage
	}
	if *format != "table" && *format != "json" {
		return m.badFormat("deadletters", *format, "table or json")
	}
	if *queueURL == "" || *dlqURL == "" {
		return errors.New("give --queue-url and --dlq-url (env GEOINGEST_QUEUE_URL, GEOINGEST_DLQ_URL): serve's queue and its dead-letter queue")
	}
	if err := awsf.validate(); err != nil {
		return err
	}
	box, err := m.deadLetterBox(ctx, awsf, *queueURL, *dlqURL)
	if err != nil {
		return err
	}
	out := func(v any, table func(*tabwriter.Writer)) error {
		if *format == "json" {
			return writeJSON(m.Stdout, v)
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		table(tw)
		return tw.Flush()
	}
	switch sub {
	case "list":
		dls, err := ingest.ListDeadLetters(ctx, box, queue.MaxDeadLetters)
		if err != nil {
			return err
		}
		return out(map[string]any{"dead_letters": dls}, func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tDEAD-LETTERED\tJOBS\tREASON")
			for _, dl := range dls {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", dl.ID, dl.SentAt.UTC().Format("2006-01-02 15:04:05Z"),
					strings.Join(dl.JobIDs, ","), oneLine(dl.Reason))
			}
		})
	case "redrive", "delete":
		act, done := box.RedriveDeadLetter, "re-driven"
		if sub == "delete" {
			act, done = box.DeleteDeadLetter, "deleted"
		}
		if err := act(ctx, rest[0]); err != nil {
			return err
		}
		m.Log.Info("dead letter "+done, "id", rest[0], "actor", cliActor())
		return out(map[string]string{"id": rest[0], "action": sub, "done": done}, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "%s %s\n", rest[0], done)
		})
	}
	// retry
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	jobs := postgis.NewConsole(a.pool)
	id, err := m.jobID(ctx, "deadletters retry", jobs, rest[0])
	if err != nil {
		return err
	}
	res, err := ingest.RetryFailedJob(ctx, jobs, box, id)
	if err != nil {
		return err
	}
	m.Log.Info("failed job retried: its dead letters re-driven", "job", res.JobID, "dead_letters", res.Redriven, "actor", cliActor())
	return out(res, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s retried: re-drove %s\n", res.JobID, strings.Join(res.Redriven, ", "))
	})
}

// deadLetterBox opens the dead-letter queue of serve's queue queueURL.
func (m *Main) deadLetterBox(ctx context.Context, awsf awsFlags, queueURL, dlqURL string) (queue.DeadLetterBox, error) {
	switch {
	case !strings.Contains(queueURL, "://"):
		return nil, errors.New("--queue-url: want serve's SQS queue URL or azqueue://ACCOUNT/QUEUE (an inbox's dead letters are re-driven from the console of the serve that owns it)")
	case strings.HasPrefix(queueURL, "pubsub://"):
		return nil, errors.New("a Pub/Sub dead-letter topic cannot be read by geoingest: read it with a subscription of your own, and publish a message again to serve's topic to retry it")
	case strings.HasPrefix(queueURL, "azqueue://"):
		account, qname, err := azqueue.ParseURL(queueURL)
		if err != nil {
			return nil, fmt.Errorf("--queue-url: %w", err)
		}
		dlAccount, dlName, err := azqueue.ParseURL(dlqURL)
		if err != nil {
			return nil, fmt.Errorf("--dlq-url: %w", err)
		}
		if dlAccount != account {
			return nil, fmt.Errorf("--dlq-url %s: want a queue of account %s, as serve does", dlqURL, account)
		}
		clients, err := newAzureClients(m.Getenv, account)
		if err != nil {
			return nil, err
		}
		q, err := clients.queue(qname)
		if err != nil {
			return nil, err
		}
		dlq, err := clients.queue(dlName)
		if err != nil {
			return nil, err
		}
		return azqueue.New(q, azqueue.Options{DeadLetter: dlq}), nil
	}
	cfg, err := m.loadAWSConfig(ctx, awsf)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return sqsqueue.New(m.newSQSClient(cfg), queueURL, sqsqueue.Options{DeadLetterURL: dlqURL}), nil
}

// oneLine is s on one line, for a table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cliActor names the operating-system user who acts, for the log.
func cliActor() string {
	if u, err := user.Current(); err == nil {
		return "cli:" + u.Username
	}
	return "cli"
}
