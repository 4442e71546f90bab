package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The invocation figures of benchmarks.md sit between these markers: a table regenerated from
// one run of `go run ./internal/cmd/bench -only invocation` (or `make bench`), and prose that may
// quote only what the table holds.
const (
	invocationBegin = "<!-- invocation figures: begin -->"
	invocationEnd   = "<!-- invocation figures: end -->"
)

var (
	figureKey = regexp.MustCompile("^\\| `(invocation_[a-z_]+)`")
	numberTok = regexp.MustCompile(`^\d{1,3}(,\d{3})+(\.\d+)?$|^\d+(\.\d+)?$`)
)

// numbers returns the numbers written in text: tokens that are a number once surrounding
// punctuation is trimmed ("15×", "(0.48)"). Digits inside words (arm64, md5) are not numbers.
func numbers(text string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '|' || r == '/' || r == '–' || r == '`' || r == '*'
	}) {
		tok = strings.Trim(tok, ".,;:()×≤≥%~")
		tok = strings.TrimSuffix(tok, "×")
		if numberTok.MatchString(tok) {
			out = append(out, strings.ReplaceAll(tok, ",", ""))
		}
	}
	return out
}

// TestBenchmarksInvocationSection checks the invocation section of benchmarks.md: every figure
// in its table is one the bench prints, and every number in its prose is one its table holds.
func TestBenchmarksInvocationSection(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	b, e := strings.Index(text, invocationBegin), strings.Index(text, invocationEnd)
	if b < 0 || e < b {
		t.Fatalf("benchmarks.md: no section between %q and %q", invocationBegin, invocationEnd)
	}
	section := text[b+len(invocationBegin) : e]

	sources, err := filepath.Glob(filepath.Join("..", "internal", "cmd", "bench", "*.go"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("bench sources: %v", err)
	}
	var code strings.Builder
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(src)
	}

	inTable := map[string]bool{}
	var prose strings.Builder
	keys := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			prose.WriteString(line + "\n")
			continue
		}
		for _, n := range numbers(line) {
			inTable[n] = true
		}
		m := figureKey.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		keys++
		key := strings.TrimSuffix(m[1], "_spread")
		if !strings.Contains(code.String(), `"`+key+`"`) {
			t.Errorf("benchmarks.md names %s, which internal/cmd/bench does not print", m[1])
		}
	}
	if keys < 6 {
		t.Errorf("the invocation table names %d figures, want the 6 of the issue at least", keys)
	}
	for _, n := range numbers(prose.String()) {
		if !inTable[n] {
			t.Errorf("benchmarks.md invocation prose quotes %s, which its table does not hold", n)
		}
	}
}
