// Package azblob is the object source of Azure Blob Storage: it decodes
// the Microsoft.Storage.BlobCreated and BlobDeleted events that Event Grid
// delivers to a Storage Queue (queue/azqueue) into ingest.Events, resolves
// the blob version an event names into a job source and a version-pinned
// fetch (through ingest/blobset), and lists the blobs under a prefix of a
// container for a backfill. It implements ingest.ObjectSource; the domain
// (package ingest) knows nothing of the Azure SDK.
//
// The version token is the blob's versionId when the account keeps
// versions, else its ETag (0x…): a read names that version, or sends
// If-Match with that ETag, so a later write is never read as this version.
// The event's sequencer orders the versions of one blob.
package azblob

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// gridEvent is one event in the Event Grid schema (or the CloudEvents
// schema: type, time, data are shared; subject too).
type gridEvent struct {
	Topic     string    `json:"topic"`
	Source    string    `json:"source"`
	Subject   string    `json:"subject"`
	EventType string    `json:"eventType"`
	Type      string    `json:"type"`
	EventTime time.Time `json:"eventTime"`
	Time      time.Time `json:"time"`
	ID        string    `json:"id"`
	Data      struct {
		API           string `json:"api"`
		ETag          string `json:"eTag"`
		ContentLength *int64 `json:"contentLength"`
		BlobType      string `json:"blobType"`
		URL           string `json:"url"`
		Sequencer     string `json:"sequencer"`
		VersionID     string `json:"versionId"`
	} `json:"data"`
}

// Event types of Blob Storage.
const (
	BlobCreated = "Microsoft.Storage.BlobCreated"
	BlobDeleted = "Microsoft.Storage.BlobDeleted"
	// validation is the event Event Grid sends when a subscription is
	// made: a test event.
	validation = "Microsoft.EventGrid.SubscriptionValidationEvent"
)

// ParseEvents decodes a Storage Queue message carrying Event Grid events:
// one event or an array of them, in the Event Grid or CloudEvents schema,
// as JSON or base64-encoded JSON (Event Grid's default for a Storage Queue
// destination). BlobCreated is a created event ("ObjectCreated:" and the
// API, e.g. PutBlob), BlobDeleted a removal ("ObjectRemoved:DeleteBlob"),
// the subscription validation event a test event; other types are neither
// and the trigger gate drops them.
//
// Bucket is the container and Key the blob name, from the subject
// (/blobServices/default/containers/C/blobs/NAME); RawKey is the name
// escaped as an S3 event would carry it, so that ingest.JobKey(container,
// RawKey, token, params) is the job's key. A body that is none of these is
// a Permanent error.
func ParseEvents(body []byte) ([]ingest.Event, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] != '{' && body[0] != '[' {
		dec, err := base64.StdEncoding.DecodeString(string(body))
		if err != nil {
			return nil, ingest.Permanentf("event: neither JSON nor base64-encoded JSON")
		}
		body = bytes.TrimSpace(dec)
	}
	var evs []gridEvent
	switch {
	case len(body) > 0 && body[0] == '[':
		if err := json.Unmarshal(body, &evs); err != nil {
			return nil, ingest.Permanentf("event: not an array of Event Grid events: %w", err)
		}
	default:
		var one gridEvent
		if err := json.Unmarshal(body, &one); err != nil {
			return nil, ingest.Permanentf("event: not an Event Grid event: %w", err)
		}
		evs = []gridEvent{one}
	}
	if len(evs) == 0 {
		return nil, ingest.Permanentf("event: an empty array of events")
	}
	out := make([]ingest.Event, 0, len(evs))
	for i, g := range evs {
		typ := g.EventType
		if typ == "" {
			typ = g.Type
		}
		t := g.EventTime
		if t.IsZero() {
			t = g.Time
		}
		if typ == validation {
			out = append(out, ingest.Event{Name: "TestEvent", Time: t, Store: ingest.StoreAzure})
			continue
		}
		if !strings.HasPrefix(typ, "Microsoft.Storage.") {
			return nil, ingest.Permanentf("event %d: type %q is not a Blob Storage event", i, typ)
		}
		container, name, ok := splitSubject(g.Subject)
		if !ok {
			return nil, ingest.Permanentf("event %d: subject %q names no container and blob", i, g.Subject)
		}
		ev := ingest.Event{Time: t, Bucket: container, Key: name, RawKey: escape(name), Size: -1,
			ETag: strings.Trim(g.Data.ETag, `"`), VersionID: g.Data.VersionID, Sequencer: g.Data.Sequencer, Store: ingest.StoreAzure}
		if g.Data.ContentLength != nil {
			ev.Size = *g.Data.ContentLength
		}
		api := g.Data.API
		if api == "" {
			api = strings.TrimPrefix(typ, "Microsoft.Storage.")
		}
		switch typ {
		case BlobCreated:
			if ev.Size < 0 {
				return nil, ingest.Permanentf("event %d: %s: no contentLength", i, g.Subject)
			}
			ev.Name = "ObjectCreated:" + api
		case BlobDeleted:
			ev.Name = "ObjectRemoved:" + api
		default:
			ev.Name = "ObjectOther:" + strings.TrimPrefix(typ, "Microsoft.Storage.")
		}
		out = append(out, ev)
	}
	return out, nil
}

// splitSubject splits /blobServices/default/containers/C/blobs/NAME.
func splitSubject(s string) (container, name string, ok bool) {
	rest, ok := strings.CutPrefix(s, "/blobServices/default/containers/")
	if !ok {
		return "", "", false
	}
	container, name, ok = strings.Cut(rest, "/blobs/")
	return container, name, ok && container != "" && name != ""
}

// Subject is the Event Grid subject of a blob.
func Subject(container, name string) string {
	return "/blobServices/default/containers/" + container + "/blobs/" + name
}

// escape is name as an S3 notification would carry it: UnquotePlus(escape(name)) == name.
func escape(name string) string { return url.QueryEscape(name) }
