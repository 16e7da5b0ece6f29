package core

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// CheckEncoding returns an error if name is not a text encoding that the
// DBF reader knows (the names .cpg files use: "UTF-8", "1252", "CP1251",
// "ISO-8859-1", "Shift_JIS", ...). "" is UTF-8.
func CheckEncoding(name string) error {
	_, _, err := EncodingByName(name)
	return err
}

// EncodingByName maps code page names (as found in .cpg files and
// Options.DefaultEncoding) to encodings. A nil encoding means UTF-8.
func EncodingByName(name string) (encoding.Encoding, string, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "ANSI ")
	n = strings.TrimPrefix(n, "CP")
	switch strings.ReplaceAll(strings.ReplaceAll(n, "-", ""), "_", "") {
	case "", "UTF8", "65001":
		return nil, "UTF-8", nil
	case "ISO88591", "88591", "LATIN1", "28591":
		return charmap.ISO8859_1, "ISO-8859-1", nil
	case "1252", "WINDOWS1252":
		return charmap.Windows1252, "windows-1252", nil
	case "437", "IBM437":
		return charmap.CodePage437, "IBM437", nil
	case "850", "IBM850":
		return charmap.CodePage850, "IBM850", nil
	case "866", "IBM866":
		return charmap.CodePage866, "IBM866", nil
	case "1250", "WINDOWS1250":
		return charmap.Windows1250, "windows-1250", nil
	case "1251", "WINDOWS1251":
		return charmap.Windows1251, "windows-1251", nil
	case "932", "SJIS", "SHIFTJIS":
		return japanese.ShiftJIS, "Shift_JIS", nil
	case "936", "GBK", "GB2312":
		return simplifiedchinese.GBK, "GBK", nil
	case "949", "EUCKR":
		return korean.EUCKR, "EUC-KR", nil
	case "950", "BIG5":
		return traditionalchinese.Big5, "Big5", nil
	}
	if strings.HasPrefix(n, "8859") { // "8859_15" and the like
		name = "iso-8859-" + strings.TrimLeft(n[4:], "-_")
	}
	e, err := htmlindex.Get(name)
	if err != nil {
		return nil, "", fmt.Errorf("unknown code page %q", strings.TrimSpace(name))
	}
	canon, _ := htmlindex.Name(e)
	return e, canon, nil
}

// AppendJSONString appends s (valid UTF-8) as a JSON string, escaping only
// what JSON requires.
func AppendJSONString[T string | []byte](out []byte, s T) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		// The run of bytes that need no escape goes in one append.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' {
			j++
		}
		out = append(out, s[i:j]...)
		if j == len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		default: // c < 0x20
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i = j + 1
	}
	return append(out, '"')
}

// LayerName is the file name without its extension.
func LayerName(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func QuoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
