//go:build !cgo

package validity

// Checker cannot decide in a build without cgo (no libgeos_c): Valid
// answers unknown, and the caller leaves the geometry to a checker that
// can (the database's ST_IsValid).
type Checker struct{}

// NewChecker returns a Checker.
func NewChecker() *Checker { return &Checker{} }

// Valid answers unknown.
func (v *Checker) Valid(wkb []byte) (valid, known bool) { return false, false }

// Close does nothing.
func (v *Checker) Close() {}
