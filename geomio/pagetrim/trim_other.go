//go:build !linux || !cgo

package pagetrim

import "os"

// Trim does nothing in this build.
func Trim() (Result, error) { return Result{}, nil }

// TrimWith does nothing in this build.
func TrimWith(smaps *os.File) (Result, error) { return Result{}, nil }
