package testhook

import (
	"context"
	"testing"
)

// TestWithHook: a context's hooks are called in order with the point and
// where, either may ask to skip, and a context without one is left alone.
func TestWithHook(t *testing.T) {
	var got []string
	ctx := WithHook(context.Background(), func(point string, w Where) bool {
		got = append(got, "outer "+point+" "+w.Owner+" "+w.Job)
		return point == Heartbeat
	})
	ctx = WithHook(ctx, func(point string, w Where) bool {
		got = append(got, "inner "+point)
		return false
	})
	if At(ctx, BeforeWrite, Where{Owner: "a", Job: "j"}) {
		t.Error("BeforeWrite skipped")
	}
	if !At(ctx, Heartbeat, Where{Owner: "a", Job: "j"}) {
		t.Error("the outer hook's skip was lost")
	}
	want := []string{"outer before-write a j", "inner before-write", "outer heartbeat a j", "inner heartbeat"}
	if len(got) != len(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %q, want %q", i, got[i], want[i])
		}
	}
	if !Enabled(ctx) {
		t.Error("a context with a hook is enabled")
	}
	if At(context.Background(), Heartbeat, Where{}) {
		t.Error("no hook, no skip")
	}
}
