package ingest

import (
	"strings"

	"github.com/geoingest/geoingest/geomio"
)

// geomio's errors name no option (geomio.SetHints): they say what the
// user must give by code, and these are the words a user of geoingest
// gives it with, a CLI flag and the route option, so the message of a
// failed job still names both.
func init() { geomio.SetHints(OptionHint) }

// OptionHint is how a user of geoingest gives what a geomio code names:
// the phrase after "give it" for geomio.CodeCRS and geomio.CodeEncoding,
// and the flags and route option that read the layers args for
// geomio.CodeLayer; "" for any other code.
func OptionHint(code string, args []string) string {
	switch code {
	case geomio.CodeCRS:
		return "with --source-srid N (or the route option source-srid=N)"
	case geomio.CodeEncoding:
		return "with --encoding (or the route option encoding=)"
	case geomio.CodeLayer:
		flags := make([]string, len(args))
		for i, n := range args {
			flags[i] = "--layer " + shellQuote(n)
		}
		return strings.Join(flags, " ") + " (or the route option layer=" + strings.Join(args, "|") + ")"
	}
	return ""
}

// shellQuote is s as one word of a POSIX shell command line.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
