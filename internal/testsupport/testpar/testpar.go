// Package testpar sets how many of a package's parallel tests run at once
// when the command line does not say.
//
// go test runs at most -parallel tests of a package at once, and -parallel
// defaults to GOMAXPROCS: 2 on a 2-core CI machine. That suits tests that
// keep a core busy. Tests that mostly wait (a visibility timeout, a lease,
// a child process's start, a long poll) leave the cores idle at that
// width, and the package's wall time is the sum of their waits divided by
// two. Such a package's TestMain calls Default with a width its tests'
// CPU allows; `go test -parallel N` still overrides it.
package testpar

import (
	"flag"
	"strconv"
)

// Default sets -test.parallel to n unless it was given on the command line.
// Call it from TestMain, before m.Run. It parses the command line (m.Run
// would too).
func Default(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && flag.Lookup("test.parallel") != nil {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
