package ingest

import (
	"strings"
	"time"
)

// Order tokens order the versions of one source. A token has a time part,
// a sequencer part, or both: "t<UTC time, fixed width>" then
// "s<S3 sequencer, upper-case hex left-padded to 64 digits>". See
// CompareOrder for how two tokens compare.

// OrderFromTime is an order token for a version known by its time only (a
// local file's modification time, an object listed by a backfill).
func OrderFromTime(t time.Time) string {
	return "t" + t.UTC().Format(orderTimeLayout)
}

const orderTimeLayout = "20060102T150405.000000000"

// OrderFromSequencer is an order token for an S3 event sequencer alone.
func OrderFromSequencer(seq string) string {
	return "s" + padSequencer(seq)
}

// OrderFromEvent is the order token of a bucket event: its time, and its
// sequencer when it has one.
func OrderFromEvent(t time.Time, seq string) string {
	o := OrderFromTime(t)
	if seq != "" {
		o += "s" + padSequencer(seq)
	}
	return o
}

func padSequencer(seq string) string {
	seq = strings.ToUpper(seq)
	if len(seq) < 64 {
		seq = strings.Repeat("0", 64-len(seq)) + seq
	}
	return seq
}

// splitOrder returns a token's time and sequencer parts ("" when absent).
func splitOrder(o string) (tm, seq string) {
	if rest, ok := strings.CutPrefix(o, "t"); ok {
		tm, o = rest, ""
		if i := strings.IndexByte(rest, 's'); i >= 0 {
			tm, o = rest[:i], rest[i:]
		}
	}
	if rest, ok := strings.CutPrefix(o, "s"); ok {
		seq = rest
	}
	return tm, seq
}

// CompareOrder returns -1, 0 or +1 as version a is older than, as old as,
// or newer than version b of the same source. Two tokens with sequencers
// compare by sequencer (S3's own order for one key, as docs/design.md asks);
// otherwise by time, so that a version listed by a backfill (time only)
// and one announced by an event (time and sequencer) can be ordered. A
// token with neither part ("", from a source never written) is older than
// any other.
func CompareOrder(a, b string) int {
	if a == b {
		return 0
	}
	if a == "" || b == "" {
		if a == "" {
			return -1
		}
		return 1
	}
	at, as := splitOrder(a)
	bt, bs := splitOrder(b)
	if as != "" && bs != "" {
		return strings.Compare(as, bs)
	}
	return strings.Compare(at, bt)
}
