package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The figures sections of benchmarks.md sit between "<!-- NAME figures: begin -->" and
// "<!-- NAME figures: end -->": tables whose values `make bench-doc` writes from one run of `make
// bench` (internal/cmd/bench/doc.go), and prose that may quote only what its section's tables
// hold.
var sectionBegin = regexp.MustCompile(`(?m)^<!-- ([a-z0-9_-]+) figures: begin -->$`)

var (
	figureKey = regexp.MustCompile("`([a-z][a-z0-9_.]*)`")
	numberTok = regexp.MustCompile(`^\d{1,3}(,\d{3})+(\.\d+)?$|^\d+(\.\d+)?$`)
)

// numbers returns the numbers written in text: tokens that are a number once surrounding
// punctuation is trimmed ("15×", "(0.48)"). Digits inside words (arm64, md5) are not numbers.
func numbers(text string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '|' || r == '/' || r == '–' || r == '`' || r == '*'
	}) {
		tok = strings.Trim(tok, ".,;:()×≤≥%~")
		tok = strings.TrimSuffix(tok, "×")
		if numberTok.MatchString(tok) {
			out = append(out, strings.ReplaceAll(tok, ",", ""))
		}
	}
	return out
}

// TestBenchmarksFiguresSections checks every figures section of benchmarks.md: every figure its
// tables name is one the bench prints, and every number in its prose is one its tables hold.
func TestBenchmarksFiguresSections(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	code := benchCode(t)
	sections := sectionBegin.FindAllStringSubmatchIndex(text, -1)
	names := map[string]bool{}
	for _, m := range sections {
		name := text[m[2]:m[3]]
		names[name] = true
		end := strings.Index(text[m[1]:], "<!-- "+name+" figures: end -->")
		if end < 0 {
			t.Errorf("benchmarks.md: the %s figures section has no end marker", name)
			continue
		}
		checkSection(t, name, text[m[1]:m[1]+end], code)
	}
	for _, want := range []string{"run", "invocation", "e2e"} {
		if !names[want] {
			t.Errorf("benchmarks.md has no %s figures section", want)
		}
	}
}

// benchCode is the source of the bench program, where every figure's key is written.
func benchCode(t *testing.T) string {
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
	return code.String()
}

// printed reports whether the bench's source writes key: whole, as a quoted string; as a prefix
// the code completes at run time (e2e_calls_per_job_<API>: the key's last part is not in the
// source); or as a prefix completed by one of the source's own quoted names
// (cost_added_usd_per_million_ + "list_jobs").
func printed(code, key string) bool {
	if strings.Contains(code, `"`+key+`"`) || strings.Contains(code, `"`+key[:strings.LastIndexByte(key, '_')+1]) {
		return true
	}
	for i := strings.IndexByte(key, '_'); i >= 0; i = nextUnderscore(key, i) {
		if strings.Contains(code, `"`+key[:i+1]+`"`) && strings.Contains(code, `"`+key[i+1:]+`"`) {
			return true
		}
	}
	return false
}

func nextUnderscore(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '_')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func checkSection(t *testing.T, name, section, code string) {
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
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range figureKey.FindAllStringSubmatch(cells[1], -1) {
			keys++
			if !printed(code, strings.TrimSuffix(m[1], "_spread")) {
				t.Errorf("benchmarks.md (%s) names %s, which internal/cmd/bench does not print", name, m[1])
			}
		}
	}
	if keys < 3 {
		t.Errorf("the %s figures section's tables name %d figures", name, keys)
	}
	for _, n := range numbers(prose.String()) {
		if !inTable[n] {
			t.Errorf("benchmarks.md %s prose quotes %s, which its tables do not hold", name, n)
		}
	}
}

// benchKeyInProse is a figure's key as the other pages quote it: lower case with underscores,
// in backticks; `*` stands for any part of it (`ratelimit_*_per_job`).
var benchKeyInProse = regexp.MustCompile("`([a-z][a-z0-9*]*(?:_[a-z0-9*]+)+)`")

// TestPagesNameFiguresTheBenchPrints checks the other pages' claims about `make bench`: every key
// a paragraph that mentions `make bench` quotes is one the bench writes (as a quoted string in its
// source, a `*` matching any part of it).
func TestPagesNameFiguresTheBenchPrints(t *testing.T) {
	t.Parallel()
	code := benchCode(t)
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		if page == "benchmarks.md" {
			continue // its figures sections have their own test
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, para := range strings.Split(string(b), "\n\n") {
			if !strings.Contains(para, "make bench") {
				continue
			}
			for _, m := range benchKeyInProse.FindAllStringSubmatch(para, -1) {
				key := m[1]
				// A `*` stands for any part, the empty one included: a key the code completes at
				// run time ("scale_hottest_wcu_per_job_" + a variant's name).
				pattern := `"` + strings.ReplaceAll(regexp.QuoteMeta(key), `\*`, `[a-z0-9_]*`) + `"`
				if !regexp.MustCompile(pattern).MatchString(code) {
					t.Errorf("%s quotes `%s` as a figure of make bench, which internal/cmd/bench does not write", page, key)
				}
				checked++
			}
		}
	}
	if checked < 3 {
		t.Fatalf("found %d quoted figures beside `make bench` in the pages; expected the rate limit's and the CLI's", checked)
	}
}
