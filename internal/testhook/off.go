//go:build !geoingest_testhooks

package testhook

// hook is nil in a release build: At does nothing.
var hook func(point string)
