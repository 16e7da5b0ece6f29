package ingest_test

import (
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
)

func init() { ingest.SetTestFiles(localfs.Files{}, localfs.List) }
