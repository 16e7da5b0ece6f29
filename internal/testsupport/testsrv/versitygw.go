package testsrv

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
)

// VersitygwVersion is the versitygw release the tests are written against
// (scripts/setup.sh --test installs it).
const VersitygwVersion = "v1.8.0"

const versitygwModule = "github.com/versity/versitygw/cmd/versitygw"

// Versitygw starts versitygw (a real S3 server, out of process) on a free
// loopback port for the rest of the test: a posix backend in a temporary
// directory, versioning available (--versioning-dir; turn it on per bucket
// with NewBucket), root credentials AccessKey/SecretKey, and S3 event
// notifications for every bucket POSTed to webhookURL. versitygw POSTs an
// s3:TestEvent to webhookURL while it starts and refuses to start if
// nothing listens there, so the webhook must already answer.
//
// versitygw is looked up in PATH, else in $(go env GOPATH)/bin; when it is
// missing or does not start the test fails (like fauxqs: never a skip).
func Versitygw(t testing.TB, webhookURL string) *S3Server {
	t.Helper()
	return startVersitygw(t, "--event-webhook-url", webhookURL)
}

// VersitygwIAM starts versitygw as Versitygw does, without notifications
// and with its internal IAM (accounts in a temporary directory): root
// credentials AccessKey/SecretKey; CreateUser adds accounts, and bucket
// policies grant them access.
func VersitygwIAM(t testing.TB) *S3Server {
	t.Helper()
	return startVersitygw(t, "--iam-dir", t.TempDir())
}

// CreateUser adds an account of role "user" (no access to other accounts'
// buckets unless a bucket policy grants it) to a VersitygwIAM server,
// with versitygw's admin CLI.
func (s *S3Server) CreateUser(t testing.TB, access, secret string) {
	t.Helper()
	bin, err := versitygwBinary()
	if err != nil {
		t.Fatalf("testsrv: no versitygw: %v", err)
	}
	out, err := exec.Command(bin, "admin", "--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--endpoint-url", s.URL, "create-user", "--access", access, "--secret", secret, "--role", "user").CombinedOutput()
	if err != nil {
		t.Fatalf("testsrv: versitygw admin create-user %s: %v\n%s", access, err, out)
	}
}

// startVersitygw starts versitygw with the global options opts (before
// the posix backend's) for the rest of the test.
func startVersitygw(t testing.TB, opts ...string) *S3Server {
	t.Helper()
	bin, err := versitygwBinary()
	if err != nil {
		t.Fatalf("testsrv: no versitygw: %v (scripts/setup.sh --test installs it: go install %s@%s)",
			err, versitygwModule, VersitygwVersion)
	}
	if bi, err := buildinfo.ReadFile(bin); err == nil && bi.Main.Version != VersitygwVersion {
		t.Logf("testsrv: %s is versitygw %s; the tests are written against %s", bin, bi.Main.Version, VersitygwVersion)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("testsrv: versitygw: free port: %v", err)
	}
	root, versions := t.TempDir(), t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{"--port", addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--health", "/health", "--quiet"}, opts...)
	cmd := exec.Command(bin, append(args, "posix", "--versioning-dir", versions, root)...)
	logBuf := &testfiles.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logBuf, logBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testsrv: start versitygw: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	url := "http://" + addr
	if err := waitHealthy(url, exited); err != nil {
		// Not stop(): waitHealthy may have taken the exit already. The
		// goroutine above reaps the process.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("testsrv: versitygw %v:\n%s", err, logBuf.String())
	}
	t.Cleanup(stop)
	client := s3.NewFromConfig(awsConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(url)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &S3Server{URL: url, Client: client}
}

// versitygwBinary finds versitygw in PATH, else in $(go env GOPATH)/bin
// (where go install puts it when GOBIN is unset).
func versitygwBinary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("not in PATH, and go env GOPATH: %w", err)
	}
	var tried []string
	for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
		p := filepath.Join(dir, "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", errors.New("not in PATH nor at " + strings.Join(tried, ", "))
}
