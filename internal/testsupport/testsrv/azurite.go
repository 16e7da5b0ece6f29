package testsrv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// AzuriteVersion is the Azurite release the tests run against.
const AzuriteVersion = "3.37.0"

// Azurite's well-known development account.
const (
	AzureAccount = "devstoreaccount1"
	AzureKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzureServer is a running Azurite (Blob and Queue services).
type AzureServer struct {
	// BlobURL and QueueURL are the account's endpoints
	// (http://127.0.0.1:PORT/devstoreaccount1).
	BlobURL, QueueURL string
	// ConnectionString names both, with the account's key
	// (AZURE_STORAGE_CONNECTION_STRING).
	ConnectionString string
	Blob             *azblob.Client
	Queues           *azqueue.ServiceClient
}

var (
	azuriteOnce sync.Once
	azuriteSrv  *AzureServer
	azuriteErr  error
	azuriteCmd  *exec.Cmd
	// azuriteExited delivers azuriteCmd's Wait (a goroutine waits on it
	// from its start, so that a start that fails is seen at once).
	azuriteExited <-chan error
)

// AzuriteEnv names an Azurite that every test binary shares instead of
// starting its own: its blob and queue endpoints, space-separated
// ("http://127.0.0.1:P/devstoreaccount1 http://127.0.0.1:Q/devstoreaccount1").
// scripts/test.sh starts one before go test, so that Node.js's start
// (a minute or more on a loaded 2-core machine) is paid once, early,
// not by each of the packages that use it while they run. The names the
// tests make are unique across processes (Unique).
const AzuriteEnv = "GEOINGEST_TEST_AZURITE"

// Azurite returns the test binary's Azurite: the shared one AzuriteEnv
// names, or one of its own started on first use (and installed from npm
// into CacheDir when missing) and stopped by Stop.
func Azurite(t testing.TB) *AzureServer {
	t.Helper()
	azuriteOnce.Do(func() {
		if v := os.Getenv(AzuriteEnv); v != "" {
			if azuriteSrv, azuriteErr = sharedAzurite(v); azuriteErr == nil {
				return
			}
			fmt.Fprintf(os.Stderr, "testsrv: %v; starting an Azurite of this test binary's own\n", azuriteErr)
		}
		azuriteSrv, azuriteErr = startAzurite()
	})
	if azuriteErr != nil {
		t.Fatalf("testsrv: Azurite: %v (needs node and npm, or azurite@%s installed under %s)", azuriteErr, AzuriteVersion, CacheDir())
	}
	return azuriteSrv
}

// azuriteCLI returns the path of Azurite's CLI script, installing the
// package with npm when it is missing.
func azuriteCLI() (string, error) {
	dir := CacheDir()
	cli := filepath.Join(dir, "node_modules", "azurite", "dist", "src", "azurite.js")
	pkg := filepath.Join(dir, "node_modules", "azurite", "package.json")
	if b, err := os.ReadFile(pkg); err == nil && bytes.Contains(b, []byte(`"version": "`+AzuriteVersion+`"`)) {
		if _, err := os.Stat(cli); err == nil {
			return cli, nil
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed (apt-get install nodejs npm): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir, "azurite@"+AzuriteVersion).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install azurite@%s into %s: %w\n%s", AzuriteVersion, dir, err, out)
	}
	return cli, nil
}

// sharedAzurite is the Azurite AzuriteEnv names, once it answers (it may
// still be starting).
func sharedAzurite(v string) (*AzureServer, error) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return nil, fmt.Errorf("%s=%q: want the blob and queue endpoints, space-separated", AzuriteEnv, v)
	}
	s := &AzureServer{BlobURL: f[0], QueueURL: f[1]}
	if err := waitAzurite(s, nil, nil); err != nil {
		return nil, fmt.Errorf("the shared Azurite (%s): %w", AzuriteEnv, err)
	}
	return s, s.clients()
}

func (s *AzureServer) clients() (err error) {
	s.ConnectionString = fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;QueueEndpoint=%s;",
		AzureAccount, AzureKey, s.BlobURL, s.QueueURL)
	if s.Blob, err = azblob.NewClientFromConnectionString(s.ConnectionString, nil); err != nil {
		return err
	}
	s.Queues, err = azqueue.NewServiceClientFromConnectionString(s.ConnectionString, nil)
	return err
}

// waitAzurite waits up to startTimeout for both endpoints to answer;
// exited (may be nil) reports the process's end, log its output.
func waitAzurite(s *AzureServer, exited <-chan error, log *bytes.Buffer) error {
	deadline := time.Now().Add(startTimeout)
	for _, u := range []string{s.BlobURL, s.QueueURL} {
		for {
			resp, err := http.Get(u + "?comp=list")
			if err == nil {
				resp.Body.Close()
				break
			}
			select {
			case werr := <-exited:
				return fmt.Errorf("azurite exited while starting (%v):\n%s", werr, log.String())
			default:
			}
			if time.Now().After(deadline) {
				out := ""
				if log != nil {
					out = log.String()
				}
				return fmt.Errorf("azurite did not answer at %s within %s: %w\n%s", u, startTimeout, err, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

func startAzurite() (*AzureServer, error) {
	cli, err := azuriteCLI()
	if err != nil {
		return nil, err
	}
	blobPort, err := freePort()
	if err != nil {
		return nil, err
	}
	queuePort, err := freePort()
	if err != nil {
		return nil, err
	}
	tablePort, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", cli, "--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--disableProductStyleUrl",
		"--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1", "--tableHost", "127.0.0.1",
		"--blobPort", fmt.Sprint(blobPort), "--queuePort", fmt.Sprint(queuePort), "--tablePort", fmt.Sprint(tablePort))
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start azurite: %w", err)
	}
	s := &AzureServer{BlobURL: fmt.Sprintf("http://127.0.0.1:%d/%s", blobPort, AzureAccount),
		QueueURL: fmt.Sprintf("http://127.0.0.1:%d/%s", queuePort, AzureAccount)}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitAzurite(s, exited, &logBuf); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		return nil, err
	}
	azuriteCmd, azuriteExited = cmd, exited
	return s, s.clients()
}

func stopAzurite() {
	if azuriteCmd != nil && azuriteCmd.Process != nil {
		_ = syscall.Kill(-azuriteCmd.Process.Pid, syscall.SIGKILL)
		<-azuriteExited
		azuriteCmd = nil
	}
}

// NewQueue creates a fresh queue and returns its client.
func (s *AzureServer) NewQueue(t testing.TB, prefix string) *azqueue.QueueClient {
	t.Helper()
	q := s.Queues.NewQueueClient(lowerName(Unique(prefix)))
	if _, err := q.Create(context.Background(), nil); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	return q
}

// NewContainer creates a fresh container and returns its name.
func (s *AzureServer) NewContainer(t testing.TB, prefix string) string {
	t.Helper()
	name := lowerName(Unique(prefix))
	if _, err := s.Blob.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}

// lowerName is s as a queue or container name: lower case letters, digits
// and hyphens.
func lowerName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		default:
			b[i] = '-'
		}
	}
	return string(b)
}
