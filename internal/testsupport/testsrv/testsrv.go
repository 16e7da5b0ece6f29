// Package testsrv starts the servers that geoingest's queue and S3 tests
// talk to: fauxqs (an SQS-compatible server from npm) on a free loopback
// port, gofakes3 (an S3 server with versioning) in-process, and versitygw
// (a real S3 server with bucket notifications to a webhook; Versitygw) as
// a child process for the end-to-end test.
//
// When a server cannot be started the test fails with what to install: it
// never skips.
package testsrv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// FauxqsVersion is the fauxqs release the tests run against.
const FauxqsVersion = "1.9.2"

// Region and credentials that the test clients sign with.
const (
	Region    = "us-east-1"
	AccessKey = "test"
	SecretKey = "test"
)

// unavailable fails the test: a server that cannot be had is a failure,
// never a skip.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Fatalf("testsrv: "+format+" (needs node and npm, or fauxqs@"+FauxqsVersion+" installed under "+CacheDir()+")", args...)
}

// Env sets the AWS environment variables that point a client made with
// config.LoadDefaultConfig at the test servers, for the rest of the test.
// sqsURL or s3URL may be empty.
// (t.Setenv: the test cannot run in parallel; EnvOf can.)
func Env(t testing.TB, sqsURL, s3URL string) {
	for k, v := range EnvOf(t, sqsURL, s3URL) {
		t.Setenv(k, v)
	}
}

// EnvOf is Env's variables as a map, for a client that reads its
// environment through a function (geoingest's Main.Getenv) rather than from
// the process, so that tests using it can run in parallel. Add to it what
// else the client reads.
func EnvOf(t testing.TB, sqsURL, s3URL string) map[string]string {
	env := map[string]string{
		"AWS_REGION":                  Region,
		"AWS_ACCESS_KEY_ID":           AccessKey,
		"AWS_SECRET_ACCESS_KEY":       SecretKey,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
	}
	if sqsURL != "" {
		env["AWS_ENDPOINT_URL_SQS"] = sqsURL
	}
	if s3URL != "" {
		env["AWS_ENDPOINT_URL_S3"] = s3URL
	}
	return env
}

func awsConfig() aws.Config {
	return aws.Config{Region: Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")}
}

// SQSServer is a running fauxqs.
type SQSServer struct {
	// URL is the endpoint (http://127.0.0.1:PORT).
	URL    string
	Client *sqs.Client
}

var (
	fauxqsMu  sync.Mutex
	fauxqsSrv *SQSServer
	fauxqsErr error
	fauxqsCmd *exec.Cmd
)

// SQS returns the package's fauxqs server, starting it on first use
// (installing fauxqs with npm into CacheDir if needed). The server lives
// until Stop is called (from TestMain) or the test binary exits.
func SQS(t testing.TB) *SQSServer {
	t.Helper()
	fauxqsMu.Lock()
	defer fauxqsMu.Unlock()
	if fauxqsSrv == nil && fauxqsErr == nil {
		fauxqsSrv, fauxqsErr = startFauxqs()
	}
	if fauxqsErr != nil {
		unavailable(t, "no SQS server: %v", fauxqsErr)
	}
	return fauxqsSrv
}

// Stop stops a fauxqs started by SQS. Call it from TestMain after m.Run.
func Stop() {
	stopGCP()
	stopAzurite()
	fauxqsMu.Lock()
	defer fauxqsMu.Unlock()
	if fauxqsCmd != nil && fauxqsCmd.Process != nil {
		_ = syscall.Kill(-fauxqsCmd.Process.Pid, syscall.SIGKILL)
		_ = fauxqsCmd.Wait()
		fauxqsCmd = nil
	}
}

// CacheDir is where fauxqs is installed: $GEOINGEST_TEST_CACHE, else
// $HOME/.cache/geoingest-test.
func CacheDir() string {
	if d := os.Getenv("GEOINGEST_TEST_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "geoingest-test")
	}
	return filepath.Join(home, ".cache", "geoingest-test")
}

// fauxqsCLI returns the path of fauxqs's CLI script, installing the
// package with npm when it is missing.
func fauxqsCLI() (string, error) {
	dir := CacheDir()
	cli := filepath.Join(dir, "node_modules", "fauxqs", "dist", "cli.js")
	pkg := filepath.Join(dir, "node_modules", "fauxqs", "package.json")
	if b, err := os.ReadFile(pkg); err == nil && bytes.Contains(b, []byte(`"version": "`+FauxqsVersion+`"`)) {
		if _, err := os.Stat(cli); err == nil {
			return cli, nil
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed (apt-get install nodejs npm): %w", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed (apt-get install npm): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir, "fauxqs@"+FauxqsVersion)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install fauxqs@%s into %s: %w\n%s", FauxqsVersion, dir, err, out)
	}
	if _, err := os.Stat(cli); err != nil {
		return "", fmt.Errorf("fauxqs installed but %s is missing", cli)
	}
	return cli, nil
}

func startFauxqs() (*SQSServer, error) {
	cli, err := fauxqsCLI()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", cli)
	cmd.Env = append(os.Environ(), "FAUXQS_PORT="+strconv.Itoa(port), "FAUXQS_HOST=127.0.0.1",
		"FAUXQS_LOGGER=false", "FAUXQS_DEFAULT_REGION="+Region)
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fauxqs: %w", err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHealthy(url, nil); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("fauxqs: %w\n%s", err, logBuf.String())
	}
	fauxqsCmd = cmd
	client := sqs.NewFromConfig(awsConfig(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	return &SQSServer{URL: url, Client: client}, nil
}

var queueSeq struct {
	sync.Mutex
	n int
}

// NewQueue creates a fresh queue with the given visibility timeout and
// returns its URL.
func (s *SQSServer) NewQueue(t testing.TB, name string, visibility time.Duration) string {
	t.Helper()
	queueSeq.Lock()
	queueSeq.n++
	name = fmt.Sprintf("%s-%d-%d", name, os.Getpid(), queueSeq.n)
	queueSeq.Unlock()
	out, err := s.Client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: &name,
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))}})
	if err != nil {
		t.Fatalf("testsrv: create queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// S3Server is an in-process gofakes3 server.
type S3Server struct {
	URL    string
	Client *s3.Client
}

// S3 starts an in-process S3 server (gofakes3 with an in-memory, versioned
// backend) for the rest of the test.
func S3(t testing.TB) *S3Server {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend)
	ts := httptest.NewServer(faker.Server())
	t.Cleanup(ts.Close)
	client := s3.NewFromConfig(awsConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(ts.URL)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &S3Server{URL: ts.URL, Client: client}
}

// NewBucket creates a bucket, with versioning on when versioned.
func (s *S3Server) NewBucket(t testing.TB, name string, versioned bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("testsrv: create bucket %s: %v", name, err)
	}
	if versioned {
		if _, err := s.Client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &name,
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatalf("testsrv: enable versioning on %s: %v", name, err)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startTimeout is how long a test server may take to answer after it
// starts. A server that exits fails at once; one that is slow is waited
// for: on a fresh 2-core machine running the whole suite (load 20-30),
// Azurite's Node.js start alone took 54-87 s, for 5 s of CPU.
const startTimeout = 3 * time.Minute

// waitHealthy polls url/health until it answers 200 OK. It gives up after
// startTimeout, or as soon as exited (the server process's Wait result;
// nil if not watched) delivers.
func waitHealthy(url string, exited <-chan error) error {
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /health: %s", resp.Status)
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("exited while starting (%v)", werr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("did not answer on %s within %s: %v", url, startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
