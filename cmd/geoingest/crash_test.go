package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// crashEnv is the rig of a crash test: its own database, queue, dead-
// letter queue and bucket, and the environment a `geoingest serve`
// subprocess needs to reach them. It sets no process-wide variables, so
// crash tests run in parallel.
type crashEnv struct {
	db, queueURL, dlqURL, bucket string
	sqs                          *testsrv.SQSServer
	s3                           *testsrv.S3Server
	env                          []string
}

func newCrashEnv(t *testing.T, name string) *crashEnv {
	t.Helper()
	c := &crashEnv{db: pgtest.NewDB(t), sqs: testsrv.SQS(t), s3: testsrv.S3(t), bucket: "uploads"}
	c.s3.NewBucket(t, c.bucket, true)
	c.queueURL = c.sqs.NewQueue(t, name, 30*time.Second)
	c.dlqURL = c.sqs.NewQueue(t, name+"-dlq", 30*time.Second)
	none := filepath.Join(t.TempDir(), "none")
	c.env = append(os.Environ(), "AWS_REGION="+testsrv.Region, "AWS_ACCESS_KEY_ID="+testsrv.AccessKey,
		"AWS_SECRET_ACCESS_KEY="+testsrv.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none,
		"AWS_ENDPOINT_URL_SQS="+c.sqs.URL, "AWS_ENDPOINT_URL_S3="+c.s3.URL,
		"GEOINGEST_HOME="+t.TempDir(), "GEOINGEST_TEST_CRASH_AT=", "GEOINGEST_TEST_PAUSE_AT=")
	return c
}

// worker is a `geoingest serve` subprocess (the test build of the binary,
// which honours internal/testhook's variables).
type worker struct {
	cmd    *exec.Cmd
	stderr *testfiles.SyncBuffer
	stdout *testfiles.SyncBuffer
	exited chan struct{}
}

// serve starts `geoingest serve` on the rig's queue with args after the
// defaults, and extra environment (testhook variables).
func (c *crashEnv) serve(t *testing.T, extraEnv []string, args ...string) *worker {
	t.Helper()
	all := append([]string{"serve", "--queue-url", c.queueURL, "--dlq-url", c.dlqURL, "--database-url", c.db,
		"--metrics-addr", "", "--wait", "1s", "--workers", "2", "--log-level", "info"}, args...)
	w := &worker{cmd: exec.Command(binary, all...), stderr: &testfiles.SyncBuffer{}, stdout: &testfiles.SyncBuffer{},
		exited: make(chan struct{})}
	w.cmd.Env = append(append([]string{}, c.env...), extraEnv...)
	w.cmd.Stderr, w.cmd.Stdout = w.stderr, w.stdout
	require.NoError(t, w.cmd.Start())
	go func() { _ = w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("serve %v:\n%s", args, w.stderr.String())
		}
	})
	return w
}

// httpAddr waits for the worker, started with --metrics-addr
// 127.0.0.1:0, to log the address its HTTP server listens on, and returns
// it. (A port found free and closed before the start could be taken by
// another test's server first.)
func (w *worker) httpAddr(t *testing.T) string {
	t.Helper()
	addr := ""
	eventually(t, 2*time.Minute, "serve's HTTP address in its log", func() bool {
		select {
		case <-w.exited:
			t.Fatalf("serve exited before it listened:\n%s", w.stderr.String())
		default:
		}
		addr = listenAddr(w.stderr.String())
		return addr != ""
	})
	return addr
}

// kill SIGKILLs the worker and waits for it to be gone.
func (w *worker) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

// stop SIGTERMs the worker and returns what it printed on stdout.
func (w *worker) stop(t *testing.T) string {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s:\n%s", w.stderr.String())
	}
	return w.stdout.String()
}

// killed reports whether the worker died of SIGKILL.
func (w *worker) killed() bool {
	select {
	case <-w.exited:
	default:
		return false
	}
	ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// committedOnce checks that the job of the rig's one upload is committed
// exactly once with all n features, that `geoingest verify` is clean, and
// that neither queue holds a message.
func (c *crashEnv) committedOnce(t *testing.T, n int) {
	t.Helper()
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
	require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM claims WHERE state = 'COMMITTED'`))
	require.EqualValues(t, n, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, n, queryInt(t, c.db, `SELECT count(DISTINCT feature_index) FROM parcels`))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
	require.Equal(t, 0, code, out+errOut)
	for _, u := range []string{c.queueURL, c.dlqURL} {
		out, err := c.sqs.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &u,
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 0})
		require.NoError(t, err)
		require.Empty(t, out.Messages, "queue %s is empty", u)
	}
}

// committed reports whether the job is committed.
func (c *crashEnv) committed(t *testing.T) bool {
	return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`) > 0
}

// TestServeKilledWorkerJobCommitsOnce is the reproduction of issue #10: a
// worker is SIGKILLed in the middle of a job (paused mid-COPY, its lease
// and the message's visibility still being renewed). With serve's default
// relation between the two (the lease, 5m, five times the visibility,
// 60s; here 20s and 2s), the message comes back to a second worker while
// the dead worker's lease is still live. That delivery finds the claim
// held: it is not a duplicate, and must be given back until the lease
// expires, when the next delivery takes the job over and commits it,
// exactly once. Before the fix it was acked and the upload was lost.
func TestServeKilledWorkerJobCommitsOnce(t *testing.T) {
	t.Parallel()
	// The lease leaves B, once serving, 18 s or more to meet it after the
	// kill, under a loaded CI machine too (B waits at most the visibility).
	const lease, visibility = 20 * time.Second, 2 * time.Second
	c := newCrashEnv(t, "killed")
	o := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 50), 1)
	sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
	args := []string{"--lease", lease.String(), "--visibility", visibility.String()}

	marker := filepath.Join(t.TempDir(), "paused")
	a := c.serve(t, []string{"GEOINGEST_TEST_PAUSE_AT=during-copy", "GEOINGEST_TEST_MARKER=" + marker}, args...)
	eventually(t, 60*time.Second, "worker A to be mid-COPY", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	b := c.serve(t, nil, args...)
	// B must be receiving before A dies: a process start slowed by a
	// loaded machine would otherwise meet the lease already ended.
	eventually(t, 60*time.Second, "worker B to be serving", func() bool {
		return strings.Contains(b.stderr.String(), "msg=serving")
	})
	// Let A renew its lease and the message's visibility at least once.
	time.Sleep(visibility)
	a.kill()
	killedAt := time.Now()
	t.Logf("worker A killed mid-COPY; its lease runs until %s",
		queryTime(t, c.db, `SELECT lease_until FROM claims`).Format(time.RFC3339Nano))

	eventually(t, lease+visibility+30*time.Second, "the job to be committed", func() bool { return c.committed(t) })
	t.Logf("committed %.1fs after the kill (lease %s, visibility %s)", time.Since(killedAt).Seconds(), lease, visibility)
	time.Sleep(500 * time.Millisecond) // the ack
	out := b.stop(t)
	c.committedOnce(t, 50)
	logs := b.stderr.String()
	require.Contains(t, logs, "claim held by another worker", "B met the dead worker's live lease")
	require.NotContains(t, logs, "duplicate stopped at the claim gate")
	require.Contains(t, out, "1 written")
	require.Regexp(t, `[1-9]\d* held elsewhere`, out)
}

func queryTime(t *testing.T, db, sql string) time.Time {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var v time.Time
	require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(&v))
	return v
}

// sqsEmpty reports whether the queue holds no message, visible, in flight
// or delayed.
func (c *crashEnv) sqsEmpty(t *testing.T) bool {
	return sqsDepth(t, c.sqs.Client, c.queueURL) == 0
}

// TestServeCrashPoints kills a `geoingest serve` worker with SIGKILL at
// each point of a job's life (internal/testhook makes the process kill
// itself there), then starts a second worker and lets it run with no one
// stepping in. At every point the job ends committed exactly once, the
// queue and the dead-letter queue empty, within about lease + visibility
// of the kill. "During the ack" is tested at both of its edges: the ack
// not yet done (before-ack: the message comes back and is a duplicate of
// the committed job) and done (after-ack: nothing comes back).
func TestServeCrashPoints(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	points := []string{ingest.HookBeforeClaim, ingest.HookAfterClaim, ingest.HookDuringDownload, ingest.HookDuringCopy,
		ingest.HookBeforeCommit, ingest.HookBeforeAck, ingest.HookAfterAck}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			c := newCrashEnv(t, "crash-"+point)
			o := upload(t, c.s3.Client, c.bucket, "parcels/county.geojson", squaresFile(t, 40), 1)
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, o))
			args := []string{"--lease", lease.String(), "--visibility", visibility.String()}

			a := c.serve(t, []string{"GEOINGEST_TEST_CRASH_AT=" + point}, args...)
			select {
			case <-a.exited:
			case <-time.After(90 * time.Second):
				t.Fatalf("worker A never reached %s:\n%s", point, a.stderr.String())
			}
			killedAt := time.Now()
			require.True(t, a.killed(), "worker A died of SIGKILL at %s:\n%s", point, a.stderr.String())
			wasCommitted := c.committed(t)
			require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM parcels WHERE job_ref NOT IN (SELECT job_ref FROM jobs)`),
				"an uncommitted transaction leaves nothing behind")

			b := c.serve(t, nil, args...)
			eventually(t, lease+visibility+60*time.Second, "the job committed and the queue drained", func() bool {
				return c.committed(t) && c.sqsEmpty(t)
			})
			t.Logf("killed at %s (committed before the kill: %v); committed and drained %.1fs after the kill (lease %s, visibility %s)",
				point, wasCommitted, time.Since(killedAt).Seconds(), lease, visibility)
			b.stop(t)
			c.committedOnce(t, 40)
		})
	}
}
