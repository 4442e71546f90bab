package inspect

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s made safe to write to a terminal, at most width runes wide (width <= 0:
// no cap). Dead jobs carry data from whoever could send a message — ids, kinds, errors, bodies —
// and a control character in them would reach the operator's terminal: an escape sequence can
// retitle the window, clear the screen or recolour it, a carriage return can forge a table row.
// So every C0 control (U+0000–U+001F), DEL (U+007F), C1 control (U+0080–U+009F) and Unicode
// bidirectional override (U+202A–U+202E, U+2066–U+2069) becomes a visible escape: \t, \n and \r
// as such, other bytes below U+0080 as \x1b, the rest as \u009b. A byte that is not UTF-8
// becomes \xff. Everything else is kept, backslashes included.
//
// A value longer than width is cut at an escape's edge and ends in "…". Human-readable output of
// the jobkit CLI goes through Printable; its --json output carries the full values.
func Printable(s string, width int) string {
	if width > 0 && len(s) <= width && plainASCII(s) {
		return s
	}
	var b strings.Builder
	n := 0 // runes written
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := escapeRune(s[i:i+size], r, size)
		w := utf8.RuneCountInString(piece)
		if width > 0 && n+w > width-1 && !fits(s[i+size:], n+w, width) {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		n += w
		i += size
	}
	return b.String()
}

// PrintableLines is Printable for text of several lines (an error with its stack, a body): each
// line is made safe on its own, so its newlines stay line breaks while a carriage return or an
// escape sequence shows as \r or \x1b, and the whole is cut at width runes.
func PrintableLines(s string, width int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l, 0)
	}
	out := strings.Join(lines, "\n")
	if r := []rune(out); width > 0 && len(r) > width {
		out = string(r[:width-1]) + "…"
	}
	return out
}

// fits reports whether the rest of s, once escaped, still fits in width after n runes.
func fits(rest string, n, width int) bool {
	if n > width {
		return false
	}
	for i := 0; i < len(rest); {
		r, size := utf8.DecodeRuneInString(rest[i:])
		n += utf8.RuneCountInString(escapeRune(rest[i:i+size], r, size))
		if n > width {
			return false
		}
		i += size
	}
	return true
}

// escapeRune returns the text that shows the rune r (the bytes raw) safely.
func escapeRune(raw string, r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf(`\x%02x`, raw[0])
	case r == '\t':
		return `\t`
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r)
	case (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		return fmt.Sprintf(`\u%04x`, r)
	}
	return raw
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
