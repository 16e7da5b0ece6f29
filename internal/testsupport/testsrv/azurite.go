package testsrv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// Azurite returns the test binary's Azurite, started on first use (and
// installed from npm into CacheDir when missing) and stopped by Stop.
func Azurite(t testing.TB) *AzureServer {
	t.Helper()
	azuriteOnce.Do(func() { azuriteSrv, azuriteErr = startAzurite() })
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
	s.ConnectionString = fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;QueueEndpoint=%s;",
		AzureAccount, AzureKey, s.BlobURL, s.QueueURL)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
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
				return nil, fmt.Errorf("azurite exited while starting (%v):\n%s", werr, logBuf.String())
			default:
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
				return nil, fmt.Errorf("azurite did not answer at %s within %s: %w\n%s", u, startTimeout, err, logBuf.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	azuriteCmd, azuriteExited = cmd, exited
	if s.Blob, err = azblob.NewClientFromConnectionString(s.ConnectionString, nil); err != nil {
		return nil, err
	}
	if s.Queues, err = azqueue.NewServiceClientFromConnectionString(s.ConnectionString, nil); err != nil {
		return nil, err
	}
	return s, nil
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
