// Package azgrid stands in for Event Grid in front of Azurite, which sends
// no events: a reverse proxy to Azurite's Blob service that, after each
// blob write that succeeded (Put Blob, Put Block List, Copy Blob) and each
// delete, puts a Microsoft.Storage.BlobCreated or BlobDeleted event in the
// Event Grid schema on a Storage Queue, base64-encoded, as Event Grid's
// Storage Queue destination does. Uploaders talk to the proxy; readers may
// talk to Azurite directly. Each event carries the write's ETag (and
// versionId when the service returned one), the blob's length, and a
// sequencer that grows with every event, as Blob Storage's grows with
// every write of a blob.
package azgrid

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// Bridge is the proxy. Its zero value is not usable: see New.
type Bridge struct {
	proxy  *httputil.ReverseProxy
	blob   *azblob.Client
	queues []*azqueue.QueueClient
	// Copies is how many times each event is put on each queue (2 or
	// more: a redelivery of every event).
	Copies int
	seq    atomic.Int64

	mu   sync.Mutex
	sent []string
	errs []error
}

// New returns a bridge to the Blob endpoint target
// (http://HOST:PORT/ACCOUNT), reading blob properties with blob and
// putting events on every queue given.
func New(target string, blob *azblob.Client, queues ...*azqueue.QueueClient) (*Bridge, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	u.Path = ""
	b := &Bridge{blob: blob, queues: queues, Copies: 1}
	b.proxy = httputil.NewSingleHostReverseProxy(u)
	b.proxy.ModifyResponse = b.observe
	b.seq.Store(time.Now().UnixNano())
	return b, nil
}

// ServeHTTP proxies r to Azurite.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.proxy.ServeHTTP(w, r) }

// Sent returns the messages put on the queues so far (one per event).
func (b *Bridge) Sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.sent...)
}

// Errors returns the bridge's failures to put an event.
func (b *Bridge) Errors() []error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]error(nil), b.errs...)
}

// Send puts body on every queue once more: a redelivery.
func (b *Bridge) Send(ctx context.Context, body string) error {
	for _, q := range b.queues {
		if _, err := q.EnqueueMessage(ctx, body, nil); err != nil {
			return err
		}
	}
	return nil
}

// observe turns a successful write or delete into an event.
func (b *Bridge) observe(resp *http.Response) error {
	r := resp.Request
	q := r.URL.Query()
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3) // account, container, blob
	if len(parts) < 3 || parts[2] == "" || q.Get("restype") != "" {
		return nil
	}
	container, name := parts[1], parts[2]
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	var typ, api string
	switch {
	case r.Method == http.MethodPut && resp.StatusCode == http.StatusCreated && q.Get("comp") == "" && r.Header.Get("x-ms-copy-source") != "":
		typ, api = "Microsoft.Storage.BlobCreated", "CopyBlob"
	case r.Method == http.MethodPut && resp.StatusCode == http.StatusCreated && q.Get("comp") == "":
		typ, api = "Microsoft.Storage.BlobCreated", "PutBlob"
	case r.Method == http.MethodPut && resp.StatusCode == http.StatusCreated && q.Get("comp") == "blocklist":
		typ, api = "Microsoft.Storage.BlobCreated", "PutBlockList"
	case r.Method == http.MethodDelete && resp.StatusCode == http.StatusAccepted:
		typ, api = "Microsoft.Storage.BlobDeleted", "DeleteBlob"
	default:
		return nil
	}
	data := map[string]any{"api": api, "blobType": "BlockBlob",
		"url":       "https://" + parts[0] + ".blob.core.windows.net/" + container + "/" + parts[2],
		"sequencer": fmt.Sprintf("%032X", b.seq.Add(1))}
	if typ == "Microsoft.Storage.BlobCreated" {
		etag := strings.Trim(resp.Header.Get("ETag"), `"`)
		data["eTag"] = etag
		if v := resp.Header.Get("x-ms-version-id"); v != "" {
			data["versionId"] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p, err := b.blob.ServiceClient().NewContainerClient(container).NewBlobClient(name).GetProperties(ctx, nil)
		cancel()
		if err != nil {
			b.fail(fmt.Errorf("properties of %s/%s: %w", container, name, err))
			return nil
		}
		data["contentLength"] = *p.ContentLength
	}
	ev, err := json.Marshal(map[string]any{
		"topic":   "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/azurite/providers/Microsoft.Storage/storageAccounts/" + parts[0],
		"subject": "/blobServices/default/containers/" + container + "/blobs/" + name, "eventType": typ,
		"eventTime": time.Now().UTC().Format(time.RFC3339Nano), "id": fmt.Sprint(b.seq.Load()), "data": data,
		"dataVersion": "", "metadataVersion": "1"})
	if err != nil {
		return err
	}
	body := base64.StdEncoding.EncodeToString(ev)
	for i := 0; i < max(1, b.Copies); i++ {
		if err := b.Send(context.Background(), body); err != nil {
			b.fail(err)
			return nil
		}
	}
	b.mu.Lock()
	b.sent = append(b.sent, body)
	b.mu.Unlock()
	return nil
}

func (b *Bridge) fail(err error) {
	b.mu.Lock()
	b.errs = append(b.errs, err)
	b.mu.Unlock()
}
