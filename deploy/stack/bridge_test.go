package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAWSEventKeys(t *testing.T) {
	in := `{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"uploads"},"object":{"key":"parcels/city a+b.geojson","size":12345678901234}}}]}`
	out, err := awsEventKeys([]byte(in))
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
	require.Equal(t, []string{"parcels/city+a%2Bb.geojson"}, eventKeys(out))

	test := `{"Service":"S3","Event":"s3:TestEvent"}`
	out, err = awsEventKeys([]byte(test))
	require.NoError(t, err)
	require.Equal(t, test, out, "a test event passes unchanged")

	_, err = awsEventKeys([]byte(`{"Records":[{"s3":{}}]}`))
	require.Error(t, err)
	_, err = awsEventKeys([]byte(`not json`))
	require.Error(t, err)
}
