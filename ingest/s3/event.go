// Package s3 is the object source of S3 and compatible stores
// (versitygw, MinIO): it decodes the event notifications that S3 sends
// (directly, through SNS, or through EventBridge) into ingest.Events,
// resolves the object version an event names into a job source and a
// version-pinned fetch, and lists the latest versions under a prefix for
// a backfill. It implements ingest.ObjectSource; the domain (package
// ingest) knows nothing of the AWS SDK.
package s3

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// s3Notification is the body S3 sends to SQS (or inside an SNS
// notification): several records, or a test event.
type s3Notification struct {
	Records []struct {
		EventSource string    `json:"eventSource"`
		EventName   string    `json:"eventName"`
		EventTime   time.Time `json:"eventTime"`
		S3          struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object struct {
				Key       string `json:"key"`
				Size      int64  `json:"size"`
				ETag      string `json:"eTag"`
				VersionID string `json:"versionId"`
				Sequencer string `json:"sequencer"`
			} `json:"object"`
		} `json:"s3"`
	} `json:"Records"`
	// The test event.
	Event  string    `json:"Event"`
	Time   time.Time `json:"Time"`
	Bucket string    `json:"Bucket"`
	// SNS envelope.
	Type    string `json:"Type"`
	Message string `json:"Message"`
	// EventBridge.
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	EBTime     time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

type eventBridgeDetail struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key       string `json:"key"`
		Size      int64  `json:"size"`
		ETag      string `json:"etag"`
		VersionID string `json:"version-id"`
		Sequencer string `json:"sequencer"`
	} `json:"object"`
	Reason       string `json:"reason"`
	DeletionType string `json:"deletion-type"`
}

// ParseEvents parses a queue message body into bucket events. It accepts an
// S3 event notification as S3 sends it to SQS (with any number of
// records), the same wrapped in an SNS notification (Type "Notification",
// the notification in Message), the s3:TestEvent, and an S3 event as
// EventBridge delivers it (detail-type "Object Created" etc., source
// "aws.s3"). S3 notification keys are URL-encoded with '+' for space and
// are decoded with ingest.UnquotePlus; EventBridge keys are not encoded and are
// kept as they are. Returns a Permanent error for a body that is none of
// these: retrying it cannot help.
func ParseEvents(body []byte) ([]ingest.Event, error) {
	return parseEvents(body, 0)
}

func parseEvents(body []byte, depth int) ([]ingest.Event, error) {
	var n s3Notification
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&n); err != nil {
		return nil, ingest.Permanentf("event: not a JSON object: %w", err)
	}
	switch {
	case n.Type == "Notification" && n.Message != "":
		if depth > 0 {
			return nil, ingest.Permanentf("event: SNS notification inside an SNS notification")
		}
		return parseEvents([]byte(n.Message), depth+1)
	case n.Event == "s3:TestEvent":
		return []ingest.Event{{Name: "TestEvent", Time: n.Time, Bucket: n.Bucket}}, nil
	case n.DetailType != "" && len(n.Detail) > 0:
		return parseEventBridge(n)
	case n.Records != nil:
		evs := make([]ingest.Event, 0, len(n.Records))
		for i, r := range n.Records {
			if r.EventSource != "" && r.EventSource != "aws:s3" && r.EventSource != "minio:s3" {
				return nil, ingest.Permanentf("event: record %d: event source %q is not S3", i, r.EventSource)
			}
			o := r.S3.Object
			if r.S3.Bucket.Name == "" || o.Key == "" {
				return nil, ingest.Permanentf("event: record %d: no bucket or key", i)
			}
			evs = append(evs, ingest.Event{
				Name: strings.TrimPrefix(r.EventName, "s3:"), Time: r.EventTime,
				Bucket: r.S3.Bucket.Name, RawKey: o.Key, Key: ingest.UnquotePlus(o.Key),
				Size: o.Size, ETag: strings.Trim(o.ETag, `"`), VersionID: o.VersionID, Sequencer: o.Sequencer,
			})
		}
		return evs, nil
	}
	return nil, ingest.Permanentf("event: unrecognised message (not an S3 notification, SNS notification or EventBridge event)")
}

// eventBridgeNames maps EventBridge detail-types to S3 event name prefixes.
var eventBridgeNames = map[string]string{
	"Object Created": "ObjectCreated",
	"Object Deleted": "ObjectRemoved",
}

func parseEventBridge(n s3Notification) ([]ingest.Event, error) {
	if n.Source != "" && n.Source != "aws.s3" {
		return nil, ingest.Permanentf("event: EventBridge source %q is not aws.s3", n.Source)
	}
	var d eventBridgeDetail
	if err := json.Unmarshal(n.Detail, &d); err != nil {
		return nil, ingest.Permanentf("event: EventBridge detail: %w", err)
	}
	name, ok := eventBridgeNames[n.DetailType]
	if !ok {
		// Restore, tagging, ACL, storage class...: not a change of bytes.
		name = strings.ReplaceAll(n.DetailType, " ", "")
	}
	reason := d.Reason
	if reason == "" {
		reason = d.DeletionType
	}
	o := d.Object
	if d.Bucket.Name == "" || o.Key == "" {
		return nil, ingest.Permanentf("event: EventBridge event has no bucket or key")
	}
	return []ingest.Event{{
		Name: name + ":" + reason, Time: n.EBTime, Bucket: d.Bucket.Name, RawKey: o.Key, Key: o.Key,
		Size: o.Size, ETag: strings.Trim(o.ETag, `"`), VersionID: o.VersionID, Sequencer: o.Sequencer,
	}}, nil
}
