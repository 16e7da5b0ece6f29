//go:build !geoingest_testhooks

package testhook

// envHook is nil in a release build: Arm adds no hook.
var envHook func(point string)
