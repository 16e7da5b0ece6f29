// Package testhook adapts the environment to the domain's hook points
// (ingest.Hook), for the crash tests: in a binary built with the build tag
// geoingest_testhooks, as the crash tests of cmd/geoingest and the chaos
// suite build it, Arm gives the process's root context a hook that the
// environment decides, once per process:
//
//	GEOINGEST_TEST_CRASH_AT=POINT   the process SIGKILLs itself at POINT
//	GEOINGEST_TEST_PAUSE_AT=POINT   the process stops at POINT until killed,
//	                                after writing GEOINGEST_TEST_MARKER (a
//	                                file path) if that is set
//
// POINT is one of ingest's Hook* names. Only the first time a point is
// reached counts. In a release build (without the tag) Arm returns its
// context as it is, and these variables are ignored.
//
// Only cmd/geoingest's main calls Arm; the domain never imports this
// package (in-process tests set their hooks with ingest.WithHook).
package testhook

import (
	"context"

	"github.com/geoingest/geoingest/ingest"
)

// Arm returns ctx with the environment's hook (a tagged build), or ctx
// itself (a release build).
func Arm(ctx context.Context) context.Context {
	if envHook == nil {
		return ctx
	}
	return ingest.WithHook(ctx, func(point string, _ ingest.HookWhere) bool {
		envHook(point)
		return false
	})
}
