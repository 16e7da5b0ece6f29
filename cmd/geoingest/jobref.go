package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
)

// jobID is the job id that arg names, for command cmd ("jobs show",
// "pending approve", ...): arg itself, or the one job whose id starts
// with it (ingest.ResolveJobID: a prefix of at least 8 characters, as
// the tables print 12), read through store. Every command that takes a
// job id resolves it here. A prefix that starts several ids is a usage
// error (exit 2) that lists them. An unknown id, or a prefix shorter than
// 8 characters (with a note on stderr), is returned as it is, for the
// command to report as it always has ("no such job").
func (m *Main) jobID(ctx context.Context, cmd string, store any, arg string) (string, error) {
	if ingest.TooShortJobPrefix(arg) {
		fmt.Fprintf(m.Stderr, "geoingest %s: %s is not a job id, and too short to stand for one: give at least %d characters of the id\n",
			cmd, arg, ingest.MinJobIDPrefix)
		return arg, nil
	}
	p, ok := store.(ingest.JobIDPrefixes)
	if !ok {
		return arg, nil
	}
	id, err := ingest.ResolveJobID(ctx, p, arg)
	if errors.Is(err, ingest.ErrAmbiguousJob) {
		fmt.Fprintf(m.Stderr, "geoingest %s: %v\n", cmd, err)
		return "", errUsage
	}
	return id, err
}
