package inspect_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"email.send", 0, "email.send"},
		{"email.send", 10, "email.send"},
		{"email.send", 6, "email…"},
		{"\x1b]0;pwned\x07", 0, `\x1b]0;pwned\x07`},
		{"\x1b[2J\x1b[31mred", 0, `\x1b[2J\x1b[31mred`},
		{"ok\rFORGED ROW", 0, `ok\rFORGED ROW`},
		{"a\tb\nc\x00d\x7fe", 0, `a\tb\nc\x00d\x7fe`},
		{"csi\u009b2J nel\u0085", 0, `csi\u009b2J nel\u0085`},
		{"rtl\u202eevil\u2066", 0, `rtl\u202eevil\u2066`},
		{"bad\xff\xfeutf8", 0, `bad\xff\xfeutf8`},
		{"naïve ≥ 日本 C:\\path", 0, "naïve ≥ 日本 C:\\path"},
		{"\x1b\x1b\x1b", 9, `\x1b\x1b…`}, // cut at an escape's edge
		{"\x1b\x1b", 8, `\x1b\x1b`},
		{strings.Repeat("K", 20000), 40, strings.Repeat("K", 39) + "…"},
		{"", 5, ""},
	} {
		require.Equal(t, c.want, inspect.Printable(c.in, c.width), "%q width %d", c.in, c.width)
	}
}

func TestPrintableLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, "panic: boom\ngoroutine 1\n\\tmain.go:3", inspect.PrintableLines("panic: boom\ngoroutine 1\n\tmain.go:3", 0))
	require.Equal(t, "ok\\rFORGED\n\\x1b[2Jx", inspect.PrintableLines("ok\rFORGED\n\x1b[2Jx", 0))
	require.Equal(t, "ab\ncd…", inspect.PrintableLines("ab\ncdef", 6))
	require.Equal(t, "ab\ncd", inspect.PrintableLines("ab\ncd", 5))
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "email.send", "\x1b]0;x\x07", "a\rb", "\u009b", "\xff", strings.Repeat("é", 50)} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, s string, width int) {
		width %= 200
		out := inspect.Printable(s, width)
		require.True(t, utf8.ValidString(out), "%q", out)
		for _, r := range out {
			require.False(t, r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069), "%q in %q", r, out)
		}
		if width > 0 {
			require.LessOrEqual(t, utf8.RuneCountInString(out), width, "%q", out)
		}
		if width <= 0 && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		}) {
			require.Equal(t, s, out)
		}
	})
}
