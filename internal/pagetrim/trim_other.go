//go:build !linux || !cgo

package pagetrim

// Trim does nothing in this build.
func Trim() (Result, error) { return Result{}, nil }
