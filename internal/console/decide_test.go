package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/console"
	"github.com/stretchr/testify/require"
)

// recordingDecider records the decision it is asked for.
type recordingDecider struct{ got []ingest.Decision }

func (d *recordingDecider) Decide(_ context.Context, job string, dec ingest.Decision) (ingest.DecisionResult, error) {
	d.got = append(d.got, dec)
	return ingest.DecisionResult{JobID: job, Action: "approved", Actor: dec.Actor}, nil
}

// TestScriptDecisionTakesItsJSONBody: a script that approves with
// `curl -H 'Authorization: Bearer TOKEN' -d '{"reason": "..."}'` sends its
// JSON as a form (curl's default Content-Type): the reason was read from
// the form, found empty, and the answer was "a decision needs a reason".
// A bearer request's body is now read as JSON when it is JSON, else as a
// form; with no reason the answer says how to give one.
func TestScriptDecisionTakesItsJSONBody(t *testing.T) {
	t.Parallel()
	dec := &recordingDecider{}
	srv := httptest.NewServer(console.New(console.Options{OperatorToken: "op", Decider: dec}))
	defer srv.Close()
	post := func(contentType, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/pending/j1/approve", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer op")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		b, _ := json.Marshal(out)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct{ ct, body, reason string }{
		{"application/x-www-form-urlencoded", `{"reason": "the county sold 190 parcels"}`, "the county sold 190 parcels"},
		{"", `{"reason": "no content type"}`, "no content type"},
		{"application/json", `{"reason": "as documented"}`, "as documented"},
		{"application/x-www-form-urlencoded", `reason=a+form`, "a form"},
	} {
		code, out := post(c.ct, c.body)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, c.reason, dec.got[len(dec.got)-1].Reason)
	}
	n := len(dec.got)
	code, out := post("application/x-www-form-urlencoded", `{"why": "x"}`)
	require.Equal(t, http.StatusBadRequest, code, out)
	require.Contains(t, out, `a JSON body {\"reason\": \"...\"} or a form field reason`)
	require.Len(t, dec.got, n, "nothing decided without a reason")
}
