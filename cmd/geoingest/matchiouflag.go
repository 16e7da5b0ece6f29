package main

import (
	"fmt"
	"strconv"
)

// matchIoUFlag is --match-iou: a ratio in (0, 1]. Params.MatchIoU takes 0
// for "unset" (the default, 0.9), so a flag given as 0 is refused here
// rather than read as the default, as a route's match-iou=0 is.
type matchIoUFlag struct{ v *float64 }

func (f matchIoUFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f matchIoUFlag) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x > 0 && x <= 1) { // NaN too
		return fmt.Errorf("want a ratio in (0, 1], not %q", s)
	}
	*f.v = x
	return nil
}
