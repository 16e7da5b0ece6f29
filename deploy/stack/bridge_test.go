package main

import (
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/vgwnotify"
	"github.com/stretchr/testify/require"
)

func TestEventKeys(t *testing.T) {
	in := `{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"uploads"},"object":{"key":"parcels/city a+b.geojson","size":1}}}]}`
	out, err := vgwnotify.AWSKeys([]byte(in))
	require.NoError(t, err)
	require.Equal(t, []string{"parcels/city+a%2Bb.geojson"}, eventKeys(out))
}
