package vgwnotify

import (
	"encoding/json"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

func TestAWSKeyEncoding(t *testing.T) {
	for key, want := range map[string]string{
		"parcels/city a+b.geojson": "parcels/city+a%2Bb.geojson",
		"admin/admin.geojson":      "admin/admin.geojson",
		"a/%20/é.json":             "a/%2520/%C3%A9.json",
	} {
		got := EncodeKey(key)
		require.Equal(t, want, got)
		require.Equal(t, key, ingest.UnquotePlus(got), "geoingest decodes it back")
	}
}

func TestAWSEventKeys(t *testing.T) {
	in := `{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"uploads"},"object":{"key":"parcels/city a+b.geojson","size":12345678901234}}}]}`
	out, err := AWSKeys([]byte(in))
	require.NoError(t, err)
	var n struct {
		Records []struct {
			S3 struct {
				Object struct {
					Key  string
					Size json.Number
				}
			} `json:"s3"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &n))
	require.Equal(t, "parcels/city+a%2Bb.geojson", n.Records[0].S3.Object.Key)
	require.Equal(t, "12345678901234", n.Records[0].S3.Object.Size.String(), "sizes stay exact")

	test := `{"Service":"S3","Event":"s3:TestEvent"}`
	out, err = AWSKeys([]byte(test))
	require.NoError(t, err)
	require.Equal(t, test, out, "a test event passes unchanged")

	_, err = AWSKeys([]byte(`{"Records":[{"s3":{}}]}`))
	require.Error(t, err)
	_, err = AWSKeys([]byte(`not json`))
	require.Error(t, err)
}
