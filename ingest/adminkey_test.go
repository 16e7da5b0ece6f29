package ingest

import (
	"regexp"
	"strings"
	"testing"
)

// adminKeyRE is the rule validAdminKey writes out, as it was first written.
var adminKeyRE = regexp.MustCompile(`^[\p{L}\p{N}_][\p{L}\p{N}_ .:-]{0,62}$`)

func TestValidAdminKey(t *testing.T) {
	for _, k := range []string{"name", "NAME_1", "_x", "9a", "région", "名前", "a b.c:d-e", strings.Repeat("x", 63)} {
		if !validAdminKey(k) {
			t.Errorf("%q refused", k)
		}
	}
	for _, k := range []string{"", " a", "-a", ".a", "a'", `a"`, "a;b", "a\n", strings.Repeat("x", 64), "\xff", "a\xffb"} {
		if validAdminKey(k) {
			t.Errorf("%q accepted", k)
		}
	}
}

// FuzzValidAdminKey: validAdminKey agrees with the regexp it replaces.
func FuzzValidAdminKey(f *testing.F) {
	for _, k := range []string{"name", "", " a", "a b", "région", "\xff", strings.Repeat("é", 63), strings.Repeat("é", 64)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := validAdminKey(k), adminKeyRE.MatchString(k); got != want {
			t.Fatalf("validAdminKey(%q) = %v, the regexp says %v", k, got, want)
		}
	})
}
