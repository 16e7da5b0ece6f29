package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	ingests3 "github.com/geoingest/geoingest/ingest/s3"
)

// notification is one bucket notification versitygw POSTed, as it is sent
// to SQS.
type notification struct {
	body string
	key  string // the decoded key ("" for the s3:TestEvent)
	etag string
}

// webhook receives versitygw's bucket notifications and keeps them, in
// arrival order, for the deliverer: it stands in for S3's own delivery to
// SQS, which the suite replaces with 1-3 copies of each in shuffled order.
type webhook struct {
	url string

	mu     sync.Mutex
	got    []notification
	errors []string
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{}
	ts := httptest.NewServer(http.HandlerFunc(w.serveHTTP))
	t.Cleanup(ts.Close)
	w.url = ts.URL + "/events"
	return w
}

func (w *webhook) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		var n notification
		if n, err = toNotification(raw); err == nil {
			w.mu.Lock()
			w.got = append(w.got, n)
			w.mu.Unlock()
			rw.WriteHeader(http.StatusNoContent)
			return
		}
	}
	w.mu.Lock()
	w.errors = append(w.errors, fmt.Sprintf("%v: %s", err, raw))
	w.mu.Unlock()
	http.Error(rw, err.Error(), http.StatusBadRequest)
}

// since returns the notifications received after the first i.
func (w *webhook) since(i int) []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i >= len(w.got) {
		return nil
	}
	return append([]notification(nil), w.got[i:]...)
}

func (w *webhook) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

func (w *webhook) failures() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.errors...)
}

// toNotification makes the SQS body of what versitygw POSTed: its object
// keys URL-encoded as AWS encodes them in notifications (versitygw v1.8.0
// sends them decoded; see awsEventKeys in cmd/geoingest's versitygw test),
// everything else as it came.
func toNotification(raw []byte) (notification, error) {
	var n map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return notification{}, err
	}
	recs, ok := n["Records"].([]any)
	if !ok {
		return notification{body: string(raw)}, nil // the s3:TestEvent
	}
	for i, r := range recs {
		rec, _ := r.(map[string]any)
		s3, _ := rec["s3"].(map[string]any)
		obj, _ := s3["object"].(map[string]any)
		key, ok := obj["key"].(string)
		if !ok {
			return notification{}, fmt.Errorf("record %d has no s3.object.key", i)
		}
		segs := strings.Split(key, "/")
		for j, s := range segs {
			segs[j] = url.QueryEscape(s)
		}
		obj["key"] = strings.Join(segs, "/")
	}
	body, err := json.Marshal(n)
	if err != nil {
		return notification{}, err
	}
	evs, err := ingests3.ParseEvents(body)
	if err != nil {
		return notification{}, err
	}
	if len(evs) != 1 {
		return notification{}, fmt.Errorf("%d records, want 1", len(evs))
	}
	return notification{body: string(body), key: evs[0].Key, etag: evs[0].ETag}, nil
}
