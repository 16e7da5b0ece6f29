package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The user documentation's command examples must run: every `geoingest
// COMMAND [SUB] --flag ...` in README.md and docs/*.md (in sh, bash, shell
// and console code blocks, and in inline code) names a command the binary
// has, and only flags that command (or its subcommand) has, as the built
// binary's -h prints them. Every GEOINGEST_ environment variable the docs
// name is read somewhere in the code.

func TestDocsCommandExamplesExist(t *testing.T) {
	t.Parallel()
	h := newHelpCache(t)
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append([]string{"../../README.md"}, files...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimPrefix(f, "../../")
		checked := 0
		for _, sn := range docSnippets(string(data)) {
			for _, inv := range invocations(sn.text) {
				checked++
				if err := h.check(inv); err != nil {
					t.Errorf("%s:%d: `%s`: %v", name, sn.line, strings.Join(append([]string{"geoingest"}, inv...), " "), err)
				}
			}
		}
		if name == "README.md" {
			require.GreaterOrEqual(t, checked, 10, "README.md: too few geoingest command examples found: is the extraction broken?")
		}
	}
}

// TestDocsCommandCheckerFails: the checker itself finds a flag, a
// subcommand's flag and a command that do not exist.
func TestDocsCommandCheckerFails(t *testing.T) {
	t.Parallel()
	h := newHelpCache(t)
	doc := "Run `geoingest serve --inbox /srv/uploads` or:\n\n```sh\n" +
		"geoingest serve --queue-url URL \\\n  --no-such-flag 3   # a comment --also-not\n" +
		"geoingest report area --method intersection --workers 2\n" +
		"psql \"$(go run ./cmd/geoingest db url)\" | geoingest frobnicate --x\n" +
		"podman-compose exec -T geoingest geoingest verify --bogus\n```\n"
	var errs []string
	n := 0
	for _, sn := range docSnippets(doc) {
		for _, inv := range invocations(sn.text) {
			n++
			if err := h.check(inv); err != nil {
				errs = append(errs, fmt.Sprintf("%d: %v", sn.line, err))
			}
		}
	}
	require.Equal(t, 6, n, "invocations found")
	require.Len(t, errs, 4, "%q", errs)
	all := strings.Join(errs, "\n")
	for _, want := range []string{"4: no flag --no-such-flag", "6: no flag --workers", "7: no command \"frobnicate\"", "8: no flag --bogus"} {
		require.Contains(t, all, want)
	}
}

func TestDocsEnvironmentVariablesExist(t *testing.T) {
	t.Parallel()
	var code bytes.Buffer
	require.NoError(t, filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".go", ".sh", ".yml", ".yaml":
		default:
			if d.Name() != "Dockerfile" && d.Name() != "Containerfile" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err == nil {
			code.Write(b)
		}
		return nil
	}))
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	envRe := regexp.MustCompile(`GEOINGEST_[A-Z0-9_]*[A-Z0-9]`)
	for _, f := range append([]string{"../../README.md"}, files...) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, v := range envRe.FindAllString(string(data), -1) {
			if !bytes.Contains(code.Bytes(), []byte(v)) {
				t.Errorf("%s names %s, which no code reads", strings.TrimPrefix(f, "../../"), v)
			}
		}
	}
}

// snippet is shell text from a document and the line it starts on.
type snippet struct {
	text string
	line int
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// docSnippets returns the command lines of a Markdown document: each line
// of a sh, bash, shell or console code block (a line ending in \ joined
// to the next; console lines only after a "$ " prompt), and each inline
// code span outside code blocks (which may run over a line break).
func docSnippets(doc string) []snippet {
	var out []snippet
	lines := strings.Split(doc, "\n")
	prose := make([]string, len(lines)) // the lines outside code blocks; others blank
	inBlock, shell, console := false, false, false
	pending, pendingLine := "", 0
	for i, l := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock = true
			lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			shell = lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
			console = lang == "console"
			continue
		}
		if !inBlock {
			prose[i] = l
			continue
		}
		if !shell {
			continue
		}
		if pending == "" {
			pendingLine = n
			if console {
				rest, ok := strings.CutPrefix(trimmed, "$ ")
				if !ok {
					continue
				}
				l = rest
			}
		}
		if strings.HasSuffix(l, "\\") {
			pending += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, snippet{pending + l, pendingLine})
		pending = ""
	}
	text := strings.Join(prose, "\n")
	for _, m := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
		span := strings.ReplaceAll(text[m[2]:m[3]], "\n", " ")
		out = append(out, snippet{span, 1 + strings.Count(text[:m[0]], "\n")})
	}
	return out
}

var bareWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// invocations returns the argument lists of the geoingest commands in a
// shell line: after "geoingest" (or "go run ./cmd/geoingest"), a bare
// word (the command) and the words up to the end of that simple command.
// Command substitutions $(...) are looked into too.
func invocations(line string) [][]string {
	var out [][]string
	subst := regexp.MustCompile(`\$\(([^()]*)\)`)
	for _, m := range subst.FindAllStringSubmatch(line, -1) {
		out = append(out, invocations(m[1])...)
	}
	toks := shellWords(subst.ReplaceAllString(line, "X"))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t != "geoingest" && t != "./geoingest" && !(t == "./cmd/geoingest" && i > 0 && toks[i-1] == "run") {
			continue
		}
		if i+1 >= len(toks) || !bareWord.MatchString(toks[i+1]) || toks[i+1] == "geoingest" {
			continue
		}
		j := i + 1
		for j < len(toks) && !isShellOp(toks[j]) {
			j++
		}
		out = append(out, toks[i+1:j])
		i = j
	}
	return out
}

func isShellOp(t string) bool {
	switch t {
	case "|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "2>&1", "(", ")":
		return true
	}
	return false
}

// shellWords splits a line as a POSIX shell would into words and
// operators (quotes removed, a # comment dropped); good enough for
// documentation examples.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			out = append(out, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return out
		case strings.IndexByte("|&;<>()", c) >= 0:
			flush()
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c || (c == '>' && s[i+1] == '&')) {
				op += string(s[i+1])
				i++
			}
			out = append(out, op)
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// helpCache runs the built binary's -h, once per command or subcommand,
// in an environment where nothing could reach a database.
type helpCache struct {
	t        *testing.T
	env      []string
	mu       sync.Mutex
	commands map[string]bool
	help     map[string]helpResult
}

type helpResult struct {
	ok    bool
	usage string          // the words of the Usage line
	flags map[string]bool // flag names
}

func newHelpCache(t *testing.T) *helpCache {
	home := t.TempDir()
	h := &helpCache{t: t, help: map[string]helpResult{}, commands: map[string]bool{},
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GEOINGEST_HOME=" + home,
			"DATABASE_URL=host=" + filepath.Join(home, "no-such-socket-dir") + " connect_timeout=1"}}
	out, _ := h.runHelp("help")
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && strings.HasPrefix(sc.Text(), "  ") && bareWord.MatchString(f[0]) {
			h.commands[f[0]] = true
		}
	}
	require.NotEmpty(t, h.commands, "geoingest help lists no commands:\n%s", out)
	return h
}

func (h *helpCache) runHelp(args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

var flagLine = regexp.MustCompile(`(?m)^\s+-([A-Za-z0-9][-A-Za-z0-9_.]*)`)

func (h *helpCache) get(args ...string) helpResult {
	key := strings.Join(args, " ")
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.help[key]; ok {
		return r
	}
	out, ok := h.runHelp(append(args, "-h")...)
	r := helpResult{ok: ok, flags: map[string]bool{"h": true, "help": true}}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Usage:") {
			r.usage = " " + strings.Join(strings.FieldsFunc(l, func(c rune) bool {
				return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
			}), " ") + " "
			break
		}
	}
	for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
		r.flags[m[1]] = true
	}
	h.help[key] = r
	return r
}

// check checks one invocation (the command and its arguments).
func (h *helpCache) check(inv []string) error {
	cmd := inv[0]
	if !h.commands[cmd] {
		return fmt.Errorf("no command %q (geoingest help lists the commands)", cmd)
	}
	r := h.get(cmd)
	if !r.ok {
		return fmt.Errorf("geoingest %s -h fails", cmd)
	}
	args := inv[1:]
	if len(args) > 0 && bareWord.MatchString(args[0]) && strings.Contains(r.usage, " "+args[0]+" ") {
		// A subcommand that the command's usage names: its own flags.
		if sub := h.get(cmd, args[0]); sub.ok {
			r, args = sub, args[1:]
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9') {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !r.flags[name] {
			return fmt.Errorf("no flag --%s", name)
		}
	}
	return nil
}

// TestDocsLinksStayInTheRepository: every link of README.md and docs/*.md
// is relative, names a file of the repository, and, with a #fragment, a
// heading of that file (GitHub's anchors).
func TestDocsLinksStayInTheRepository(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range append([]string{"../../README.md"}, files...) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimPrefix(f, "../../")
		for _, m := range link.FindAllStringSubmatch(stripCodeBlocks(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s links outside the repository: %s", name, target)
				continue
			}
			p, frag, _ := strings.Cut(target, "#")
			dest := f
			if p != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(p))
			}
			abs, err := filepath.Abs(dest)
			require.NoError(t, err)
			if !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s links outside the repository: %s", name, target)
				continue
			}
			b, err := os.ReadFile(dest)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", name, target)
				continue
			}
			if frag != "" && !headingAnchors(string(b))[frag] {
				t.Errorf("%s links to %s: no heading with that anchor", name, target)
			}
		}
	}
}

// stripCodeBlocks blanks the fenced code blocks of a Markdown document.
func stripCodeBlocks(doc string) string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// headingAnchors returns the anchors GitHub gives a document's headings:
// lower case, punctuation but hyphens and spaces dropped, spaces as
// hyphens.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(stripCodeBlocks(doc), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
