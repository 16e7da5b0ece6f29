package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized reports whether r carries token: as a bearer token
// (Authorization: Bearer TOKEN), or as the password of basic
// authentication (what a browser prompts for). An empty token lets every
// request in. The comparison takes the same time whatever the guess: both
// sides are hashed to the same length and compared in constant time.
func authorized(r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	var got string
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		got = strings.TrimSpace(auth[7:])
	} else if _, pw, ok := r.BasicAuth(); ok {
		got = pw
	} else {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
