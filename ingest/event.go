package ingest

import (
	"fmt"
	"strings"
	"time"
)

// Event is one bucket event: one record of an S3 event notification, or
// one EventBridge event, as an ObjectSource decodes them (ingest/s3).
type Event struct {
	// Name is the event name without the "s3:" prefix, e.g.
	// "ObjectCreated:Put", "ObjectRemoved:Delete", "TestEvent". An
	// EventBridge event is named from its detail-type and reason, e.g.
	// "ObjectCreated:PutObject".
	Name string
	Time time.Time
	// Bucket is the bucket name.
	Bucket string
	// RawKey is the key as the event carries it (URL-encoded in S3
	// notifications, plain in EventBridge events).
	RawKey string
	// Key is the decoded object key.
	Key string
	// Size is the object's size in bytes; -1 when the object was gone
	// when its event was decoded (an inbox file removed meanwhile).
	Size      int64
	ETag      string // without quotes
	VersionID string
	Sequencer string
	// Store names the object store the event comes from, as the scheme
	// of its URL: "" for S3 (and the inbox), StoreGCS, StoreAzure.
	Store string
}

// The object stores other than S3, as Event.Store names them.
const (
	StoreGCS   = "gs"
	StoreAzure = "azblob"
)

// Test reports whether the event is the s3:TestEvent that S3 sends when a
// notification is configured.
func (e Event) Test() bool { return e.Name == "TestEvent" }

// Created reports whether the event says an object was created.
func (e Event) Created() bool { return strings.HasPrefix(e.Name, "ObjectCreated:") }

// Removed reports whether the event says an object was removed.
func (e Event) Removed() bool { return strings.HasPrefix(e.Name, "ObjectRemoved:") }

// Order is the event's order token for Source.Order: its time and its
// sequencer (see CompareOrder).
func (e Event) Order() string { return OrderFromEvent(e.Time, e.Sequencer) }

// VersionToken is the token that names the object's bytes: the versionId
// when the bucket is versioned, else the ETag.
func (e Event) VersionToken() string {
	if e.VersionID != "" {
		return e.VersionID
	}
	return e.ETag
}

// DeleteVersionToken names a removal event for its delete job: the delete
// marker's versionId when the bucket is versioned, else "delete:" and the
// event's sequencer (else its time).
func (e Event) DeleteVersionToken() string {
	if e.VersionID != "" {
		return e.VersionID
	}
	if e.Sequencer != "" {
		return "delete:" + e.Sequencer
	}
	return "delete:" + e.Time.UTC().Format(time.RFC3339Nano)
}

// String names the event: its name and the object it is about.
func (e Event) String() string {
	if e.Bucket == LocalBucket {
		return fmt.Sprintf("%s file://%s", e.Name, e.Key)
	}
	scheme := e.Store
	if scheme == "" {
		scheme = "s3"
	}
	return fmt.Sprintf("%s %s://%s/%s", e.Name, scheme, e.Bucket, e.Key)
}
