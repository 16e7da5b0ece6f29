package lonlat

import (
	"math"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		flat   []float64
		stride int
		slack  float64
		want   bool
	}{
		{[]float64{-180, -90, 180, 90}, 2, 0, true},
		{[]float64{180.0000019, 0}, 2, Slack, true},
		{[]float64{180.0000019, 0}, 2, 0, false},
		{[]float64{0, 90.01}, 2, Slack, false},
		{[]float64{500000, 6000000}, 2, Slack, false},
		{[]float64{0, 0, 1e9, 10, 10, 1e9}, 3, 0, true}, // z is not checked
		{[]float64{math.NaN(), 0}, 2, 0, true},
		{[]float64{math.Inf(1), 0}, 2, 0, false},
		{nil, 2, 0, true},
	} {
		if got := Within(c.flat, c.stride, c.slack); got != c.want {
			t.Errorf("Within(%v, %d, %g) = %v, want %v", c.flat, c.stride, c.slack, got, c.want)
		}
	}
}
