package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/storage"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestGCPStackReadsAGenerationUnderAnyHostName is the compose stack's
// failure: geoingest reached the storage emulator under a host name that
// was not its --public-host, and every generation-pinned read failed with
// "no such object". Here the public host is gcp:4443 and the client uses
// 127.0.0.1: the upload's notification reaches the subscription, and the
// generation it names reads back whole.
func TestGCPStackReadsAGenerationUnderAnyHostName(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pubsubAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	storagePort := freePort(t)
	done := make(chan error, 1)
	go func() {
		done <- runGCP(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)),
			[]string{"--pubsub", pubsubAddr, "--storage-port", strconv.Itoa(storagePort), "--public-host", "gcp:4443"})
	}()
	t.Setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:"+strconv.Itoa(storagePort))
	t.Setenv("PUBSUB_EMULATOR_HOST", pubsubAddr)
	sc, err := storage.NewClient(ctx, option.WithoutAuthentication())
	require.NoError(t, err)
	defer sc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := sc.Bucket("uploads").Notifications(ctx)
		if err == nil && len(ns) == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("runGCP ended: %v", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the stack's bucket and notification: %v", err)
		time.Sleep(100 * time.Millisecond)
	}

	body := []byte(`{"type":"FeatureCollection","features":[]}`)
	w := sc.Bucket("uploads").Object("admin/admin.geojson").NewWriter(ctx)
	_, err = w.Write(body)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	gen := w.Attrs().Generation

	pc, err := pubsub.NewClient(ctx, "geoingest")
	require.NoError(t, err)
	defer pc.Close()
	rctx, stop := context.WithTimeout(ctx, 30*time.Second)
	var attrs map[string]string
	require.NoError(t, pc.Subscriber("geoingest").Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		attrs = m.Attributes
		m.Ack()
		stop()
	}))
	stop()
	require.Equal(t, "OBJECT_FINALIZE", attrs["eventType"])
	require.Equal(t, "admin/admin.geojson", attrs["objectId"])
	require.Equal(t, strconv.FormatInt(gen, 10), attrs["objectGeneration"])

	r, err := sc.Bucket("uploads").Object("admin/admin.geojson").Generation(gen).NewReader(ctx)
	require.NoError(t, err, "the generation-pinned read (the XML API) under a host name other than the public host")
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	r.Close()
	require.Equal(t, body, got)
	cancel()
	require.NoError(t, <-done)
}

// TestAzureStackTakesACurlUploadWithSAS is the Azure stack's upload path
// without Azure's tools: `geoingest-stack sas` signs a container SAS, curl
// puts a blob through the Event Grid stand-in with it, and the stand-in
// queues the blob's BlobCreated event.
func TestAzureStackTakesACurlUploadWithSAS(t *testing.T) {
	az := testsrv.Azurite(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queue, container := testsrv.Unique("stackq"), testsrv.Unique("stackc")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", az.ConnectionString)
	t.Setenv("STACK_AZURITE_BLOB_URL", az.BlobURL)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	done := make(chan error, 1)
	go func() {
		done <- runAzgrid(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)),
			[]string{"--listen", addr, "--queue", queue, "--container", container})
	}()
	q, err := sasQuery(az.ConnectionString, container, time.Hour)
	require.NoError(t, err)
	body := []byte(`{"type":"FeatureCollection","features":[]}`)
	url := "http://" + addr + "/" + testsrv.AzureAccount + "/" + container + "/admin/a%20b.geojson?" + q
	deadline := time.Now().Add(30 * time.Second)
	var resp *http.Response
	for {
		req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("x-ms-blob-type", "BlockBlob")
		resp, err = http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode != http.StatusNotFound { // the container is being made
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		require.True(t, time.Now().Before(deadline), "azgrid up: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "PUT with the SAS: %s", msg)

	got, err := az.Queues.NewQueueClient(queue).DequeueMessage(ctx, nil)
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	ev, err := base64.StdEncoding.DecodeString(*got.Messages[0].MessageText)
	require.NoError(t, err)
	require.Contains(t, string(ev), `"eventType":"Microsoft.Storage.BlobCreated"`)
	require.Contains(t, string(ev), `/containers/`+container+`/blobs/admin/a b.geojson"`)

	_, err = sasQuery("UseDevelopmentStorage=true", container, time.Hour)
	require.ErrorContains(t, err, "no AccountName and AccountKey")
	cancel()
	require.NoError(t, <-done)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testsrv.Stop()
	os.Exit(code)
}
