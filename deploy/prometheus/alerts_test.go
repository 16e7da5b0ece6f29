// Package alerts holds only the test of the example alert rules in
// alerts.yml.
package alerts

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// exported returns geoingest's metric families as /metrics serves them:
// name -> label name -> label values seen.
func exported(t *testing.T) map[string]map[string]map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := ingest.NewMetrics(reg)
	// Touch every counter so that unlabelled families appear too.
	m.EventsFiltered.WithLabelValues("test_event")
	m.JobDuration.Observe(1)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]map[string]map[string]bool{}
	for _, mf := range mfs {
		names := []string{mf.GetName()}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			names = append(names, mf.GetName()+"_bucket", mf.GetName()+"_sum", mf.GetName()+"_count")
		}
		labels := map[string]map[string]bool{}
		for _, metric := range mf.GetMetric() {
			for _, lp := range metric.GetLabel() {
				if labels[lp.GetName()] == nil {
					labels[lp.GetName()] = map[string]bool{}
				}
				labels[lp.GetName()][lp.GetValue()] = true
			}
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			labels["le"] = nil // any value
		}
		for _, n := range names {
			out[n] = labels
		}
	}
	return out
}

var (
	metricRE   = regexp.MustCompile(`\bgeoingest_[a-z_]+`)
	selectorRE = regexp.MustCompile(`(geoingest_[a-z_]+)\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`^\s*([a-z_]+)\s*(=~|!=|!~|=)\s*"([^"]*)"\s*$`)
)

// TestAlertRules parses alerts.yml and checks every rule: named, with an
// expression whose brackets balance, a severity and a summary; every
// metric it names is one geoingest exports, and every label matcher names
// a label and (for =) a value that the metric has. The alerts the design
// asks for are present. When promtool is on PATH (or $PROMTOOL names it;
// Debian's package "prometheus" ships it), `promtool check rules` and the
// rule unit tests in alerts_rules_test.yml must pass too.
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile("alerts.yml")
	require.NoError(t, err)
	var rf ruleFile
	require.NoError(t, yaml.Unmarshal(b, &rf))
	require.NotEmpty(t, rf.Groups)
	metrics := exported(t)
	names := map[string]bool{}
	usedMetrics := map[string]bool{}
	for _, g := range rf.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: a rule without a name", g.Name)
			require.False(t, names[r.Alert], "alert %s defined twice", r.Alert)
			names[r.Alert] = true
			require.NotEmpty(t, strings.TrimSpace(r.Expr), r.Alert)
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			requireBalanced(t, r.Alert, r.Expr)
			for _, name := range metricRE.FindAllString(r.Expr, -1) {
				_, ok := metrics[name]
				require.True(t, ok, "alert %s: metric %s is not exported by ingest.NewMetrics", r.Alert, name)
				usedMetrics[name] = true
			}
			for _, sel := range selectorRE.FindAllStringSubmatch(r.Expr, -1) {
				labels := metrics[sel[1]]
				for _, part := range strings.Split(sel[2], ",") {
					mm := matcherRE.FindStringSubmatch(part)
					require.NotNil(t, mm, "alert %s: cannot read matcher %q", r.Alert, part)
					values, ok := labels[mm[1]]
					require.True(t, ok, "alert %s: %s has no label %s", r.Alert, sel[1], mm[1])
					if mm[2] == "=" && values != nil {
						require.True(t, values[mm[3]], "alert %s: %s{%s} never has the value %q", r.Alert, sel[1], mm[1], mm[3])
					}
				}
			}
		}
	}
	for _, want := range []string{"GeoingestRejectionPathsSilent", "GeoingestClaimGateNotStoppingDuplicates",
		"GeoingestLeaseStolen", "GeoingestPayloadMismatch", "GeoingestMessagesDeadLettered", "GeoingestPermanentJobFailures"} {
		require.True(t, names[want], "alert %s missing", want)
	}
	var used []string
	for n := range usedMetrics {
		used = append(used, n)
	}
	sort.Strings(used)
	t.Logf("rules use %v", used)

	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found in CI: scripts/setup.sh --test installs it (Debian package prometheus)")
		}
		t.Log("promtool not found (set PROMTOOL or put it on PATH): checked structure and metric names only")
		return
	}
	out, err := exec.Command(promtool, "check", "rules", "alerts.yml").CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)
	t.Logf("promtool: %s", strings.TrimSpace(string(out)))
	// alerts_rules_test.yml feeds series to the rules: the silence alert
	// fires when jobs flow and nothing is rejected, and stays quiet when a
	// duplicate is stopped; the claim-gate and payload alerts fire.
	out, err = exec.Command(promtool, "test", "rules", "alerts_rules_test.yml").CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
}

// requireBalanced checks that (), [] and {} nest properly outside quoted
// strings.
func requireBalanced(t *testing.T, alert, expr string) {
	t.Helper()
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, c := range expr {
		switch {
		case c == '"':
			inString = !inString
		case inString:
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case pairs[c] != 0:
			require.True(t, len(stack) > 0 && stack[len(stack)-1] == pairs[c], "alert %s: unbalanced %q in %s", alert, c, expr)
			stack = stack[:len(stack)-1]
		}
	}
	require.Empty(t, stack, "alert %s: unclosed brackets in %s", alert, expr)
	require.False(t, inString, "alert %s: unterminated string", alert)
}
