package ingest

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// TestWithHook: a context's hooks are called in order with the point and
// where, either may ask to skip, and a context without one is left alone.
func TestWithHook(t *testing.T) {
	var got []string
	ctx := WithHook(context.Background(), func(point string, w HookWhere) bool {
		got = append(got, "outer "+point+" "+w.Owner+" "+w.Job)
		return point == HookHeartbeat
	})
	ctx = WithHook(ctx, func(point string, w HookWhere) bool {
		got = append(got, "inner "+point)
		return false
	})
	if HookAt(ctx, HookBeforeWrite, HookWhere{Owner: "a", Job: "j"}) {
		t.Error("HookBeforeWrite skipped")
	}
	if !HookAt(ctx, HookHeartbeat, HookWhere{Owner: "a", Job: "j"}) {
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
	if !Hooked(ctx) {
		t.Error("a context with a hook is hooked")
	}
	if Hooked(context.Background()) {
		t.Error("a context without a hook is not hooked")
	}
	if HookAt(context.Background(), HookHeartbeat, HookWhere{}) {
		t.Error("no hook, no skip")
	}
}

// TestHookReader: the point is reached once, when the first bytes have
// been read, and a context without a hook gets its reader back.
func TestHookReader(t *testing.T) {
	src := bytes.NewReader(make([]byte, 10))
	if HookReader(context.Background(), src, HookDuringDownload, HookWhere{}) != io.Reader(src) {
		t.Error("a context without a hook wrapped the reader")
	}
	var reached int
	ctx := WithHook(context.Background(), func(point string, _ HookWhere) bool {
		if point == HookDuringDownload {
			reached++
		}
		return false
	})
	r := HookReader(ctx, src, HookDuringDownload, HookWhere{})
	buf := make([]byte, 4)
	if _, err := r.Read(buf); err != nil || reached != 1 {
		t.Fatalf("after the first read: reached %d times, err %v", reached, err)
	}
	if _, err := io.ReadAll(r); err != nil || reached != 1 {
		t.Fatalf("after the rest: reached %d times, err %v", reached, err)
	}
}
