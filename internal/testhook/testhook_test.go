package testhook

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
)

// TestArm: a release build arms nothing, whatever the environment says;
// a tagged build (the crash tests' binary, which exercises the crash and
// pause end to end) arms a hook on the context, ahead of the test's own.
func TestArm(t *testing.T) {
	t.Setenv("GEOINGEST_TEST_CRASH_AT", "no-such-point")
	ctx := Arm(context.Background())
	if envHook == nil {
		if ingest.Hooked(ctx) {
			t.Fatal("a release build armed a hook")
		}
		return
	}
	if !ingest.Hooked(ctx) {
		t.Fatal("a tagged build armed no hook")
	}
	var reached []string
	ctx = ingest.WithHook(ctx, func(point string, _ ingest.HookWhere) bool {
		reached = append(reached, point)
		return false
	})
	if ingest.HookAt(ctx, ingest.HookBeforeCommit, ingest.HookWhere{}) || len(reached) != 1 {
		t.Fatalf("the test's hook after the armed one: reached %q", reached)
	}
}
