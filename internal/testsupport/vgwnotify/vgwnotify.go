// Package vgwnotify adapts the bucket notifications versitygw sends to the
// form AWS S3 sends, for the end-to-end tests and the compose stack's
// webhook-to-SQS bridge (deploy/stack), which both carry versitygw's
// notifications into an SQS queue.
package vgwnotify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// AWSKeys returns an S3 notification from versitygw with its object
// keys URL-encoded as AWS encodes them, and everything else as it came.
//
// Why a rewrite at all: AWS's S3 notifications carry the object key
// URL-encoded, a space as '+' ("red flower.jpg" is "red+flower.jpg"), and
// geoingest decodes it with unquote_plus, as the job key's definition
// requires. versitygw v1.8.0 puts the decoded key into the record
// (s3event.createEventSchema joins the request's decoded path), so the key
// "parcels/city a+b.geojson" arrives as it is and would be read as
// "parcels/city a b.geojson". That is versitygw differing from AWS, not
// geoingest misreading AWS, so it is handled here. The rest of versitygw's
// record is passed on unchanged although it differs from AWS too in ways
// geoingest tolerates: eventName "s3:ObjectCreated:Put" (AWS: no "s3:"),
// the eTag with its quotes, eventTime to the second, a sequencer that is a
// per-process counter ("1", "2", ... "A"), and a null versionId even in a
// versioned bucket (for PutObject; so the version token is the ETag).
// Bodies without records (versitygw's s3:TestEvent) pass unchanged.
func AWSKeys(raw []byte) (string, error) {
	var n map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // sizes stay exact
	if err := dec.Decode(&n); err != nil {
		return "", err
	}
	recs, ok := n["Records"].([]any)
	if !ok {
		return string(raw), nil
	}
	for i, r := range recs {
		rec, _ := r.(map[string]any)
		s3, _ := rec["s3"].(map[string]any)
		obj, _ := s3["object"].(map[string]any)
		key, ok := obj["key"].(string)
		if !ok {
			return "", fmt.Errorf("record %d has no s3.object.key", i)
		}
		obj["key"] = EncodeKey(key)
	}
	out, err := json.Marshal(n)
	return string(out), err
}

// EncodeKey encodes a key as AWS does in notifications: form encoding
// ('+' for a space) of every path segment, '/' left as it is.
func EncodeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.QueryEscape(s)
	}
	return strings.Join(segs, "/")
}
