package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// truncatedParcels writes the first n features of the synthetic parcels
// (one feature a line) as a file of their own: the seed's truncated
// export.
func truncatedParcels(t *testing.T, dir string, n int) string {
	t.Helper()
	f, err := os.Open(synthParcels)
	require.NoError(t, err)
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Scan()
	out.WriteString(sc.Text() + "\n")
	for i := 0; i < n && sc.Scan(); i++ {
		line := strings.TrimSuffix(sc.Text(), ",")
		if i > 0 {
			out.WriteString(",\n")
		}
		out.WriteString(line)
	}
	out.WriteString("\n]}\n")
	p := filepath.Join(dir, "parcels_10k.geojson")
	require.NoError(t, os.WriteFile(p, []byte(out.String()), 0o644))
	return p
}

// areaReport is `report area --format csv`'s parcels column, summed.
func reportParcels(t *testing.T, env map[string]string) int {
	t.Helper()
	code, out, errOut := run(t, env, "report", "area", "--format", "csv")
	require.Equal(t, 0, code, errOut)
	total := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		var n int
		f := strings.Split(l, ",")
		_, err := fmt.Sscan(f[len(f)-3], &n)
		require.NoError(t, err, l)
		total += n
	}
	return total
}

// TestPendingTruncatedVersion: the seed's failure, through the CLI and
// the console. 10,000 parcels are loaded, then a version with their
// first 10: ingest --json reports it pending (exit 4), the report still
// counts 10,000; pending list shows it with the reason; a reader cannot
// act, a forged form cannot act; the operator clicks approve in Chromium
// and the version becomes current, once; the report counts 10.
func TestPendingTruncatedVersion(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	code, _, errOut := run(t, env, "ingest", "--json", "--target", "admin_units", synthAdmin)
	require.Equal(t, 0, code, errOut)
	dir := t.TempDir()
	full := filepath.Join(dir, "parcels_10k.geojson")
	b, err := os.ReadFile(synthParcels)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(full, b, 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", full)
	require.Equal(t, 0, code, errOut)
	v1 := parseLines(t, out)[0]
	require.Equal(t, "written", v1.Outcome)
	before := reportParcels(t, env)
	require.Equal(t, 10000, before)

	truncatedParcels(t, dir, 10) // the same path: the next version of the source
	code, out, errOut = run(t, env, "ingest", "--json", full)
	require.Equal(t, exitPending, code, out+errOut)
	var v2 struct {
		JobID    string `json:"job_id"`
		Outcome  string `json:"outcome"`
		Reason   string `json:"reason"`
		Features int64  `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &v2))
	require.Equal(t, "pending", v2.Outcome)
	require.EqualValues(t, 10, v2.Features)
	require.Contains(t, v2.Reason, "shrink: features down 99.9% (10000 -> 10")
	require.Equal(t, before, reportParcels(t, env), "a pending version changes no report")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "pending: 1 version held by a guard")

	code, out, errOut = run(t, env, "pending", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, v2.JobID[:12]+"  ", "the table prints 12 characters of an id, as the others do")
	require.NotContains(t, out, v2.JobID)
	require.Contains(t, out, "shrink")
	code, _, errOut = run(t, env, "pending", "approve", v2.JobID)
	require.NotEqual(t, 0, code, "a decision needs a reason")
	require.Contains(t, errOut, "--reason")

	base := startConsole(t, env, "--console-token", "read-token", "--console-operator-token", "op-token")
	post := func(path string, hdr map[string]string, body string) (int, string) {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	basic := func(pw string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pw)) }
	form := url.Values{"reason": {"forged"}}.Encode()
	code, _ = post("/api/pending/"+v2.JobID+"/approve", map[string]string{"Authorization": "Bearer read-token"}, form)
	require.Equal(t, http.StatusUnauthorized, code, "the read-only token cannot act")
	code, _ = post("/pending/"+v2.JobID+"/approve", map[string]string{"Authorization": basic("op-token")}, form)
	require.Equal(t, http.StatusForbidden, code, "a form without the CSRF token (a page elsewhere) cannot act")
	code, _ = post("/pending/"+v2.JobID+"/approve", map[string]string{"Authorization": basic("op-token"), "Origin": "http://evil.example"},
		url.Values{"reason": {"forged"}, "csrf": {"0"}}.Encode())
	require.Equal(t, http.StatusForbidden, code)
	req, _ := http.NewRequest("GET", base+"/pending", nil)
	req.Header.Set("Authorization", "Bearer read-token")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(page), v2.JobID[:12])
	require.NotContains(t, string(page), `name="csrf"`, "a reader gets no forms")

	// The operator, in Chromium: open the pending page, click Approve.
	bin := chromiumPath(t)
	dom := cdpClick(t, bin, base+"/pending", basic("op-token"), "button.approve", "document.getElementById('done')?.textContent")
	require.Equal(t, v2.JobID+" approved", strings.TrimSpace(dom))

	require.Equal(t, 10, reportParcels(t, env), "the approved version is current: the report changed")
	var job struct {
		Job struct{ State string } `json:"job"`
	}
	req, _ = http.NewRequest("GET", base+"/api/jobs/"+v2.JobID, nil)
	req.Header.Set("Authorization", "Bearer read-token")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&job))
	res.Body.Close()
	require.Equal(t, "current", job.Job.State)

	// A second approval (the API) reports the first; a rejection is refused.
	code, body := post("/api/pending/"+v2.JobID+"/approve", map[string]string{"Authorization": "Bearer op-token"}, url.Values{"reason": {"again"}}.Encode())
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"already": true`)
	code, out, errOut = run(t, env, "pending", "reject", v2.JobID, "--reason", "too late")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "was approved by console:alice")
	code, out, errOut = run(t, env, "pending", "show", v2.JobID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "held")
	require.Contains(t, out, "approved")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	// --force: the full file again is a new version; a truncated one forced in.
	code, out, errOut = run(t, env, "ingest", "--json", "--force", full)
	require.NotEqual(t, 0, code, "--force needs --reason")
	require.Contains(t, errOut, "reason")
}

// cdpClick drives headless Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe): it opens url sending auth as the
// Authorization header of every request, clicks the first element that
// matches selector, waits for the page that follows, and returns what
// the JavaScript expression result evaluates to there.
func cdpClick(t *testing.T, bin, pageURL, auth, selector, result string) string {
	t.Helper()
	// runChromium's 4 minutes: Chromium's start at the full suite's load.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	toChrome, chromeIn, err := os.Pipe() // chrome reads fd 3
	require.NoError(t, err)
	chromeOut, fromChrome, err := os.Pipe() // chrome writes fd 4
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	toChrome.Close()
	fromChrome.Close()
	defer func() {
		chromeIn.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		chromeOut.Close()
	}()

	type msg struct {
		ID        int             `json:"id,omitempty"`
		Method    string          `json:"method,omitempty"`
		Params    json.RawMessage `json:"params,omitempty"`
		Result    json.RawMessage `json:"result,omitempty"`
		Error     json.RawMessage `json:"error,omitempty"`
		SessionID string          `json:"sessionId,omitempty"`
	}
	msgs := make(chan msg, 256)
	go func() {
		r := bufio.NewReader(chromeOut)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				close(msgs)
				return
			}
			var m msg
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				msgs <- m
			}
		}
	}()
	id := 0
	var events []msg
	call := func(session, method string, params any) json.RawMessage {
		t.Helper()
		id++
		p, _ := json.Marshal(params)
		b, _ := json.Marshal(msg{ID: id, Method: method, Params: p, SessionID: session})
		_, err := chromeIn.Write(append(b, 0))
		require.NoError(t, err)
		for {
			select {
			case m, ok := <-msgs:
				require.True(t, ok, "chromium closed the pipe: %s", stderr.String())
				if m.ID == id {
					require.Empty(t, m.Error, "%s: %s", method, m.Error)
					return m.Result
				}
				if m.Method != "" {
					events = append(events, m)
				}
			case <-ctx.Done():
				t.Fatalf("%s: no answer: %s", method, stderr.String())
			}
		}
	}
	waitEvent := func(method string) {
		t.Helper()
		for i, e := range events {
			if e.Method == method {
				events = append(events[:i], events[i+1:]...)
				return
			}
		}
		for {
			select {
			case m, ok := <-msgs:
				require.True(t, ok, "chromium closed the pipe: %s", stderr.String())
				if m.Method == method {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s: %s", method, stderr.String())
			}
		}
	}
	var target struct{ TargetID string }
	require.NoError(t, json.Unmarshal(call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target))
	var attached struct{ SessionID string }
	require.NoError(t, json.Unmarshal(call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached))
	s := attached.SessionID
	call(s, "Page.enable", nil)
	call(s, "Network.enable", nil)
	call(s, "Network.setExtraHTTPHeaders", map[string]any{"headers": map[string]string{"Authorization": auth}})
	call(s, "Page.navigate", map[string]any{"url": pageURL})
	waitEvent("Page.loadEventFired")
	eval := func(expr string) string {
		var r struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
			ExceptionDetails json.RawMessage `json:"exceptionDetails"`
		}
		require.NoError(t, json.Unmarshal(call(s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r))
		require.Empty(t, r.ExceptionDetails, "%s", expr)
		return fmt.Sprint(r.Result.Value)
	}
	require.Equal(t, "true", eval(fmt.Sprintf("document.querySelector(%q) !== null", selector)), "no %s on the page", selector)
	eval(fmt.Sprintf("document.querySelector(%q).click()", selector))
	waitEvent("Page.loadEventFired")
	require.Equal(t, "true", eval(result+" !== undefined"), "after the click: %s", eval("document.body.innerText"))
	return eval(result)
}
