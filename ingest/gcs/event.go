// Package gcs is the object source of Google Cloud Storage: it decodes the
// object notifications that Cloud Storage publishes to Pub/Sub (as
// queue/pubsub delivers them) into ingest.Events, resolves the object
// generation an event names into a job source and a generation-pinned
// fetch (through ingest/blobset), and lists the live objects under a
// prefix for a backfill. It implements ingest.ObjectSource; the domain
// (package ingest) knows nothing of the Google SDK.
//
// The object's generation is its version token: Cloud Storage gives every
// write of a name a new, larger generation, so it both names the bytes and
// orders the versions of one name (it is the event's sequencer).
package gcs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// pushEnvelope is a Pub/Sub message as queue/pubsub delivers its body (the
// JSON of a Pub/Sub push request): the notification's attributes, and its
// data, the object's JSON resource (payload format JSON_API_V1).
type pushEnvelope struct {
	Message *struct {
		Attributes  map[string]string `json:"attributes"`
		Data        string            `json:"data"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// objectResource is the part of the JSON API object resource an event
// needs (every number in it is a string).
type objectResource struct {
	Name       string `json:"name"`
	Bucket     string `json:"bucket"`
	Generation string `json:"generation"`
	Size       string `json:"size"`
	MD5Hash    string `json:"md5Hash"`
}

// Cloud Storage's event types (the eventType attribute).
const (
	ObjectFinalize       = "OBJECT_FINALIZE"
	ObjectDelete         = "OBJECT_DELETE"
	ObjectArchive        = "OBJECT_ARCHIVE"
	ObjectMetadataUpdate = "OBJECT_METADATA_UPDATE"
)

// ParseEvents decodes a Pub/Sub message (the push-request JSON that
// queue/pubsub delivers) carrying a Cloud Storage notification into one
// event. OBJECT_FINALIZE is a created event ("ObjectCreated:OBJECT_FINALIZE").
// OBJECT_DELETE and OBJECT_ARCHIVE are a removal ("ObjectRemoved:...")
// when the object was deleted, and neither created nor removed (dropped by
// the trigger gate) when a new generation replaced it (the
// overwrittenByGeneration attribute): that generation's own FINALIZE is
// the event that counts. Metadata updates are dropped the same way.
//
// Key is the object name as it is; RawKey is it escaped as an S3 event
// would carry it (url.QueryEscape), so that ingest.JobKey(bucket, RawKey,
// generation, params) is the job's key. VersionID is the generation in
// decimal; Sequencer, for a created event, the generation in hex, which
// orders the versions of one name. A body that is not such a message is a
// Permanent error.
func ParseEvents(body []byte) ([]ingest.Event, error) {
	var env pushEnvelope
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&env); err != nil {
		return nil, ingest.Permanentf("event: not a JSON object: %w", err)
	}
	if env.Message == nil || env.Message.Attributes == nil {
		return nil, ingest.Permanentf("event: not a Pub/Sub message with attributes")
	}
	a := env.Message.Attributes
	typ, bucket, name := a["eventType"], a["bucketId"], a["objectId"]
	if typ == "" || bucket == "" || name == "" {
		return nil, ingest.Permanentf("event: not a Cloud Storage notification (no eventType, bucketId or objectId attribute)")
	}
	gen, err := strconv.ParseInt(a["objectGeneration"], 10, 64)
	if err != nil || gen <= 0 {
		return nil, ingest.Permanentf("event: gs://%s/%s: objectGeneration %q is not a generation", bucket, name, a["objectGeneration"])
	}
	ev := ingest.Event{Bucket: bucket, Key: name, RawKey: escape(name), Size: -1,
		VersionID: strconv.FormatInt(gen, 10), Store: ingest.StoreGCS}
	ev.Time = env.Message.PublishTime
	if t, err := time.Parse(time.RFC3339Nano, a["eventTime"]); err == nil {
		ev.Time = t
	}
	if env.Message.Data != "" {
		raw, err := base64.StdEncoding.DecodeString(env.Message.Data)
		if err != nil {
			return nil, ingest.Permanentf("event: gs://%s/%s: data is not base64: %w", bucket, name, err)
		}
		var o objectResource
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, ingest.Permanentf("event: gs://%s/%s: data is not an object resource (payload format JSON_API_V1): %w", bucket, name, err)
		}
		if o.Size != "" {
			if ev.Size, err = strconv.ParseInt(o.Size, 10, 64); err != nil {
				return nil, ingest.Permanentf("event: gs://%s/%s: size %q: %w", bucket, name, o.Size, err)
			}
		}
		ev.ETag = o.MD5Hash
	}
	switch typ {
	case ObjectFinalize:
		if ev.Size < 0 {
			return nil, ingest.Permanentf("event: gs://%s/%s: no object resource in the notification: create it with payload format JSON_API_V1", bucket, name)
		}
		ev.Name = "ObjectCreated:" + typ
		ev.Sequencer = fmt.Sprintf("%016X", gen)
	case ObjectDelete, ObjectArchive:
		if a["overwrittenByGeneration"] != "" {
			ev.Name = "ObjectReplaced:" + typ
		} else {
			ev.Name = "ObjectRemoved:" + typ
		}
	default:
		ev.Name = "ObjectOther:" + typ
	}
	return []ingest.Event{ev}, nil
}

// escape is name as an S3 notification would carry it: UnquotePlus(escape(name)) == name.
func escape(name string) string { return url.QueryEscape(name) }
