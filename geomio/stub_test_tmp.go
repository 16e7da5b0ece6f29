package geomio

func openZip(path string, opts Options) (Reader, error) {
	return nil, &Error{File: path, Problem: "unsupported format"}
}
func openShapefile(path, name string, opts Options) (Reader, error) {
	return nil, &Error{File: path, Problem: "unsupported format"}
}
