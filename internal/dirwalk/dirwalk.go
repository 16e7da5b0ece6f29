// Package dirwalk is the one directory walker of geoingest: the inbox
// (queue.Inbox) and the local backfill listing both see the same files.
package dirwalk

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
)

// File is one regular file found by Walk.
type File struct {
	// Path is the file's path: dir joined with Rel.
	Path string
	// Rel is the path relative to dir, with forward slashes: what routes
	// match.
	Rel  string
	Info fs.FileInfo
}

// Walk calls fn for every regular file under dir, in lexical order.
// Hidden files and directories (a name starting with ".") below dir are
// skipped, and so is anything that is not a regular file (symbolic links
// included). An error reading dir itself is returned. An error on an entry
// below it (a file removed mid-walk, an unreadable directory) is returned
// too, unless skipErrors, which passes over that entry. Walk stops with
// ctx's error when ctx ends, and with fn's error when fn fails.
func Walk(ctx context.Context, dir string, skipErrors bool, fn func(File) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir || !skipErrors {
				return err
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if skipErrors {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return fn(File{Path: p, Rel: filepath.ToSlash(rel), Info: info})
	})
}
