package postgis

import "github.com/geoingest/geoingest/geomio"

func openLocal(path string) (geomio.Reader, error) { return geomio.Open(path, geomio.Options{}) }
