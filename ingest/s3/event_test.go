package s3_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/s3"
	"github.com/stretchr/testify/require"
)

// s3Notification is a notification as S3 sends it to SQS (the shape of
// the AWS documentation's example), with two records; the first key has
// a space ('+'), a literal plus (%2B) and a non-ASCII character.
const s3Notification = `{"Records":[
 {"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-west-2",
  "eventTime":"2024-03-01T12:00:01.123Z","eventName":"ObjectCreated:Put",
  "userIdentity":{"principalId":"AWS:AIDAJDPLRKLG7UEXAMPLE"},
  "requestParameters":{"sourceIPAddress":"127.0.0.1"},
  "responseElements":{"x-amz-request-id":"C3D13FE58DE4C810","x-amz-id-2":"FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
  "s3":{"s3SchemaVersion":"1.0","configurationId":"testConfigRule",
   "bucket":{"name":"uploads","ownerIdentity":{"principalId":"A3NL1KOZZKExample"},"arn":"arn:aws:s3:::uploads"},
   "object":{"key":"parcels/St+Anne%2B2%C3%A9.geojson","size":1024,"eTag":"d41d8cd98f00b204e9800998ecf8427e",
    "versionId":"096fKKXTRTtl3on89fVO.nfljtsv6qko","sequencer":"0055AED6DCD90281E5"}}},
 {"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-west-2",
  "eventTime":"2024-03-01T12:00:02Z","eventName":"ObjectRemoved:Delete",
  "s3":{"s3SchemaVersion":"1.0","bucket":{"name":"uploads"},
   "object":{"key":"admin/old.zip","sequencer":"0055AED6DCD90281E6"}}}]}`

const testEvent = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-03-01T12:00:00.000Z","Bucket":"uploads","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`

// eventBridge is an S3 event as EventBridge delivers it to an SQS target:
// the key is not URL-encoded.
const eventBridge = `{"version":"0","id":"17793124-05d4-b198-2fde-7ededc63b103","detail-type":"Object Created",
 "source":"aws.s3","account":"111122223333","time":"2021-11-12T00:00:00Z","region":"ca-central-1",
 "resources":["arn:aws:s3:::uploads"],
 "detail":{"version":"0","bucket":{"name":"uploads"},
  "object":{"key":"admin/a b+c.zip","size":5,"etag":"b1946ac92492d2347c6235b4d2611184",
   "version-id":"IYV3p45BT0ac8hjHg1houSdS1a.Mro8e","sequencer":"617f08299329d189"},
  "request-id":"N4N7GDK58NMKJ12R","requester":"123456789012","source-ip-address":"1.2.3.4","reason":"PutObject"}}`

func snsWrap(t *testing.T, msg string) string {
	b, err := json.Marshal(map[string]string{
		"Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn": "arn:aws:sns:us-west-2:123456789012:uploads", "Subject": "Amazon S3 Notification",
		"Message": msg, "Timestamp": "2024-03-01T12:00:03.000Z", "SignatureVersion": "1",
		"Signature": "EXAMPLE", "SigningCertURL": "https://example.invalid/cert.pem", "UnsubscribeURL": "https://example.invalid/unsub",
	})
	require.NoError(t, err)
	return string(b)
}

func TestParseEventsS3Notification(t *testing.T) {
	for name, body := range map[string]string{"sqs": s3Notification, "sns": snsWrap(t, s3Notification)} {
		t.Run(name, func(t *testing.T) {
			evs, err := s3.ParseEvents([]byte(body))
			require.NoError(t, err)
			require.Len(t, evs, 2)
			e := evs[0]
			require.Equal(t, "ObjectCreated:Put", e.Name)
			require.True(t, e.Created())
			require.Equal(t, "uploads", e.Bucket)
			require.Equal(t, "parcels/St+Anne%2B2%C3%A9.geojson", e.RawKey)
			require.Equal(t, "parcels/St Anne+2é.geojson", e.Key)
			require.Equal(t, int64(1024), e.Size)
			require.Equal(t, "d41d8cd98f00b204e9800998ecf8427e", e.ETag)
			require.Equal(t, "096fKKXTRTtl3on89fVO.nfljtsv6qko", e.VersionID)
			require.Equal(t, "096fKKXTRTtl3on89fVO.nfljtsv6qko", e.VersionToken())
			require.Equal(t, "0055AED6DCD90281E5", e.Sequencer)
			require.Equal(t, time.Date(2024, 3, 1, 12, 0, 1, 123e6, time.UTC), e.Time.UTC())
			require.True(t, evs[1].Removed())
			require.Less(t, evs[0].Order(), evs[1].Order())
		})
	}
}

func TestParseEventsTestEvent(t *testing.T) {
	for _, body := range []string{testEvent, snsWrap(t, testEvent)} {
		evs, err := s3.ParseEvents([]byte(body))
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.True(t, evs[0].Test())
		require.Equal(t, "uploads", evs[0].Bucket)
	}
}

func TestParseEventsEventBridge(t *testing.T) {
	evs, err := s3.ParseEvents([]byte(eventBridge))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	e := evs[0]
	require.Equal(t, "ObjectCreated:PutObject", e.Name)
	require.True(t, e.Created())
	require.Equal(t, "admin/a b+c.zip", e.Key, "EventBridge keys are not URL-encoded: '+' stays '+'")
	require.Equal(t, int64(5), e.Size)
	require.Equal(t, "b1946ac92492d2347c6235b4d2611184", e.ETag)
	require.Equal(t, "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e", e.VersionID)
	require.Equal(t, "617f08299329d189", e.Sequencer)
}

func TestParseEventsRejectsGarbagePermanently(t *testing.T) {
	for _, body := range []string{``, `not json`, `{"hello":"world"}`, `[1,2]`,
		`{"Records":[{"eventSource":"aws:sqs","eventName":"x"}]}`, `{"Records":[{"eventSource":"aws:s3","s3":{}}]}`} {
		_, err := s3.ParseEvents([]byte(body))
		require.Error(t, err, body)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), body)
	}
}

// TestSequencerOrder: sequencers of different lengths compare as numbers.
func TestSequencerOrder(t *testing.T) {
	a := ingest.Event{Sequencer: "0055AED6DCD90281E5"}
	b := ingest.Event{Sequencer: "0055AED6DCD90281E5FF"}
	require.Less(t, a.Order(), b.Order())
}

func FuzzParseEvents(f *testing.F) {
	for _, s := range []string{s3Notification, testEvent, eventBridge} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := s3.ParseEvents(body)
		if err != nil {
			require.Equal(t, ingest.Permanent, ingest.KindOf(err))
			return
		}
		for _, e := range evs {
			if !e.Test() {
				require.NotEmpty(t, e.Bucket)
			}
		}
	})
}
