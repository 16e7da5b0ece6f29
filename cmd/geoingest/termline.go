package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// termLine is one terminal line redrawn in place: each draw returns to
// the start of the line and blanks what a longer previous text left.
// Not safe for concurrent use.
type termLine struct {
	w       io.Writer
	lastLen int
}

func (l *termLine) draw(text string) {
	pad := ""
	if n := l.lastLen - len(text); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	l.lastLen = len(text)
	fmt.Fprint(l.w, "\r"+text+pad)
}

// clear blanks the line and leaves the cursor at its start.
func (l *termLine) clear() {
	if l.lastLen == 0 {
		return
	}
	fmt.Fprint(l.w, "\r"+strings.Repeat(" ", l.lastLen)+"\r")
	l.lastLen = 0
}

// isTerminal reports whether w is a terminal (progress is drawn only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
