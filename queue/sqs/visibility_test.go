package sqs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVisibilitySeconds: a delay is rounded up to whole seconds and never
// asks for more than what is left of the 12 hours SQS allows from the
// receive (more is refused).
func TestVisibilitySeconds(t *testing.T) {
	for _, c := range []struct {
		d, age time.Duration
		want   int32
	}{
		{0, 0, 0},
		{1500 * time.Millisecond, 0, 2},
		{5 * time.Minute, time.Minute, 300},
		{12 * time.Hour, 0, 43199},
		{24 * time.Hour, 2 * time.Hour, 10*3600 - 1},
		{time.Hour, 12*time.Hour - 30*time.Second, 29},
		{time.Hour, 13 * time.Hour, 0},
		{-time.Second, 0, 0},
	} {
		require.Equal(t, c.want, visibilitySeconds(c.d, c.age), "delay %s, received %s ago", c.d, c.age)
	}
}
